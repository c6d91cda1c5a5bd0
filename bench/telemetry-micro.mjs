// Telemetry micro-benchmark, in one process pinned to core 0 (run by bench/telemetry.mjs): CPU per
// request of exactly what the observers do for one inference request — begin, read, one attempt
// (start + finish), end with a realistic summary — through combineObservers as the gateway calls
// them: the request-log writer alone (its append stubbed: the store's cost is measured elsewhere),
// plus metrics, plus the access log (formatting and batching; written to /dev/null once per batch
// of PER_FLUSH requests, which the time-based flush of `serve` exceeds at any real load), plus both.
// Labels cycle over a few endpoints, models and workspaces.
// Prints one JSON line {"ready":true,"result":{...}}.
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TREE = process.env.PI_BENCH_TREE || fileURLToPath(new URL('..', import.meta.url));
const dist = (p) => import(join(TREE, 'dist', 'src', p));
const { combineObservers } = await dist('observe/observer.js');
const { requestLogObserver } = await dist('telemetry/request-log-observer.js');
const { GatewayMetrics } = await dist('telemetry/metrics.js');
const { accessLogObserver } = await dist('telemetry/access-log.js');
const { BufferedLines } = await dist('telemetry/line-sink.js');

const quick = process.argv.includes('--quick');
const BATCHES = quick ? 5 : 11;
const N = quick ? 20_000 : 50_000;
/** Requests per access-log write (at 1,000 req/s the 100-ms flush gathers about 100). */
const PER_FLUSH = 100;

process.on('SIGTERM', () => process.exit(0));

const devnull = openSync('/dev/null', 'w');
const sink = new BufferedLines({ write: (text) => writeSync(devnull, text) });
const ENDPOINTS = ['chat_completions', 'messages', 'responses'];
const MODELS = [
  'openai/gpt-6-luna',
  'anthropic/claude-sonnet-5.5',
  'meta-llama/llama-3.3-70b-instruct',
  'google/gemini-3.8-flash',
];
const WORKSPACES = ['acme', 'globex', 'initech'];
const REQ = {
  method: 'POST',
  path: '/v1/chat/completions',
  query: '',
  headers: { 'content-type': 'application/json', authorization: 'Bearer sk-pi-x' },
  params: [],
  body: Buffer.alloc(0),
  bodyStream: null,
  startedAt: 0,
  remoteAddress: '127.0.0.1',
  bodyBytes: 182,
};

function summary(i) {
  const model = MODELS[i % MODELS.length];
  return {
    row: {
      trace_id: '0190f0c2-8d8e-7c4b-9a7e-0123456789ab',
      ts: 1_790_000_000_000 + i,
      workspace: WORKSPACES[i % WORKSPACES.length],
      key_id: 'key_0123456789abcdef',
      endpoint: ENDPOINTS[i % ENDPOINTS.length],
      model_requested: model,
      model_served: model,
      provider: 'local',
      deployment: `local/${model}`,
      attempts: 1,
      attempts_json: [{ provider: 'local', model, deployment: `local/${model}`, outcome: 'ok', status: 200, ms: 2 }],
      stream: false,
      status: 200,
      error_code: null,
      latency_ms: 3,
      ttfb_ms: 1,
      prompt_tokens: 13,
      completion_tokens: 64,
      reasoning_tokens: null,
      cached_tokens: null,
      cost_nano: 673_000n,
      app_title: null,
      app_origin: null,
      session_id: null,
      ended: 'completed',
    },
    durationMs: 3.2,
    routedModel: model,
    upstreamModel: 'gpt-6-luna',
    requestBytes: 182,
    responseBytes: 4310,
  };
}
const SUMMARIES = Array.from({ length: 96 }, (_, i) => summary(i));
const END = {
  outcome: 'ok',
  status: 200,
  ms: 2.1,
  firstByteMs: 1.4,
  responseModel: 'gpt-6-luna',
  inputTokens: 13,
  outputTokens: 64,
};

function variant(name, parts) {
  const log = { append: () => undefined };
  const observers = [requestLogObserver(log)];
  if (parts.metrics) observers.push(new GatewayMetrics({ processMetrics: false }));
  if (parts.accessLog) observers.push(accessLogObserver(sink, { traces: false }));
  return {
    name,
    observer: combineObservers(observers, (err) => {
      throw err;
    }),
  };
}

function runBatch(observer) {
  const t0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const s = SUMMARIES[i % SUMMARIES.length];
    const w = observer.begin(s.row.endpoint, s.row.trace_id, REQ);
    w.read(false, s.row.model_requested);
    const a = w.attempt({
      index: 0,
      provider: 'local',
      model: s.row.model_served,
      deployment: s.row.deployment,
      upstreamModel: 'gpt-6-luna',
    });
    a.finish(END);
    w.end(s);
    if (i % PER_FLUSH === PER_FLUSH - 1) sink.flush();
  }
  sink.flush();
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / N;
}

const variants = [
  variant('request log only', {}),
  variant('+ metrics', { metrics: true }),
  variant('+ access log', { accessLog: true }),
  variant('+ metrics + access log', { metrics: true, accessLog: true }),
];
const samples = Object.fromEntries(variants.map((v) => [v.name, []]));
for (const v of variants) runBatch(v.observer); // warm-up
for (let b = 0; b < BATCHES; b++) for (const v of variants) samples[v.name].push(runBatch(v.observer));
closeSync(devnull);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const result = {
  batches: BATCHES,
  perBatch: N,
  perFlush: PER_FLUSH,
  usPerRequest: Object.fromEntries(variants.map((v) => [v.name, median(samples[v.name])])),
};
process.stdout.write(JSON.stringify({ ready: true, result }) + '\n');
// Stay up until the parent stops this process (it reads the ready line first).
setInterval(() => undefined, 60_000);
