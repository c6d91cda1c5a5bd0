// Traces over real servers: an OTLP/HTTP receiver started here gets one SERVER span per request with
// the GenAI attributes and one CLIENT span per upstream attempt under it; a request without a
// traceparent gets a trace named after its X-Pi-Trace-Id; a client's traceparent (and tracestate)
// is continued; each attempt sends the simulator a traceparent naming its own span; a client's
// unsampled trace is propagated but not exported.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import type { RequestObserver } from '../../src/observe/observer.ts';
import { startTelemetry } from '../../src/telemetry/telemetry.ts';
import { exportTimeout } from '../../src/telemetry/tracing.ts';
import { USER } from '../helpers/admission.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';
import { startStack, type Stack } from '../helpers/stack.ts';

const CHAT = '/v1/chat/completions';
const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

async function tracedStack(t: Test): Promise<{ s: Stack; rx: OtlpReceiver; key: string }> {
  const rx = await startOtlpReceiver();
  t.teardown(() => rx.close());
  const s = await startStack(t, { telemetry: { traces: { url: `${rx.url}/v1/traces`, scheduledDelayMillis: 20 } } });
  const key = s.key('open');
  s.credit('open', '100');
  return { s, rx, key };
}

async function exported(s: Stack, rx: OtlpReceiver, traceId: string, count: number): Promise<ReceivedSpan[]> {
  for (let i = 0; i < 100; i++) {
    await s.gw.telemetry?.flush();
    const got = rx.spans.filter((x) => x.traceId === traceId);
    if (got.length >= count) return got;
    await new Promise((r) => setTimeout(r, 20));
  }
  return rx.spans.filter((x) => x.traceId === traceId);
}

t.test('a request span with the GenAI attributes, one span per attempt, traceparent sent upstream', async (t) => {
  const { s, rx, key } = await tracedStack(t);
  s.sim.script('small-beta', { status: 500 }, 1);
  const res = await s.post(
    CHAT,
    {
      model: 'acme/chat-small',
      messages: USER,
      provider: { order: ['beta', 'alpha'], only: ['beta', 'alpha'] },
      sim: { usage: { prompt: 12, completion: 7 } },
    },
    { key },
  );
  await res.text();
  t.same([res.status, res.headers.get('x-pi-provider')], [200, 'alpha']);
  const requestId = res.headers.get('x-pi-trace-id') as string;
  const traceId = requestId.replaceAll('-', '');

  const spans = await exported(s, rx, traceId, 3);
  t.equal(spans.length, 3, 'three spans in the trace named after X-Pi-Trace-Id');
  t.match(rx.contentTypes[0], /^application\/json/, 'OTLP/HTTP JSON');
  const server = spans.find((x) => x.kind === SERVER) as ReceivedSpan;
  t.ok(server, 'a SERVER span');
  t.equal(server.parentSpanId, null, 'a root span');
  t.equal(server.name, 'chat acme/chat-small');
  t.match(server.attributes, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'alpha',
    'gen_ai.request.model': 'acme/chat-small',
    'gen_ai.response.model': 'acme/chat-small',
    'gen_ai.usage.input_tokens': 12,
    'gen_ai.usage.output_tokens': 7,
    'http.response.status_code': 200,
    'pi.trace_id': requestId,
    'pi.workspace': 'open',
    'pi.attempts': 2,
    'pi.ended': 'completed',
  });
  t.notOk('error.type' in server.attributes, 'no error.type on a completed request');
  t.equal(server.resource['service.name'], 'pi-gateway');

  const attempts = spans
    .filter((x) => x.kind === CLIENT)
    .sort((a, b) => Number(a.attributes['pi.attempt']) - Number(b.attributes['pi.attempt']));
  t.equal(attempts.length, 2, 'two CLIENT spans');
  for (const a of attempts) t.equal(a.parentSpanId, server.spanId, `${a.name}: child of the request span`);
  const [beta, alpha] = attempts as [ReceivedSpan, ReceivedSpan];
  t.equal(beta.name, 'chat small-beta');
  t.match(beta.attributes, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'beta',
    'gen_ai.request.model': 'small-beta',
    'error.type': 'status_500',
    'http.response.status_code': 500,
    'pi.deployment': 'beta/chat-small',
  });
  t.equal(beta.statusCode, ERROR, 'the failed attempt is an error');
  t.match(alpha.attributes, {
    'gen_ai.provider.name': 'alpha',
    'gen_ai.request.model': 'small-v1',
    'gen_ai.response.model': 'small-v1',
    'gen_ai.usage.input_tokens': 12,
    'gen_ai.usage.output_tokens': 7,
    'pi.outcome': 'ok',
  });
  t.notOk('error.type' in alpha.attributes);

  // What the simulator received: each attempt carried the traceparent of its own span.
  const sent = s.sim.requests.map((r) => r.headers['traceparent']);
  t.same(
    sent,
    [`00-${traceId}-${beta.spanId}-01`, `00-${traceId}-${alpha.spanId}-01`],
    'traceparent of each attempt span sent upstream',
  );
});

t.test("a client's traceparent is continued and passed upstream", async (t) => {
  const { s, rx, key } = await tracedStack(t);
  const clientTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
  const clientSpan = '00f067aa0ba902b7';
  const res = await s.post(
    CHAT,
    { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] } },
    { key, headers: { traceparent: `00-${clientTrace}-${clientSpan}-01`, tracestate: 'vendor=abc' } },
  );
  await res.text();
  t.equal(res.status, 200);
  const spans = await exported(s, rx, clientTrace, 2);
  const server = spans.find((x) => x.kind === SERVER) as ReceivedSpan;
  const attempt = spans.find((x) => x.kind === CLIENT) as ReceivedSpan;
  t.equal(server.parentSpanId, clientSpan, "the request span is the client span's child");
  t.equal(attempt.parentSpanId, server.spanId);
  const up = s.sim.requests.at(-1)?.headers ?? {};
  t.equal(
    up['traceparent'],
    `00-${clientTrace}-${attempt.spanId}-01`,
    "upstream continues the client's trace under the attempt span",
  );
  t.equal(up['tracestate'], 'vendor=abc', 'tracestate travels with it');
  t.equal(spans.filter((x) => x.traceId !== clientTrace).length, 0);
});

t.test(
  "a client's unsampled trace is propagated, not exported; a malformed traceparent starts a new trace",
  async (t) => {
    const { s, rx, key } = await tracedStack(t);
    const unsampled = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
    const res = await s.post(
      CHAT,
      { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] } },
      { key, headers: { traceparent: `00-${unsampled}-bbbbbbbbbbbbbbbb-00` } },
    );
    await res.text();
    const up = s.sim.requests.at(-1)?.headers['traceparent'] ?? '';
    t.match(up, new RegExp(`^00-${unsampled}-[0-9a-f]{16}-00$`), 'propagated with the unsampled flag');

    const bad = await s.post(
      CHAT,
      { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] } },
      { key, headers: { traceparent: '00-00000000000000000000000000000000-bbbbbbbbbbbbbbbb-01' } },
    );
    await bad.text();
    const own = (bad.headers.get('x-pi-trace-id') as string).replaceAll('-', '');
    const spans = await exported(s, rx, own, 2);
    t.equal(spans.length, 2, 'an invalid traceparent: a new trace named after the request id');
    t.equal(rx.spans.filter((x) => x.traceId === unsampled).length, 0, 'nothing exported for the unsampled trace');
  },
);

t.test('refused requests: a span with error.type; the span is an error only for 5xx', async (t) => {
  const { s, rx } = await tracedStack(t);
  const res = await s.post(CHAT, { model: 'acme/chat-small', messages: USER }, { key: s.key('cheap') });
  await res.text();
  t.equal(res.status, 402);
  const [span] = await exported(s, rx, (res.headers.get('x-pi-trace-id') as string).replaceAll('-', ''), 1);
  t.match(span?.attributes, {
    'error.type': 'insufficient_balance',
    'http.response.status_code': 402,
    'pi.ended': 'rejected',
    'gen_ai.request.model': 'acme/chat-small',
  });
  t.not(span?.statusCode, ERROR, "a client's 4xx is not a server-span error");

  s.sim.script('small-v1', { status: 503 }, 10);
  const down = await s.post(
    CHAT,
    { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] } },
    { key: s.key('open') },
  );
  await down.text();
  t.equal(down.status, 503);
  const spans = await exported(s, rx, (down.headers.get('x-pi-trace-id') as string).replaceAll('-', ''), 2);
  const server = spans.find((x) => x.kind === SERVER);
  t.match(server?.attributes, {
    'error.type': 'provider_error',
    'http.response.status_code': 503,
    'pi.ended': 'failed',
  });
  t.equal(server?.statusCode, ERROR, 'a 5xx is an error');
});

t.test('a collector that refuses or hangs never holds up a shutdown; failures are reported', async (t) => {
  // One collector answers 400 (not retried), one accepts and never answers.
  const held: ServerResponse[] = [];
  const refusing = createServer((_req, res) => res.writeHead(400).end('{}'));
  const hanging = createServer((_req, res) => void held.push(res));
  for (const srv of [refusing, hanging]) await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const srv of [refusing, hanging]) {
      srv.closeAllConnections();
      srv.close();
    }
  });
  const port = (srv: Server) => (srv.address() as AddressInfo).port;
  for (const [label, srv] of [
    ['refusing', refusing],
    ['hanging', hanging],
  ] as const) {
    const events: [string, Record<string, unknown> | undefined][] = [];
    const tel = await startTelemetry({
      traces: { url: `http://127.0.0.1:${port(srv)}/v1/traces`, flushTimeoutMs: 300, exportTimeoutMs: 500 },
      log: (e, f) => events.push([e, f]),
    });
    const watch = (tel.observers[0] as RequestObserver).begin(
      'chat_completions',
      '0190f0c2-8d8e-7c4b-9a7e-0123456789ab',
      {
        method: 'POST',
        path: CHAT,
        query: '',
        headers: {},
        params: [],
        body: Buffer.alloc(0),
        bodyStream: null,
        startedAt: performance.now(),
        remoteAddress: '127.0.0.1',
        bodyBytes: 0,
      },
    );
    watch.end({
      row: { ...EMPTY_ROW, ts: Date.now() },
      durationMs: 1,
      routedModel: null,
      upstreamModel: null,
      requestBytes: 0,
      responseBytes: 0,
    });
    const t0 = performance.now();
    await tel.close();
    const ms = performance.now() - t0;
    t.ok(ms < 1500, `${label}: close returned in ${Math.round(ms)} ms`);
    if (label === 'refusing') t.equal(events[0]?.[0], 'trace_export_failed', 'the failed export is reported');
  }
});

t.test('an export, retries included, never outlives the shutdown bound', async (t) => {
  t.equal(exportTimeout(2000, undefined, {}), 2000, 'default: the flush timeout (the exporter alone would take 10 s)');
  t.equal(exportTimeout(2000, 500, {}), 500, 'a shorter one asked for');
  t.equal(exportTimeout(2000, 10_000, {}), 2000, 'a longer one is cut to the bound');
  t.equal(
    exportTimeout(2000, undefined, { OTEL_EXPORTER_OTLP_TIMEOUT: '700' }),
    700,
    'OTEL_EXPORTER_OTLP_TIMEOUT, when shorter',
  );
  t.equal(
    exportTimeout(2000, undefined, { OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '300', OTEL_EXPORTER_OTLP_TIMEOUT: '700' }),
    300,
    'the traces-specific one first',
  );
  t.equal(exportTimeout(2000, undefined, { OTEL_EXPORTER_OTLP_TIMEOUT: '30000' }), 2000, 'never past the bound');
  t.equal(
    exportTimeout(2000, undefined, { OTEL_EXPORTER_OTLP_TIMEOUT: 'soon' }),
    2000,
    'a value that is no number is ignored',
  );
});

const EMPTY_ROW = {
  trace_id: '0190f0c2-8d8e-7c4b-9a7e-0123456789ab',
  ts: 0,
  workspace: null,
  key_id: null,
  endpoint: 'chat_completions',
  model_requested: null,
  model_served: null,
  provider: null,
  deployment: null,
  attempts: 0,
  attempts_json: [],
  stream: false,
  status: 401,
  error_code: 'api_key_not_found',
  latency_ms: 1,
  ttfb_ms: null,
  prompt_tokens: null,
  completion_tokens: null,
  reasoning_tokens: null,
  cached_tokens: null,
  cost_nano: null,
  app_title: null,
  app_origin: null,
  session_id: null,
  ended: 'rejected' as const,
};
