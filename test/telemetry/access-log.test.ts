// The access log over real servers: one JSON line per inference request with the documented fields
// in a fixed order (time, level, event, request id, trace id when traces are on, client address,
// method, path, user agent, workspace, key id, models, provider, attempts, status, error code, how it
// ended, latency, time to first byte, body bytes each way, tokens, cost), and no API key, upstream
// credential, other header value or prompt text in it; X-Forwarded-For believed only from a trusted
// proxy. Also the sink that batches a turn's lines into one write.
import t from 'tap';
import { nanoToDecimal } from '../../src/money.ts';
import type { RequestEnd } from '../../src/observe/request-end.ts';
import { accessLine } from '../../src/telemetry/access-log.ts';
import { BufferedLines, type LineSink } from '../../src/telemetry/line-sink.ts';
import { startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { startStack } from '../helpers/stack.ts';

const CHAT = '/v1/chat/completions';
const FIELDS = [
  'time',
  'level',
  'event',
  'trace_id',
  'client_address',
  'method',
  'path',
  'user_agent',
  'workspace',
  'key_id',
  'endpoint',
  'model_requested',
  'model_served',
  'provider',
  'deployment',
  'attempts',
  'stream',
  'status',
  'error_code',
  'ended',
  'latency_ms',
  'ttfb_ms',
  'request_bytes',
  'response_bytes',
  'prompt_tokens',
  'completion_tokens',
  'reasoning_tokens',
  'cached_tokens',
  'cost_usd',
];

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
  const headers = {
    'x-title': 'Title-9c1e',
    'x-pi-session-id': 'session-5d2b',
    'http-referer': 'https://app.example/page?token=abc',
  };
  const body = {
    model: 'acme/chat-small',
    messages: [{ role: 'user', content: prompt }],
    provider: { only: ['alpha'] },
    sim: { usage: { prompt: 1000, completion: 500, cached: 200 } },
  };
  const res = await s.post(CHAT, body, {
    key,
    headers: { ...headers, 'user-agent': 'test-agent/1.0 "quoted"', 'x-forwarded-for': '203.0.113.9' },
  });
  const answer = await res.text();
  const stream = await s.post(
    CHAT,
    {
      model: 'acme/chat-small',
      messages: [{ role: 'user', content: prompt }],
      stream: true,
      provider: { only: ['alpha'] },
      sim: { usage: { prompt: 100, completion: 50 } },
    },
    { key },
  );
  const streamed = await stream.text();
  const refused = await s.post(
    CHAT,
    { model: 'acme/chat-small', messages: [{ role: 'user', content: prompt }] },
    { key: s.key('cheap') },
  );
  await refused.text();
  const badKey = await s.post(
    CHAT,
    { model: 'acme/chat-small', messages: USER_MSG },
    { key: 'sk-pi-' + 'x'.repeat(43) },
  );
  await badKey.text();
  await settled(lines, 4);

  t.equal(lines.lines.length, 4, 'one line per request');
  const [ok, st, pay, auth] = lines.parsed() as [
    Record<string, unknown>,
    Record<string, unknown>,
    Record<string, unknown>,
    Record<string, unknown>,
  ];
  for (const l of [ok, st, pay, auth]) t.same(Object.keys(l), FIELDS, 'the documented fields, in order');
  const keyId = s.store.apiKeys.list('open')[0]?.id;
  t.match(ok, {
    level: 'info',
    event: 'request',
    trace_id: res.headers.get('x-pi-trace-id'),
    client_address: '127.0.0.1',
    method: 'POST',
    path: CHAT,
    user_agent: 'test-agent/1.0 "quoted"',
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
    request_bytes: Buffer.byteLength(JSON.stringify(body)),
    response_bytes: Buffer.byteLength(answer),
  });
  t.match(ok.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.type(ok.latency_ms, 'number');
  t.type(ok.ttfb_ms, 'number');
  t.match(st, {
    stream: true,
    status: 200,
    ended: 'completed',
    prompt_tokens: 100,
    completion_tokens: 50,
    cost_usd: '0.0002',
    response_bytes: Buffer.byteLength(streamed),
  });
  t.ok((st.response_bytes as number) > 0, 'a stream counts its events');
  t.match(pay, {
    workspace: 'cheap',
    status: 402,
    error_code: 'insufficient_balance',
    ended: 'rejected',
    model_served: null,
    provider: null,
    attempts: 0,
    cost_usd: null,
    ttfb_ms: null,
  });
  t.match(auth, { workspace: null, key_id: null, status: 401, error_code: 'api_key_not_found', ended: 'rejected' });

  const all = lines.lines.join('\n');
  const secrets = [
    key,
    'sk-pi-' + 'x'.repeat(43),
    'PROMPT-7f3a9',
    'upstream-secret-',
    'Bearer',
    'Title-9c1e',
    'session-5d2b',
    'token=abc',
    'hi there',
  ];
  for (const secret of secrets)
    t.notOk(all.includes(secret), `no ${JSON.stringify(secret.slice(0, 12))} in the access log`);
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
  const cont = await s.post(
    CHAT,
    { model: 'acme/chat-small', messages: USER_MSG },
    { key, headers: { traceparent: `00-${client}-00f067aa0ba902b7-01` } },
  );
  await cont.text();
  const long = await s.post(CHAT, { model: 'v/' + 'm'.repeat(1000), messages: USER_MSG }, { key });
  await long.text();
  await settled(lines, 3);
  const [a, b, c] = lines.parsed();
  t.equal(
    a?.otel_trace_id,
    (own.headers.get('x-pi-trace-id') as string).replaceAll('-', ''),
    'a new trace is named after the request id',
  );
  t.equal(b?.otel_trace_id, client, "the client's trace");
  t.same(Object.keys(a ?? {}).slice(0, 6), ['time', 'level', 'event', 'trace_id', 'otel_trace_id', 'client_address']);
  t.equal(c?.status, 404);
  t.equal((c!.model_requested as string).length, 200, 'model_requested cut to 200 characters');
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
    trace_id: 't',
    ts: Date.UTC(2026, 10, 23, 10, 0, 0, 7),
    workspace: 'w',
    key_id: 'k',
    endpoint: 'chat_completions',
    model_requested: '',
    model_served: null,
    provider: null,
    deployment: null,
    attempts: 0,
    attempts_json: [],
    stream: false,
    status: 404,
    error_code: 'model_not_found',
    latency_ms: 1,
    ttfb_ms: null,
    prompt_tokens: null,
    completion_tokens: null,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: null as bigint | null,
    app_title: null,
    app_origin: null,
    session_id: null,
    ended: 'rejected' as RequestEnd,
  };
  const origin = { client: '192.0.2.1', method: 'POST', path: CHAT, userAgent: null, otelTraceId: null };
  const line = (over: Partial<typeof row>) =>
    JSON.parse(
      accessLine(
        {
          row: { ...row, ...over },
          durationMs: 1,
          routedModel: null,
          upstreamModel: null,
          requestBytes: 0,
          responseBytes: 0,
        },
        origin,
      ),
    ) as Record<string, unknown>;
  for (const model of [
    'plain/model',
    'quote"d',
    'back\\slash',
    'new\nline\ttab',
    'ctl\u0001',
    'emoji 😀',
    'lone \ud800 half',
    'ünïcödé',
    'line\u2028sep',
  ]) {
    // The message is escaped by hand: a raw U+2028 would split tap's own output line.
    t.equal(
      line({ model_requested: model }).model_requested,
      model,
      JSON.stringify(model).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`),
    );
  }
  t.equal(line({}).time, '2026-11-23T10:00:00.007Z');
  t.equal(line({ ts: Date.UTC(2026, 10, 23, 10, 0, 1, 250) }).time, '2026-11-23T10:00:01.250Z');
  t.equal(line({ status: 404 }).level, 'info', "a client's 4xx is info");
  t.equal(line({ status: 502, ended: 'failed' }).level, 'error', 'a 5xx is an error');
  t.equal(line({ status: 200, ended: 'upstream_cut' }).level, 'error', 'so is a cut answer');
  t.equal(line({ status: 200, ended: 'client_abort' }).level, 'info', 'a client leaving is not');
  for (const nano of [
    0n,
    1n,
    10n,
    673_000n,
    1_000_000_000n,
    1_500_000_000n,
    123_456_789_012n,
    9_007_199_254_740_991n,
    9_007_199_254_740_993n,
    10n ** 20n + 7n,
  ]) {
    t.equal(line({ cost_nano: nano }).cost_usd, nanoToDecimal(nano), `${nano} nano-USD`);
  }
});

t.test('X-Forwarded-For: believed only from a trusted proxy, read from its right end', async (t) => {
  const send = async (s: Awaited<ReturnType<typeof startStack>>, lines: Lines, xff: string | null) => {
    const before = lines.lines.length;
    const res = await s.post(
      CHAT,
      { model: 'acme/chat-small', messages: USER_MSG },
      { key: s.key('open'), headers: xff === null ? {} : { 'x-forwarded-for': xff } },
    );
    await res.text();
    await settled(lines, before + 1);
    return lines.parsed().at(-1)?.client_address;
  };
  const plain = new Lines();
  const untrusting = await startStack(t, { telemetry: { accessLog: plain } });
  untrusting.credit('open', '100');
  t.equal(
    await send(untrusting, plain, '203.0.113.9'),
    '127.0.0.1',
    'no trusted proxies (the default): the header is ignored',
  );

  const lines = new Lines();
  const s = await startStack(t, { telemetry: { accessLog: lines, trustedProxies: ['127.0.0.1', '10.0.0.0/8'] } });
  s.credit('open', '100');
  t.equal(await send(s, lines, null), '127.0.0.1', 'a trusted peer without the header: the peer');
  t.equal(await send(s, lines, '203.0.113.9'), '203.0.113.9', 'the client the trusted peer names');
  t.equal(
    await send(s, lines, '198.51.100.1, 203.0.113.9, 10.1.2.3'),
    '203.0.113.9',
    'trusted hops skipped from the right; what the client wrote left of it is not believed',
  );
  t.equal(await send(s, lines, '10.0.0.1, 10.0.0.2'), '10.0.0.1', 'every hop trusted: the left-most');
  t.equal(await send(s, lines, 'not-an-ip, 10.0.0.2'), '10.0.0.2', 'garbage ends the walk at the hop that sent it');
  t.equal(await send(s, lines, '[2001:db8::7]:443'), '2001:db8::7', 'a bracketed IPv6 with a port');
});

t.test('trusted proxies: addresses and CIDR ranges, a bad entry named', async (t) => {
  const { TrustedProxies, clientAddress, plainAddress } = await import('../../src/telemetry/client-address.ts');
  const trusted = new TrustedProxies(['192.0.2.0/24', '2001:db8::/32', '198.51.100.7']);
  t.ok(trusted.has('192.0.2.200'));
  t.notOk(trusted.has('192.0.3.1'));
  t.ok(trusted.has('2001:db8:ffff::1'));
  t.ok(trusted.has('198.51.100.7'));
  t.notOk(trusted.has('198.51.100.8'));
  t.notOk(trusted.has('not an address'));
  t.equal(plainAddress('::ffff:192.0.2.5'), '192.0.2.5', 'an IPv4 peer of a dual-stack socket');
  t.equal(
    clientAddress('::ffff:192.0.2.5', '203.0.113.1', trusted),
    '203.0.113.1',
    'the mapped peer is the trusted IPv4 one',
  );
  t.equal(
    clientAddress('203.0.113.50', '10.9.9.9', trusted),
    '203.0.113.50',
    'an untrusted peer: its header is ignored',
  );
  for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.0/x', '::/129', ''])
    t.throws(
      () => new TrustedProxies([bad]),
      { message: new RegExp(`"${bad.replace(/[./]/g, '\\$&')}"`) },
      `"${bad}" refused`,
    );
});
