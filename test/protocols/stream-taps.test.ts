// The protocol stream taps behind the SSE splitter, at every chunk boundary: the same events, kinds,
// rewritten bytes, usage and reported model whatever the split; the model is added where a provider
// omitted it; after the commit point a frame cut midway is "malformed" on every protocol (it must end
// the stream with an error event, not reach the client), and error events are recognised.
import t, { type Test } from 'tap';
import { chatCompletions } from '../../src/protocols/chat-completions.ts';
import { images } from '../../src/protocols/images.ts';
import { messages } from '../../src/protocols/messages.ts';
import { responses } from '../../src/protocols/responses.ts';
import type { EventKind, ProtocolModule } from '../../src/protocols/types.ts';
import { SseSplitter } from '../../src/stream/sse-splitter.ts';
import type { Usage } from '../../src/billing/usage.ts';

const SLUG = Buffer.from(JSON.stringify('vendor/slug'));

interface TapRun {
  kinds: EventKind[];
  out: string;
  usage: Usage | null;
  upstreamModel: string | null;
  completed: boolean;
  contentEvents: number;
}

/** Feeds `stream` cut at `cuts` through a fresh splitter and tap. */
function run(p: ProtocolModule, stream: Buffer, cuts: number[]): TapRun {
  const splitter = new SseSplitter();
  const tap = p.tap(SLUG);
  const kinds: EventKind[] = [];
  const out: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, stream.length]) {
    for (const ev of splitter.push(stream.subarray(from, cut))) {
      const r = tap.onEvent(ev);
      kinds.push(r.kind);
      out.push(r.out);
    }
    from = cut;
  }
  return {
    kinds,
    out: Buffer.concat(out).toString('utf8'),
    usage: tap.usage(),
    upstreamModel: tap.upstreamModel,
    completed: tap.completed,
    contentEvents: tap.contentEvents,
  };
}

function everySplit(t: Test, p: ProtocolModule, stream: Buffer, check: (r: TapRun) => void): void {
  const whole = run(p, stream, []);
  check(whole);
  let bad = 0;
  for (let a = 0; a <= stream.length && bad === 0; a++) {
    for (const b of [a, Math.min(stream.length, a + 1), Math.min(stream.length, a + 13)]) {
      const r = run(p, stream, [a, b]);
      if (JSON.stringify(r) !== JSON.stringify(whole)) {
        t.same(r, whole, `cut at ${a}/${b}`);
        bad++;
        break;
      }
    }
  }
  const bytewise = run(
    p,
    stream,
    Array.from({ length: stream.length }, (_, i) => i),
  );
  t.same(bytewise, whole, 'byte by byte');
  if (bad === 0) t.pass(`every split of ${stream.length} bytes agrees`);
}

const CHAT = [
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-1","choices":[{"index":0,"delta":{"content":"é✓ \\"model\\":\\"x\\""},"finish_reason":null}]}\n\n',
  ': keep-alive\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\r\n\r\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"completion_tokens_details":{"reasoning_tokens":3}}}\n\n',
  'data: [DONE]\n\n',
].join('');

const MESSAGES = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"up-2","content":[],"usage":{"input_tokens":10,"cache_read_input_tokens":4,"output_tokens":1}}}\n\n',
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
  'event: ping\ndata: {"type": "ping"}\n\n',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"é✓"}}\n\n',
  'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}\n\n',
  'event: message_stop\ndata: {"type":"message_stop"}\n\n',
].join('');

const RESPONSES = [
  'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"r","status":"in_progress","model":"up-3","output":[],"usage":null}}\n\n',
  'event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message","content":[]}}\n\n',
  'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":2,"delta":"é✓"}\n\n',
  'event: response.output_text.done\ndata: {"type":"response.output_text.done","sequence_number":3,"text":"é✓"}\n\n',
  'event: response.completed\ndata: {"type":"response.completed","sequence_number":4,"response":{"id":"r","status":"completed","model":"up-3","output":[],"usage":{"input_tokens":6,"output_tokens":8,"output_tokens_details":{"reasoning_tokens":2}}}}\n\n',
].join('');

const IMAGES = [
  'event: image_generation.partial_image\ndata: {"type":"image_generation.partial_image","b64_json":"iVBOR","partial_image_index":0}\n\n',
  'event: image_generation.completed\ndata: {"type":"image_generation.completed","b64_json":"iVBORw0K","usage":{"input_tokens":3,"output_tokens":100}}\n\n',
].join('');

t.test('chat completions tap', async (t) => {
  everySplit(t, chatCompletions, Buffer.from(CHAT), (r) => {
    t.same(r.kinds, ['preamble', 'content', 'preamble', 'content', 'content', 'terminal']);
    t.equal(
      r.out,
      CHAT.replaceAll('"model":"up-1"', '"model":"vendor/slug"'),
      'model rewritten in every chunk, nothing else touched',
    );
    t.equal(r.upstreamModel, 'up-1');
    t.match(r.usage, { promptTokens: 5, completionTokens: 7, reasoningTokens: 3 });
    t.ok(r.completed);
  });
});

t.test('messages tap', async (t) => {
  everySplit(t, messages, Buffer.from(MESSAGES), (r) => {
    t.same(r.kinds, ['preamble', 'preamble', 'preamble', 'content', 'content', 'content', 'terminal']);
    t.equal(r.out, MESSAGES.replace('"model":"up-2"', '"model":"vendor/slug"'));
    t.equal(r.upstreamModel, 'up-2');
    t.match(r.usage, { promptTokens: 14, completionTokens: 9, cacheReadTokens: 4 });
    t.ok(r.completed);
  });
});

t.test('responses tap', async (t) => {
  everySplit(t, responses, Buffer.from(RESPONSES), (r) => {
    t.same(r.kinds, ['preamble', 'preamble', 'content', 'content', 'terminal']);
    t.equal(r.out, RESPONSES.replaceAll('"model":"up-3"', '"model":"vendor/slug"'));
    t.equal(r.upstreamModel, 'up-3');
    t.match(r.usage, { promptTokens: 6, completionTokens: 8, reasoningTokens: 2 });
    t.ok(r.completed);
  });
});

t.test('images tap', async (t) => {
  everySplit(t, images, Buffer.from(IMAGES), (r) => {
    t.same(r.kinds, ['content', 'terminal'], 'the completed event ends the stream');
    t.equal(r.out, IMAGES);
    t.match(r.usage, { promptTokens: 3, completionTokens: 100 });
    t.ok(r.completed);
  });
});

t.test('a provider that reports no model: the slug is added, nothing is reported upstream', async (t) => {
  const chat = Buffer.from(CHAT.replaceAll('"model":"up-1",', ''));
  let r = run(chatCompletions, chat, []);
  t.equal(r.upstreamModel, null);
  for (const line of r.out.split(/\r?\n/).filter((l) => l.startsWith('data: {')))
    t.equal((JSON.parse(line.slice(6)) as { model: string }).model, 'vendor/slug');

  r = run(messages, Buffer.from(MESSAGES.replace('"model":"up-2",', '')), []);
  t.equal(r.upstreamModel, null);
  t.match(r.out, '"message":{"model":"vendor/slug","id":"m"');

  r = run(responses, Buffer.from(RESPONSES.replaceAll('"model":"up-3",', '')), []);
  t.equal(r.upstreamModel, null);
  t.equal(r.out.split('"model":"vendor/slug"').length - 1, 2, 'created and completed name the slug');

  // JSON bodies.
  const noModel = Buffer.from(
    '{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}',
  );
  const a = chatCompletions.readJson(noModel, SLUG);
  t.same(JSON.parse(a?.body.toString() ?? '{}'), {
    model: 'vendor/slug',
    ...(JSON.parse(noModel.toString()) as object),
  });
  t.equal(a?.upstreamModel, null);
  const empty = chatCompletions.readJson(Buffer.from('{ }'), SLUG);
  t.equal(empty?.body.toString(), '{"model":"vendor/slug" }');
  const nullModel = messages.readJson(
    Buffer.from('{"type":"message","model":null,"usage":{"input_tokens":1,"output_tokens":2}}'),
    SLUG,
  );
  t.equal(
    nullModel?.body.toString(),
    '{"type":"message","model":"vendor/slug","usage":{"input_tokens":1,"output_tokens":2}}',
  );
  t.equal(nullModel?.upstreamModel, null);
  const resp = responses.readJson(Buffer.from('{\n  "id": "r",\n  "model": "up",\n  "status": "completed"\n}'), SLUG);
  t.equal(
    resp?.body.toString(),
    '{\n  "id": "r",\n  "model": "vendor/slug",\n  "status": "completed"\n}',
    'pretty bodies keep their layout',
  );
  t.equal(
    responses.readJson(Buffer.from('{"id":"r","status":"failed","model":"m"}'), SLUG),
    null,
    'a failed response is not an answer',
  );
});

t.test('after the commit point, a frame cut midway is malformed on every protocol', async (t) => {
  const cases: [string, ProtocolModule, string, string][] = [
    [
      'chat',
      chatCompletions,
      CHAT.split('\n\n').slice(0, 2).join('\n\n') + '\n\n',
      'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"\n\n',
    ],
    [
      'messages',
      messages,
      MESSAGES.split('\n\n').slice(0, 4).join('\n\n') + '\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\n\n',
    ],
    [
      'responses',
      responses,
      RESPONSES.split('\n\n').slice(0, 3).join('\n\n') + '\n\n',
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":\n\n',
    ],
    [
      'images',
      images,
      IMAGES.split('\n\n')[0] + '\n\n',
      'event: image_generation.partial_image\ndata: {"type":"image_generation.partial_image","b64_json":"iVB\n\n',
    ],
  ];
  for (const [name, p, started, broken] of cases) {
    const r = run(p, Buffer.from(started + broken), []);
    t.ok(r.kinds.includes('content'), `${name}: committed first`);
    t.equal(r.kinds.at(-1), 'malformed', `${name}: the cut frame is malformed`);
    const before = run(p, Buffer.from(broken), []);
    t.ok(['malformed', 'preamble'].includes(before.kinds[0] ?? ''), `${name}: a cut first frame never commits`);
    t.not(before.kinds[0], 'content');
  }
});

t.test('error events are recognised before and after the commit point', async (t) => {
  const chatErr = 'data: {"error":{"message":"boom","type":"server_error"}}\n\n';
  t.same(run(chatCompletions, Buffer.from(chatErr), []).kinds, ['error']);
  t.same(run(chatCompletions, Buffer.from(CHAT.split('\n\n').slice(0, 2).join('\n\n') + '\n\n' + chatErr), []).kinds, [
    'preamble',
    'content',
    'error',
  ]);
  const msgErr = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
  t.same(run(messages, Buffer.from(msgErr), []).kinds, ['error']);
  t.same(
    run(messages, Buffer.from(MESSAGES.split('\n\n').slice(0, 4).join('\n\n') + '\n\n' + msgErr), []).kinds.at(-1),
    'error',
  );
  const respErr = 'event: error\ndata: {"type":"error","code":"server_error","message":"x","sequence_number":0}\n\n';
  t.same(run(responses, Buffer.from(respErr), []).kinds, ['error']);
  t.same(
    run(
      responses,
      Buffer.from(
        RESPONSES.split('\n\n').slice(0, 3).join('\n\n') +
          '\n\nevent: response.failed\ndata: {"type":"response.failed","response":{"status":"failed"}}\n\n',
      ),
      [],
    ).kinds.at(-1),
    'error',
  );
  t.same(
    run(chatCompletions, Buffer.from('data: [DONE]\n\n'), []).kinds,
    ['terminal'],
    'an empty stream is terminal before content',
  );
});

t.test("the gateway's own error events parse in each protocol's shape", async (t) => {
  const chat = chatCompletions.streamErrorEvent('cut', 'upstream_stream_error').toString();
  t.match(JSON.parse(chat.slice(6)), { error: { message: 'cut', code: 'upstream_stream_error' } });
  t.ok(chat.endsWith('\n\n'));
  const msg = messages.streamErrorEvent('cut', 'x').toString();
  t.match(msg, /^event: error\ndata: /);
  t.match(JSON.parse(msg.split('\ndata: ')[1] ?? ''), { type: 'error', error: { type: 'api_error', message: 'cut' } });
  const resp = responses.streamErrorEvent('cut', 'x').toString();
  t.match(JSON.parse(resp.split('\ndata: ')[1] ?? ''), { type: 'error', code: 'x', message: 'cut' });
});

t.test('chat tap: after the first chunk the model is found by its exact bytes (fast path), same output', async (t) => {
  const { chatCompletions } = await import('../../src/protocols/chat-completions.ts');
  const slug = Buffer.from(JSON.stringify('acme/chat-small'));
  const tap = chatCompletions.tap(slug);
  const chunk = (content: string, extra = '') =>
    Buffer.from(
      `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"up-1"${extra},"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}]}\n\n`,
    );
  tap.onEvent(
    Buffer.from(
      'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"up-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n',
    ),
  );
  for (const text of ['a', 'b', '"model":"up-1"', 'c']) {
    const out = tap.onEvent(chunk(text)).out.toString();
    const obj = JSON.parse(out.slice('data: '.length)) as { model: string; choices: { delta: { content: string } }[] };
    t.equal(obj.model, 'acme/chat-small');
    t.equal(obj.choices[0]?.delta.content, text, 'content untouched, even when it spells the model field');
  }
  const nested = tap.onEvent(chunk('x', ',"meta":{"model":"up-1"}')).out.toString();
  t.match(nested, /"model":"acme\/chat-small"/);
  t.match(nested, /"meta":\{"model":"up-1"\}/, "a nested model field is not the chunk's model");
  t.equal(tap.upstreamModel, 'up-1');
});

t.test('a provisional usage from a stream’s first event is never the answer’s count', async (t) => {
  // Messages cut after content: message_start said output_tokens 1; only its input side is kept.
  const cut = MESSAGES.split('\n\n').slice(0, 4).join('\n\n') + '\n\n';
  const tap = messages.tap(SLUG);
  const splitter = new SseSplitter();
  for (const e of splitter.push(Buffer.from(cut))) tap.onEvent(e);
  t.equal(tap.usage(), null, 'no final usage before message_delta');
  t.same(
    tap.inputUsage(),
    { promptTokens: 14, cacheReadTokens: 4 },
    'the input message_start stated, without any output count',
  );
  // The whole stream: message_delta's count is final.
  const whole = messages.tap(SLUG);
  for (const e of new SseSplitter().push(Buffer.from(MESSAGES))) whole.onEvent(e);
  t.match(whole.usage(), { promptTokens: 14, completionTokens: 9 });
  // A complete stream whose message_delta carries no usage: still no final count.
  const noDeltaUsage = messages.tap(SLUG);
  for (const e of new SseSplitter().push(Buffer.from(MESSAGES.replace(',"usage":{"output_tokens":9}', ''))))
    noDeltaUsage.onEvent(e);
  t.ok(noDeltaUsage.completed);
  t.equal(noDeltaUsage.usage(), null, 'message_start’s output_tokens: 1 is not taken as final');

  // Responses: a usage on response.created is provisional; response.completed's is final.
  const created = RESPONSES.replace(
    '"output":[],"usage":null',
    '"output":[],"usage":{"input_tokens":6,"output_tokens":0}',
  );
  const resp = responses.tap(SLUG);
  const events = new SseSplitter().push(Buffer.from(created));
  for (const e of events.slice(0, 3)) resp.onEvent(e);
  t.equal(resp.usage(), null, 'cut after content: no final usage');
  t.same(resp.inputUsage(), { promptTokens: 6 }, 'the input response.created stated');
  for (const e of events.slice(3)) resp.onEvent(e);
  t.match(resp.usage(), { promptTokens: 6, completionTokens: 8 });
  // Chat reports usage only at the end.
  t.equal(chatCompletions.tap(SLUG).inputUsage(), null);
});
