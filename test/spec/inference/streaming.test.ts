// Streaming on uWS: bytes reach the client as the provider sends them, SSE framing survives upstream
// chunks that split events anywhere, a stream that breaks after it started ends with the protocol's
// own error event (never [DONE] / message_stop / response.completed), failures before the first
// content event fail over invisibly, and the start-of-answer limit applies.
import t, { type Test } from 'tap';
import type { ServerResponse } from 'node:http';
import { nanoToDecimal } from '../../../src/money.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { handUpstream, logRow, parseSse, spyUpstream, USER } from '../../helpers/inference.ts';

const SHORT = { firstByteTimeoutMs: 300, streamIdleTimeoutMs: 300 };

async function stack(t: Test, limits: Record<string, number> = SHORT): Promise<{ s: Stack; key: string }> {
  const s = await startStack(t, { limits });
  const key = s.key('open');
  s.credit('open', '100');
  return { s, key };
}

interface Proto {
  name: string;
  path: string;
  body: Record<string, unknown>;
  /** Whether the event list is a normal, complete end. */
  normalEnd(events: { event: string | null; data: string }[]): boolean;
  /** The protocol's error event as the last event. */
  isErrorEvent(ev: { event: string | null; data: string } | undefined): boolean;
}

const PROTOCOLS: Proto[] = [
  {
    name: 'chat',
    path: '/v1/chat/completions',
    body: { model: 'acme/chat-small', messages: USER, stream: true, provider: { only: ['alpha'] } },
    normalEnd: (evs) => evs.some((e) => e.data === '[DONE]'),
    isErrorEvent: (e) =>
      e !== undefined &&
      e.event === null &&
      typeof (JSON.parse(e.data) as { error?: { message?: string } }).error?.message === 'string',
  },
  {
    name: 'responses',
    path: '/v1/responses',
    body: { model: 'acme/chat-small', input: 'hi', stream: true, provider: { only: ['alpha'] } },
    normalEnd: (evs) => evs.some((e) => e.event === 'response.completed' || e.event === 'response.incomplete'),
    isErrorEvent: (e) =>
      e !== undefined && e.event === 'error' && (JSON.parse(e.data) as { type?: string }).type === 'error',
  },
  {
    name: 'messages',
    path: '/v1/messages',
    body: {
      model: 'beta-labs/sonnet-ish',
      max_tokens: 100,
      messages: USER,
      stream: true,
      provider: { only: ['delta'] },
    },
    normalEnd: (evs) => evs.some((e) => e.event === 'message_stop'),
    isErrorEvent: (e) =>
      e !== undefined &&
      e.event === 'error' &&
      (JSON.parse(e.data) as { type?: string; error?: { type?: string } }).error?.type !== undefined,
  },
];

t.test('bytes reach the client as the provider sends them', async (t) => {
  const { s, key } = await stack(t, { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 2000 });
  for (const p of PROTOCOLS) {
    const t0 = performance.now();
    const res = await s.post(p.path, { ...p.body, sim: { chunks: 4, chunkDelayMs: 150 } }, { key });
    t.equal(res.status, 200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const arrivals: number[] = [];
    let text = '';
    const dec = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      arrivals.push(performance.now() - t0);
      text += dec.decode(value, { stream: true });
    }
    const total = performance.now() - t0;
    t.ok(arrivals.length >= 4, `${p.name}: the body came in ${arrivals.length} pieces`);
    t.ok(
      (arrivals[0] ?? total) < total - 300,
      `${p.name}: the first bytes arrived at ${Math.round(arrivals[0] ?? 0)} ms, well before the end at ${Math.round(total)} ms`,
    );
    t.ok(p.normalEnd(parseSse(text)), `${p.name}: complete`);
  }
});

/** Writes `text` to `res` in `size`-byte pieces, one per event-loop turn, so each is its own TCP chunk. */
async function dribble(res: ServerResponse, text: string, size: number): Promise<void> {
  const buf = Buffer.from(text);
  for (let i = 0; i < buf.length; i += size) {
    res.write(buf.subarray(i, i + size));
    await new Promise((r) => setTimeout(r, 2));
  }
  res.end();
}

const CHAT_UP = [
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[{"index":0,"delta":{"content":"héllo \\"model\\": 😀"},"finish_reason":null}]}\n\n',
  ': keep-alive comment (relayed once the answer started)\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}\n\n',
  'data: [DONE]\n\n',
].join('');

const MESSAGES_UP = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","model":"up-model","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}\n\n',
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
  'event: ping\ndata: {"type": "ping"}\n\n',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"héllo 😀"}}\n\n',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}\n\n',
  'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}\n\n',
  'event: message_stop\ndata: {"type":"message_stop"}\n\n',
].join('');

const RESPONSES_UP = [
  'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"r1","object":"response","status":"in_progress","model":"up-model","output":[],"usage":null}}\n\n',
  'event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"i1","type":"message","status":"in_progress","content":[],"role":"assistant"}}\n\n',
  'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":2,"item_id":"i1","output_index":0,"content_index":0,"delta":"héllo 😀"}\n\n',
  'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":3,"item_id":"i1","output_index":0,"content_index":0,"delta":" world"}\n\n',
  'event: response.completed\ndata: {"type":"response.completed","sequence_number":4,"response":{"id":"r1","object":"response","status":"completed","model":"up-model","output":[],"usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7}}}\n\n',
].join('');

/** `text` with `"cost":<USD>` appended to its last usage object (the one the settlement bills). */
function withCost(text: string, costNano: number | bigint | null | undefined): string {
  const at = text.lastIndexOf('"usage":{');
  const close = text.indexOf('}', at);
  return `${text.slice(0, close)},"cost":${nanoToDecimal(costNano ?? 0)}${text.slice(close)}`;
}

t.test('SSE framing is preserved when upstream chunks split events anywhere', async (t) => {
  const { s, key } = await stack(t, { firstByteTimeoutMs: 5000, streamIdleTimeoutMs: 5000 });
  const cases: [Proto, string, string][] = [
    [PROTOCOLS[0] as Proto, CHAT_UP, 'acme/chat-small'],
    [PROTOCOLS[1] as Proto, RESPONSES_UP, 'acme/chat-small'],
    [PROTOCOLS[2] as Proto, MESSAGES_UP, 'beta-labs/sonnet-ish'],
  ];
  let upstreamText = '';
  const up = await handUpstream(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': 'req_hand' });
    void dribble(res, upstreamText, splitSize);
  });
  let splitSize = 3;
  s.gw.ctx.upstreamOverride = new URL(up.url);
  const spy = spyUpstream(s);
  for (const [p, text, slug] of cases) {
    for (const [size, crlf] of [
      [3, false],
      [7, false],
      [64, true],
    ] as const) {
      splitSize = size;
      upstreamText = crlf ? text.replace(/\n/g, '\r\n') : text;
      const before = spy.dataAt.length;
      const res = await s.post(p.path, p.body, { key });
      t.equal(res.status, 200);
      const got = await res.text();
      // The model rewritten, and the settled cost added to the answer's final usage.
      const cost = (await logRow(s, res.headers.get('x-pi-trace-id')))?.cost_nano;
      const expected = withCost(upstreamText.replaceAll('"model":"up-model"', `"model":${JSON.stringify(slug)}`), cost);
      t.ok(
        spy.dataAt.length - before > (size === 64 ? 5 : 20),
        `${p.name}/${size}: the gateway got the stream in ${spy.dataAt.length - before} chunks`,
      );
      t.equal(
        got,
        expected,
        `${p.name} split every ${size} bytes${crlf ? ' (CRLF)' : ''}: the same events, model rewritten`,
      );
      t.equal(res.headers.get('x-pi-upstream-model'), 'up-model');
    }
  }
});

t.test('a stream that breaks after it started ends with the protocol error event', async (t) => {
  const { s, key } = await stack(t);
  const faults: [string, Record<string, unknown>, string][] = [
    ['reset', { reset: 'after_chunks', resetAfterChunks: 2 }, 'stream_reset'],
    ['stall', { stallAfterChunks: 2 }, 'stream_timeout'],
    ['malformed frame', { malformedAfterChunks: 2 }, 'stream_malformed'],
  ];
  for (const p of PROTOCOLS) {
    for (const [what, sim, code] of faults) {
      const t0 = performance.now();
      const res = await s.post(p.path, { ...p.body, sim: { chunks: 5, ...sim } }, { key });
      t.equal(res.status, 200, `${p.name}/${what}: the stream had started`);
      const text = await res.text();
      const events = parseSse(text);
      t.notOk(p.normalEnd(events), `${p.name}/${what}: no normal end marker`);
      t.ok(
        p.isErrorEvent(events.at(-1)),
        `${p.name}/${what}: ends with its error event (${events.at(-1)?.data.slice(0, 120)})`,
      );
      t.ok(performance.now() - t0 < 3000, `${p.name}/${what}: ended promptly`);
      const deltas = events.filter((e) => /delta/.test(e.event ?? '') || /"content":"[^"]/.test(e.data));
      t.ok(deltas.length >= 2, `${p.name}/${what}: the content sent before the break reached the client`);
      if (what === 'malformed frame')
        t.notMatch(text, '"sequence_number":\n', `${p.name}: the broken frame itself is not relayed`);
      const row = await logRow(s, res.headers.get('x-pi-trace-id'));
      t.equal(row?.error_code, code, `${p.name}/${what}: logged as ${code}`);
    }
  }
});

t.test('failures before the first content event fail over invisibly', async (t) => {
  const { s, key } = await stack(t);
  const faults: [string, Record<string, unknown>][] = [
    ['in-band error', { inbandError: true }],
    ['preamble only', { preambleOnly: true }],
    ['reset after preamble', { reset: 'after_preamble' }],
    ['reset before head', { reset: 'before_head' }],
    ['malformed first frame', { malformedAfterChunks: 0 }],
    ['500', { status: 500 }],
    ['429', { status: 429 }],
    ['first byte too late', { ttfbMs: 800 }],
    ['content too late', { chunkDelayMs: 800 }],
  ];
  for (const [what, behaviour] of faults) {
    s.sim.clear();
    s.sim.script('small-v1', behaviour, 1);
    const res = await s.post(
      '/v1/chat/completions',
      {
        model: 'acme/chat-small',
        messages: USER,
        stream: true,
        provider: { order: ['alpha', 'beta'], only: ['alpha', 'beta'] },
      },
      { key },
    );
    t.equal(res.status, 200, what);
    t.equal(res.headers.get('x-pi-provider'), 'beta', `${what}: beta took over`);
    t.equal(res.headers.get('x-pi-upstream-model'), 'small-beta');
    const events = parseSse(await res.text());
    t.equal(
      events.filter((e) => e.data.includes('"role":"assistant"')).length,
      1,
      `${what}: one preamble only, nothing of the failed attempt`,
    );
    t.equal(events.at(-1)?.data, '[DONE]');
    t.equal(s.sim.requests.length, 2, `${what}: two attempts`);
    const row = await logRow(s, res.headers.get('x-pi-trace-id'));
    t.equal(row?.attempts, 2);
    t.equal(row?.provider, 'beta');
  }
});

t.test('start-of-answer limit: no provider starts in time → 503 without provider headers', async (t) => {
  const { s, key } = await stack(t);
  for (const p of PROTOCOLS) {
    for (const sim of [{ ttfbMs: 1500 }, { firstEventDelayMs: 1500 }, { chunkDelayMs: 1500 }]) {
      const t0 = performance.now();
      const res = await s.post(p.path, { ...p.body, sim }, { key });
      const ms = performance.now() - t0;
      t.equal(res.status, 503, `${p.name} ${JSON.stringify(sim)}`);
      t.equal(res.headers.get('x-pi-provider'), null);
      t.equal(((await res.json()) as { error: { code: string } }).error.code, 'provider_unavailable');
      t.ok(ms >= 280 && ms < 1400, `${p.name}: gave up after ${Math.round(ms)} ms (limit 300)`);
    }
  }
  // Non-streamed: the same limit on the whole JSON answer's first byte.
  const res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] }, sim: { ttfbMs: 1500 } },
    { key },
  );
  t.equal(res.status, 503);
  s.gw.ctx.wallets.flush(); // the wallet book writes in batches
  const w = s.store.wallets.show('open', s.clock.now());
  t.equal(w.balance, 100_000_000_000n, 'nothing charged for answers that never started');
  t.equal(w.held, 0n);
});

t.test('a provider error body that stalls does not hang the request', async (t) => {
  const { s, key } = await stack(t);
  const t0 = performance.now();
  const res = await s.post(
    '/v1/chat/completions',
    {
      model: 'acme/chat-small',
      messages: USER,
      provider: { only: ['alpha'] },
      sim: { status: 500, stallAfterChunks: 1 },
    },
    { key, headers: {} },
  );
  t.equal(res.status, 503, 'the stalled error answer counts as no answer');
  await res.text();
  t.ok(performance.now() - t0 < 2000, `answered in ${Math.round(performance.now() - t0)} ms`);
});

t.test('a JSON answer that stalls or breaks midway fails over', async (t) => {
  const { s, key } = await stack(t);
  for (const behaviour of [{ stallAfterChunks: 1 }, { reset: 'after_chunks' }, { malformedAfterChunks: 1 }] as const) {
    s.sim.clear();
    s.sim.script('small-v1', behaviour, 1);
    const res = await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, provider: { order: ['alpha', 'beta'], only: ['alpha', 'beta'] } },
      { key },
    );
    t.equal(res.status, 200, JSON.stringify(behaviour));
    t.equal(res.headers.get('x-pi-provider'), 'beta');
    t.equal(((await res.json()) as { model: string }).model, 'acme/chat-small');
  }
});

t.test('an upstream that closes cleanly without its end marker, or inside an event, is a broken stream', async (t) => {
  const { s, key } = await stack(t);
  let body = '';
  const up = await handUpstream(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(body);
  });
  s.gw.ctx.upstreamOverride = new URL(up.url);
  const cut = CHAT_UP.split('\n\n').slice(0, 3).join('\n\n') + '\n\n';
  for (const [what, text, code] of [
    ['no [DONE]', cut, 'stream_reset'],
    ['inside an event', cut + 'data: {"id":"c1","choices":[{"delta":{"content":"par', 'stream_malformed'],
  ] as const) {
    body = text;
    const res = await s.post('/v1/chat/completions', PROTOCOLS[0]?.body ?? {}, { key });
    t.equal(res.status, 200, what);
    const events = parseSse(await res.text());
    t.notOk(
      events.some((e) => e.data === '[DONE]'),
      `${what}: no [DONE]`,
    );
    t.match(
      events.at(-1)?.data ?? '',
      /^\{"error":\{"message":"the provider stream ended/,
      `${what}: ends with the error event`,
    );
    t.notMatch(JSON.stringify(events), '"par', `${what}: the partial event is not relayed`);
    const row = await logRow(s, res.headers.get('x-pi-trace-id'));
    t.equal(row?.error_code, code);
  }
});

t.test(
  'a compressed JSON answer is decoded before the model rewrite; its Content-Encoding is not forwarded',
  async (t) => {
    const { s, key } = await stack(t);
    const { gzipSync } = await import('node:zlib');
    const up = await handUpstream(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'x-request-id': 'req_gz' });
      res.end(
        gzipSync(
          Buffer.from(
            '{"id":"c","object":"chat.completion","model":"up-gz","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}',
          ),
        ),
      );
    });
    s.gw.ctx.upstreamOverride = new URL(up.url);
    const res = await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] } },
      { key },
    );
    t.equal(res.status, 200);
    t.equal(res.headers.get('content-encoding'), null);
    t.equal(res.headers.get('x-pi-upstream-model'), 'up-gz');
    const body = (await res.json()) as { model: string; choices: { message: { content: string } }[] };
    t.equal(body.model, 'acme/chat-small');
    t.equal(body.choices[0]?.message.content, 'hi');
    t.equal(up.seen[0]?.headers['accept-encoding'], 'identity', 'the gateway asks for identity anyway');
  },
);
