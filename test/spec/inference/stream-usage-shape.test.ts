// Chat Completions streams shaped as the client asked (docs/api.md, Chat Completions events): the
// gateway asks the provider for usage on every stream (so a usage frame always precedes [DONE]),
// but a client that did not ask for it (no stream_options, or include_usage false) gets its chunks
// as the provider sends them without include_usage — no `"usage": null` in any chunk, no usage key
// at all but on the final frame. A client that asked gets the provider's chunks unchanged.
import t, { type Test } from 'tap';
import { startStack, sseEvents } from '../../helpers/stack.ts';
import { simBody } from '../../helpers/inference.ts';

const MESSAGES = [{ role: 'user', content: 'hi' }];

async function chunks(
  t: Test,
  streamOptions: unknown,
): Promise<{ events: string[]; forwarded: Record<string, unknown> }> {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const body = {
    model: 'acme/chat-small',
    stream: true,
    provider: { only: ['alpha'] },
    messages: MESSAGES,
    ...(streamOptions === undefined ? {} : { stream_options: streamOptions }),
    sim: { chunks: 4 },
  };
  const res = await s.post('/v1/chat/completions', body, { key });
  t.equal(res.status, 200);
  return { events: await sseEvents(res), forwarded: simBody(s) };
}

for (const [label, streamOptions] of [
  ['no stream_options', undefined],
  ['include_usage false', { include_usage: false }],
  ['stream_options without include_usage', {}],
] as const) {
  t.test(`${label}: no chunk carries a usage key but the final usage frame`, async (t) => {
    const { events, forwarded } = await chunks(t, streamOptions);
    t.match(forwarded, { stream_options: { include_usage: true } }, 'the provider was asked for usage');
    t.equal(events.at(-1), 'data: [DONE]');
    const data = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)) as Record<string, unknown>);
    t.ok(data.length >= 6, `${data.length} chunks`);
    const final = data.at(-1) as Record<string, unknown>;
    t.same(final['choices'], [], 'the final frame has no choices');
    t.match(
      final['usage'],
      { prompt_tokens: Number, completion_tokens: Number, total_tokens: Number },
      'and the usage, right before [DONE]',
    );
    for (const [i, chunk] of data.slice(0, -1).entries()) t.notOk('usage' in chunk, `chunk ${i} has no usage key`);
    t.notMatch(events.join('\n'), /"usage":null/);
  });
}

t.test('include_usage true: the provider’s chunks as sent, "usage": null included', async (t) => {
  const { events } = await chunks(t, { include_usage: true });
  const data = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)) as Record<string, unknown>);
  for (const chunk of data.slice(0, -1)) t.equal(chunk['usage'], null, 'usage: null, as the provider sent it');
  t.match(data.at(-1)?.['usage'], { total_tokens: Number });
});
