// The access log over real servers: one JSON line per inference request with the documented fields
// in a fixed order (request id, trace id when traces are on, workspace, key id, models, provider,
// attempts, status, error code, how it ended, latency, time to first byte, tokens, cost), and no API
// key, upstream credential, header value or prompt text in it. Also the sink that batches a turn's
// lines into one write.
import t from 'tap';
import { nanoToDecimal } from '../../src/money.ts';
import { accessLine } from '../../src/telemetry/access-log.ts';
import { BufferedLines, type LineSink } from '../../src/telemetry/line-sink.ts';
import { startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { startStack } from '../helpers/stack.ts';

const CHAT = '/v1/chat/completions';
const FIELDS = ['ts', 'trace_id', 'workspace', 'key_id', 'endpoint', 'model_requested', 'model_served', 'provider', 'deployment', 'attempts', 'stream', 'status', 'error_code', 'ended', 'latency_ms', 'ttfb_ms', 'prompt_tokens', 'completion_tokens', 'reasoning_tokens', 'cached_tokens', 'cost_usd'];

class Lines implements LineSink {
  readonly lines: string[] = [];
  write(line: string): void {
    this.lines.push(line);
  }
  flush(): void {}
  parsed(): Record<string, unknown>[] {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

async function settled(lines: Lines, n: number): Promise<void> {
  for (let i = 0; i < 100 && lines.lines.length < n; i++) await new Promise((r) => setTimeout(r, 10));
}

t.test('one line per request with the documented fields; nothing secret', async (t) => {
  const lines = new Lines();
  const s = await startStack(t, { telemetry: { accessLog: lines } });
  const key = s.key('open');
  s.credit('open', '100');
  const prompt = 'the prompt text PROMPT-7f3a9 must never be logged';
  const headers = { 'x-title': 'Title-9c1e', 'x-pi-session-id': 'session-5d2b', 'http-referer': 'https://app.example/page?token=abc' };
  const res = await s.post(CHAT, { model: 'acme/chat-small', messages: [{ role: 'user', content: prompt }], provider: { only: ['alpha'] }, sim: { usage: { prompt: 1000, completion: 500, cached: 200 } } }, { key, headers });
  await res.text();
  const stream = await s.post(CHAT, { model: 'acme/chat-small', messages: [{ role: 'user', content: prompt }], stream: true, provider: { only: ['alpha'] }, sim: { usage: { prompt: 100, completion: 50 } } }, { key });
  await stream.text();
  const refused = await s.post(CHAT, { model: 'acme/chat-small', messages: [{ role: 'user', content: prompt }] }, { key: s.key('cheap') });
  await refused.text();
  const badKey = await s.post(CHAT, { model: 'acme/chat-small', messages: USER_MSG }, { key: 'sk-pi-' + 'x'.repeat(43) });
  await badKey.text();
  await settled(lines, 4);

  t.equal(lines.lines.length, 4, 'one line per request');
  const [ok, st, pay, auth] = lines.parsed() as [Record<string, unknown>, Record<string, unknown>, Record<string, unknown>, Record<string, unknown>];
  for (const l of [ok, st, pay, auth]) t.same(Object.keys(l), FIELDS, 'the documented fields, in order');
  const keyId = s.store.apiKeys.list('open')[0]?.id;
  t.match(ok, {
    trace_id: res.headers.get('x-pi-trace-id'),
    workspace: 'open',
    key_id: keyId,
    endpoint: 'chat_completions',
    model_requested: 'acme/chat-small',
    model_served: 'acme/chat-small',
    provider: 'alpha',
    deployment: 'alpha/chat-small',
    attempts: 1,
    stream: false,
    status: 200,
    error_code: null,
    ended: 'completed',
    prompt_tokens: 1000,
    completion_tokens: 500,
    cached_tokens: 200,
    // 800 × 1000 + 200 × 500 + 500 × 2000 nano-USD
    cost_usd: '0.0019',
  });
  t.match(ok.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.type(ok.latency_ms, 'number');
  t.type(ok.ttfb_ms, 'number');
  t.match(st, { stream: true, status: 200, ended: 'completed', prompt_tokens: 100, completion_tokens: 50, cost_usd: '0.0002' });
  t.match(pay, { workspace: 'cheap', status: 402, error_code: 'insufficient_balance', ended: 'rejected', model_served: null, provider: null, attempts: 0, cost_usd: null, ttfb_ms: null });
  t.match(auth, { workspace: null, key_id: null, status: 401, error_code: 'api_key_not_found', ended: 'rejected' });

  const all = lines.lines.join('\n');
  const secrets = [key, 'sk-pi-' + 'x'.repeat(43), 'PROMPT-7f3a9', 'upstream-secret-', 'Bearer', 'Title-9c1e', 'session-5d2b', 'token=abc', 'hi there'];
  for (const secret of secrets) t.notOk(all.includes(secret), `no ${JSON.stringify(secret.slice(0, 12))} in the access log`);
  t.notOk(/authorization/i.test(all), 'no header names either');
});

const USER_MSG = [{ role: 'user', content: 'hi there' }];

t.test('with traces on, each line carries the W3C trace id; long model strings are cut', async (t) => {
  const lines = new Lines();
  const rx = await startOtlpReceiver();
  t.teardown(() => rx.close());
  const s = await startStack(t, { telemetry: { accessLog: lines, traces: { url: `${rx.url}/v1/traces` } } });
  const key = s.key('open');
  s.credit('open', '100');
  const own = await s.post(CHAT, { model: 'acme/chat-small', messages: USER_MSG }, { key });
  await own.text();
  const client = '4bf92f3577b34da6a3ce929d0e0e4736';
  const cont = await s.post(CHAT, { model: 'acme/chat-small', messages: USER_MSG }, { key, headers: { traceparent: `00-${client}-00f067aa0ba902b7-01` } });
  await cont.text();
  const long = await s.post(CHAT, { model: 'v/' + 'm'.repeat(1000), messages: USER_MSG }, { key });
  await long.text();
  await settled(lines, 3);
  const [a, b, c] = lines.parsed();
  t.equal(a?.otel_trace_id, (own.headers.get('x-pi-trace-id') as string).replaceAll('-', ''), 'a new trace is named after the request id');
  t.equal(b?.otel_trace_id, client, "the client's trace");
  t.same(Object.keys(a ?? {}).slice(0, 3), ['ts', 'trace_id', 'otel_trace_id']);
  t.equal(c?.status, 404);
  t.equal((c?.model_requested as string).length, 200, 'model_requested cut to 200 characters');
});

t.test('BufferedLines: one write per interval, at once near 64 KiB, and what is left on flush', async (t) => {
  const writes: string[] = [];
  const sink = new BufferedLines({ write: (b: Uint8Array) => writes.push(Buffer.from(b).toString('utf8')) }, 30);
  sink.write('{"a":1}');
  sink.write('{"a":"é ✓ 😀"}');
  await new Promise((r) => setImmediate(r));
  sink.write('{"a":3}');
  t.same(writes, [], 'nothing written before the interval');
  await new Promise((r) => setTimeout(r, 60));
  t.same(writes, ['{"a":1}\n{"a":"é ✓ 😀"}\n{"a":3}\n'], 'one write for the interval, UTF-8 intact');
  sink.write('{"a":4}');
  sink.flush();
  t.same(writes.at(-1), '{"a":4}\n', 'flush writes what is buffered');
  await new Promise((r) => setTimeout(r, 60));
  t.equal(writes.length, 2, 'nothing written twice');
  // Room is reserved for 3 bytes per character: four 10,000-character lines fit in 64 KiB, a fifth
  // flushes them first.
  const line = 'x'.repeat(10_000);
  for (let i = 0; i < 7; i++) sink.write(line);
  t.equal(writes.length, 3, 'a batch is written before it could pass 64 KiB');
  t.equal(writes.at(-1)?.length, 4 * 10_001, 'four lines in it');
  sink.write('y'.repeat(30_000));
  t.equal(writes.length, 5, 'a line too long for the buffer: the waiting ones first, then it on its own');
  t.equal(writes[3]?.length, 3 * 10_001);
  t.ok(writes[4] === 'y'.repeat(30_000) + '\n', 'the long line whole');
  sink.flush();
  t.equal(writes.length, 5, 'nothing left');
});

t.test('accessLine: strings escaped as JSON.stringify would, costs as nanoToDecimal', async (t) => {
  const row = {
    trace_id: 't', ts: Date.UTC(2026, 10, 23, 10, 0, 0, 7), workspace: 'w', key_id: 'k', endpoint: 'chat_completions', model_requested: '', model_served: null, provider: null, deployment: null,
    attempts: 0, attempts_json: [], stream: false, status: 404, error_code: 'model_not_found', latency_ms: 1, ttfb_ms: null, prompt_tokens: null, completion_tokens: null, reasoning_tokens: null,
    cached_tokens: null, cost_nano: null as bigint | null, app_title: null, app_origin: null, session_id: null, ended: 'rejected' as const,
  };
  const line = (over: Partial<typeof row>) => JSON.parse(accessLine({ row: { ...row, ...over }, durationMs: 1, routedModel: null, upstreamModel: null }, null)) as Record<string, unknown>;
  for (const model of ['plain/model', 'quote"d', 'back\\slash', 'new\nline\ttab', 'ctl\u0001', 'emoji 😀', 'lone \ud800 half', 'ünïcödé', 'line\u2028sep']) {
    // The message is escaped by hand: a raw U+2028 would split tap's own output line.
    t.equal(line({ model_requested: model }).model_requested, model, JSON.stringify(model).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`));
  }
  t.equal(line({}).ts, '2026-11-23T10:00:00.007Z');
  t.equal(line({ ts: Date.UTC(2026, 10, 23, 10, 0, 1, 250) }).ts, '2026-11-23T10:00:01.250Z');
  for (const nano of [0n, 1n, 10n, 673_000n, 1_000_000_000n, 1_500_000_000n, 123_456_789_012n, 9_007_199_254_740_991n, 9_007_199_254_740_993n, 10n ** 20n + 7n]) {
    t.equal(line({ cost_nano: nano }).cost_usd, nanoToDecimal(nano), `${nano} nano-USD`);
  }
});
