// Spec transformation 1: a streamed chat request always gets a usage frame before [DONE], even when
// the provider ignores include_usage — then the gateway writes its estimate, marked as such, and bills
// exactly that estimate.
import t from 'tap';
import { startStack, sseEvents } from '../../helpers/stack.ts';

t.test('a usage frame precedes [DONE] even when the provider sends none', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const body = {
    model: 'acme/chat-small',
    stream: true,
    provider: { only: ['alpha'] },
    messages: [{ role: 'user', content: 'hi' }],
    sim: { noUsageInStream: true, chunks: 4 },
  };
  const res = await s.post('/v1/chat/completions', body, { key });
  t.equal(res.status, 200);
  const events = await sseEvents(res);
  t.equal(events.at(-1), 'data: [DONE]');
  const usageEvents = events.filter((e) => /"usage":\{/.test(e));
  t.equal(usageEvents.length, 1, 'exactly one usage frame');
  const frame = JSON.parse((usageEvents[0] as string).slice('data: '.length)) as {
    model: string;
    choices: unknown[];
    usage: Record<string, unknown>;
    id: unknown;
  };
  t.equal(events.at(-2), usageEvents[0], 'it is the frame right before [DONE]');
  t.equal(frame.model, 'acme/chat-small');
  t.same(frame.choices, []);
  t.equal(frame.usage['estimated'], true);
  t.ok(typeof frame.id === 'string' && frame.id.startsWith('chatcmpl-'), 'reuses the stream id');
  const promptBytes = Buffer.byteLength(JSON.stringify(body));
  t.equal(frame.usage['prompt_tokens'], Math.ceil(promptBytes / 4));
  const contentChunks = events.filter(
    (e) => e.startsWith('data: {') && !/"usage":\{/.test(e) && !/"role":"assistant"/.test(e),
  );
  t.equal(frame.usage['completion_tokens'], contentChunks.length);

  // Billing agrees with the frame: $1/M prompt, $2/M completion on alpha.
  s.store.requestLog.flush();
  const row = s.store.requestLog.query({}).at(-1);
  t.equal(row?.prompt_tokens, frame.usage['prompt_tokens']);
  t.equal(row?.completion_tokens, frame.usage['completion_tokens']);
});

t.test('a provider usage frame is passed through, nothing added', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const res = await s.post(
    '/v1/chat/completions',
    {
      model: 'acme/chat-small',
      stream: true,
      provider: { only: ['alpha'] },
      messages: [{ role: 'user', content: 'hi' }],
    },
    { key },
  );
  const events = await sseEvents(res);
  const usageEvents = events.filter((e) => /"usage":\{/.test(e));
  t.equal(usageEvents.length, 1);
  t.notMatch(usageEvents[0], /estimated/);
});
