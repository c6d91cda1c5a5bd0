// Metric values after known traffic through a real gateway and simulator: requests by endpoint,
// model, provider and status; how they ended; attempts, failovers and the breaker that opened;
// tokens and exact cost per workspace; 402 and 429 refusals; in-flight requests and streams during
// a slow stream; the histograms' counts; and that a client's unknown model string never becomes a
// label. Every series whose labels the config names is there at zero before any traffic (and after a
// reload adds a value); counters are typed counter and named _total; the build and the last-resort
// handler's count are reported; `serve --workers N`'s per-worker counters are counters.
import t from 'tap';
import { buildInfo } from '../../src/install/build-info.ts';
import { GatewayMetrics } from '../../src/telemetry/metrics.ts';
import { metricsJSON, workerMetrics } from '../../src/telemetry/worker-metrics.ts';
import { parseMetrics, scrape, sampleValue, samplesOf, type Sample } from '../helpers/metrics.ts';
import { startStack } from '../helpers/stack.ts';
import { USER } from '../helpers/admission.ts';

const CHAT = '/v1/chat/completions';
const SMALL = 'acme/chat-small';

t.test('metric values after known traffic', async (t) => {
  const s = await startStack(t, { admin: true, telemetry: { metrics: { processMetrics: false } } });
  const admin = (s.admin as NonNullable<typeof s.admin>).url;
  const open = s.key('open');
  s.credit('open', '100');
  const send = async (body: Record<string, unknown>, key = open): Promise<Response> => {
    const res = await s.post(CHAT, { model: SMALL, messages: USER, ...body }, { key });
    await res.arrayBuffer();
    return res;
  };

  // 3 JSON answers and 2 streams on alpha, with known usage.
  for (let i = 0; i < 3; i++)
    t.equal(
      (await send({ provider: { only: ['alpha'] }, sim: { usage: { prompt: 1000, completion: 500 } } })).status,
      200,
    );
  for (let i = 0; i < 2; i++)
    t.equal(
      (await send({ stream: true, provider: { only: ['alpha'] }, sim: { usage: { prompt: 100, completion: 50 } } }))
        .status,
      200,
    );
  // 3 failovers: beta answers 500, alpha serves; beta's breaker opens after 3 failures in a row.
  s.sim.script('small-beta', { status: 500 }, 3);
  for (let i = 0; i < 3; i++) {
    const res = await send({
      provider: { order: ['beta', 'alpha'], only: ['beta', 'alpha'] },
      sim: { usage: { prompt: 10, completion: 5 } },
    });
    t.same([res.status, res.headers.get('x-pi-provider')], [200, 'alpha'], 'failed over to alpha');
  }
  // 402: a workspace with an empty wallet.
  t.equal((await send({}, s.key('cheap'))).status, 402);
  // 429: `slow` allows 3 requests a minute (its empty wallet refuses those 3 with 402 first).
  const slow = s.key('slow');
  for (let i = 0; i < 3; i++) t.equal((await send({}, slow)).status, 402);
  t.equal((await send({}, slow)).status, 429);
  // 404: a model nobody serves; its name must not become a label.
  t.equal((await send({ model: 'nobody/unknown-model-xyz' })).status, 404);

  const m = await scrape(admin);
  const v = (name: string, labels: Record<string, string> = {}) => sampleValue(m, name, labels);
  const chat = { endpoint: 'chat_completions' };
  t.equal(
    v('pi_gateway_requests_total', { ...chat, model: SMALL, provider: 'alpha', status: '200' }),
    8,
    '8 answers from alpha',
  );
  t.equal(
    v('pi_gateway_requests_total', { ...chat, model: SMALL, provider: '', status: '402' }),
    4,
    '4 refused 402 (model as routed)',
  );
  // The rate limit is checked before the body is read: no model is known yet.
  t.equal(v('pi_gateway_requests_total', { ...chat, model: '', provider: '', status: '429' }), 1);
  t.equal(
    v('pi_gateway_requests_total', { ...chat, model: '', provider: '', status: '404' }),
    1,
    'unknown model: empty model label',
  );
  t.equal(sum(samplesOf(m, 'pi_gateway_requests_total')), 14, '14 requests in all');
  t.notOk(
    m.some((x) => Object.values(x.labels).some((l) => l.includes('unknown-model-xyz'))),
    "the client's model string is no label",
  );

  t.equal(v('pi_gateway_request_ends_total', { ...chat, ended: 'completed' }), 8);
  t.equal(v('pi_gateway_request_ends_total', { ...chat, ended: 'rejected' }), 6);

  t.equal(v('pi_gateway_upstream_attempts_total', { provider: 'alpha', outcome: 'ok' }), 8);
  t.equal(v('pi_gateway_upstream_attempts_total', { provider: 'beta', outcome: 'status_500' }), 3);
  t.equal(v('pi_gateway_failovers_total', { provider: 'beta' }), 3, 'three failovers away from beta');
  t.equal(sum(samplesOf(m, 'pi_gateway_failovers_total')), 3, 'no other failover');
  t.equal(v('pi_gateway_failovers_total', { provider: 'alpha' }), 0, 'alpha never failed over: at zero');
  t.equal(
    v('pi_gateway_breaker_state', { deployment: 'beta/chat-small', provider: 'beta' }),
    2,
    "beta's breaker is open",
  );
  t.equal(v('pi_gateway_breaker_state', { deployment: 'alpha/chat-small', provider: 'alpha' }), 0, "alpha's is closed");

  t.equal(
    v('pi_gateway_tokens_total', { direction: 'input', model: SMALL, provider: 'alpha' }),
    3 * 1000 + 2 * 100 + 3 * 10,
  );
  t.equal(
    v('pi_gateway_tokens_total', { direction: 'output', model: SMALL, provider: 'alpha' }),
    3 * 500 + 2 * 50 + 3 * 5,
  );
  // alpha prices chat-small at 1000 nano-USD per prompt token and 2000 per completion token.
  const nano = 3 * (1000 * 1000 + 500 * 2000) + 2 * (100 * 1000 + 50 * 2000) + 3 * (10 * 1000 + 5 * 2000);
  t.equal(v('pi_gateway_cost_usd_total', { workspace: 'open' }), nano / 1e9, `cost ${nano} nano-USD`);
  s.store.requestLog.flush();
  const logged = s.store.requestLog
    .query({ workspace: 'open', limit: 100 })
    .reduce((a, r) => a + (r.cost_nano ?? 0n), 0n);
  t.equal(BigInt(nano), logged, 'equal to the request log');
  t.equal(v('pi_gateway_cost_usd_total', { workspace: 'cheap' }), 0, 'a refused workspace paid nothing: at zero');

  t.equal(v('pi_gateway_wallet_refusals_total', { workspace: 'cheap' }), 1);
  t.equal(v('pi_gateway_wallet_refusals_total', { workspace: 'slow' }), 3);
  t.equal(v('pi_gateway_rate_limited_total', { workspace: 'slow' }), 1);

  t.equal(v('pi_gateway_request_duration_seconds_count', chat), 14);
  t.equal(v('pi_gateway_overhead_seconds_count', chat), 14);
  t.equal(v('pi_gateway_upstream_ttfb_seconds_count', { provider: 'alpha' }), 8);
  t.equal(v('pi_gateway_upstream_ttfb_seconds_count', { provider: 'beta' }), 3);
  const duration = v('pi_gateway_request_duration_seconds_sum', chat) as number;
  const overhead = v('pi_gateway_overhead_seconds_sum', chat) as number;
  t.ok(overhead > 0 && overhead < duration, `overhead (${overhead}s) is part of the duration (${duration}s)`);
  t.equal(v('pi_gateway_in_flight_requests', chat), 0);
  t.equal(v('pi_gateway_in_flight_streams', chat), 0);
});

t.test('in-flight requests and streams during a slow stream', async (t) => {
  const s = await startStack(t, { admin: true, telemetry: { metrics: { processMetrics: false } } });
  const admin = (s.admin as NonNullable<typeof s.admin>).url;
  const key = s.key('open');
  s.credit('open', '100');
  const res = await s.post(
    CHAT,
    {
      model: SMALL,
      messages: USER,
      stream: true,
      provider: { only: ['alpha'] },
      sim: { chunks: 3, chunkDelayMs: 300 },
    },
    { key },
  );
  t.equal(res.status, 200, 'committed');
  const during = await scrape(admin);
  t.equal(
    sampleValue(during, 'pi_gateway_in_flight_requests', { endpoint: 'chat_completions' }),
    1,
    'one request in flight',
  );
  t.equal(
    sampleValue(during, 'pi_gateway_in_flight_streams', { endpoint: 'chat_completions' }),
    1,
    'one stream in flight',
  );
  await res.text();
  let after: Sample[] = [];
  for (let i = 0; i < 50; i++) {
    after = await scrape(admin);
    if (sampleValue(after, 'pi_gateway_in_flight_requests', { endpoint: 'chat_completions' }) === 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(
    sampleValue(after, 'pi_gateway_in_flight_requests', { endpoint: 'chat_completions' }),
    0,
    'none after the end',
  );
  t.equal(sampleValue(after, 'pi_gateway_in_flight_streams', { endpoint: 'chat_completions' }), 0);
});

t.test('process metrics: RSS and event-loop delay', async (t) => {
  const s = await startStack(t, { admin: true, telemetry: { metrics: true } });
  const m = await scrape((s.admin as NonNullable<typeof s.admin>).url);
  t.ok((sampleValue(m, 'process_resident_memory_bytes') ?? 0) > 0, 'process_resident_memory_bytes');
  t.ok(sampleValue(m, 'nodejs_eventloop_lag_p99_seconds') !== undefined, 'nodejs_eventloop_lag_p99_seconds');
});

function sum(samples: Sample[]): number {
  return samples.reduce((a, x) => a + x.value, 0);
}

t.test('series present from the start: every label value the config names, at zero', async (t) => {
  const s = await startStack(t, { admin: true, telemetry: { metrics: { processMetrics: false } } });
  const admin = (s.admin as NonNullable<typeof s.admin>).url;
  const m = await scrape(admin);
  const v = (name: string, labels: Record<string, string> = {}) => sampleValue(m, name, labels);
  const endpoints = ['chat_completions', 'responses', 'messages', 'images_generations', 'images_edits'];
  const providers = [...new Set(s.config.deployments.map((d) => d.platform))];
  for (const endpoint of endpoints) {
    for (const ended of [
      'completed',
      'client_abort',
      'upstream_cut',
      'idle_timeout',
      'write_stall',
      'drained',
      'failed',
      'rejected',
    ]) {
      t.equal(v('pi_gateway_request_ends_total', { endpoint, ended }), 0, `request ends ${endpoint} ${ended}`);
    }
    t.equal(v('pi_gateway_in_flight_requests', { endpoint }), 0, `in flight ${endpoint}`);
    t.equal(v('pi_gateway_in_flight_streams', { endpoint }), 0);
    t.equal(v('pi_gateway_request_duration_seconds_count', { endpoint }), 0, `duration ${endpoint}`);
    t.equal(v('pi_gateway_overhead_seconds_count', { endpoint }), 0);
  }
  for (const provider of providers) {
    t.equal(v('pi_gateway_failovers_total', { provider }), 0, `failovers ${provider}`);
    t.equal(v('pi_gateway_upstream_ttfb_seconds_count', { provider }), 0);
    for (const cap of ['bound', 'hold']) t.equal(v('pi_gateway_usage_capped_total', { provider, cap }), 0);
  }
  for (const d of s.config.deployments) {
    for (const direction of ['input', 'output'])
      t.equal(
        v('pi_gateway_tokens_total', { direction, model: d.model, provider: d.platform }),
        0,
        `tokens ${d.id} ${direction}`,
      );
  }
  for (const w of s.config.workspaces) {
    t.equal(v('pi_gateway_wallet_refusals_total', { workspace: w.id }), 0, `refusals ${w.id}`);
    t.equal(v('pi_gateway_rate_limited_total', { workspace: w.id }), 0);
    t.equal(v('pi_gateway_cost_usd_total', { workspace: w.id }), 0);
  }
  t.equal(v('pi_gateway_config_reloads_total', { result: 'ok' }), 0);
  t.equal(v('pi_gateway_config_reloads_total', { result: 'failed' }), 0);
  t.same(samplesOf(m, 'pi_gateway_requests_total'), [], 'an open label (the status): present from its first request');

  // A reload that names a new workspace and provider: their series appear at zero.
  const base = s.config.deployments[0] as (typeof s.config.deployments)[number];
  const workspace = s.config.workspaces[0] as (typeof s.config.workspaces)[number];
  s.gw.reload({
    ...s.config,
    workspaces: [...s.config.workspaces, { ...workspace, id: 'newcomer' }],
    deployments: [...s.config.deployments, { ...base, id: 'zeta/x', platform: 'zeta' }],
  });
  const after = await scrape(admin);
  t.equal(sampleValue(after, 'pi_gateway_cost_usd_total', { workspace: 'newcomer' }), 0, 'the new workspace');
  t.equal(sampleValue(after, 'pi_gateway_failovers_total', { provider: 'zeta' }), 0, 'the new provider');
  t.equal(
    sampleValue(after, 'pi_gateway_tokens_total', { direction: 'input', model: base.model, provider: 'zeta' }),
    0,
  );
});

/** `# TYPE name type` of every metric in a text exposition. */
function types(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((x) => [x[1] as string, x[2] as string]));
}

t.test('counters are typed counter and named _total; the build and uncaught errors are reported', async (t) => {
  const metrics = new GatewayMetrics();
  let caught = 0;
  metrics.countUncaughtErrors(() => caught);
  const text = await metrics.render();
  for (const [name, type] of types(text)) {
    if (!name.startsWith('pi_gateway_')) continue;
    t.equal(type === 'counter', name.endsWith('_total'), `${name}: ${type}`);
  }
  const b = buildInfo();
  const m = parseMetrics(text);
  t.equal(
    sampleValue(m, 'pi_gateway_build_info', { version: b.version, commit: b.commit, node: process.version }),
    1,
    'pi_gateway_build_info{version,commit,node} 1',
  );
  t.match(b.version, /^\d+\.\d+\.\d+/);
  t.equal(sampleValue(m, 'pi_gateway_uncaught_errors_total'), 0, 'no uncaught error yet: at zero');
  caught = 2;
  t.equal(
    sampleValue(parseMetrics(await metrics.render()), 'pi_gateway_uncaught_errors_total'),
    2,
    'read from the last-resort handler',
  );
});

t.test(
  'serve --workers N: per-worker ready and in-flight gauges, answered and restart counters from the start',
  async (t) => {
    const coordinator = new GatewayMetrics({ processMetrics: false });
    const worker = new GatewayMetrics({ processMetrics: false });
    worker.requests.series('chat_completions', 'm', 'p', '200').value = 5;
    const samples = [
      { worker: 1, ready: true, restarts: 2 },
      { worker: 2, ready: false, restarts: 0 },
    ];
    // Worker 2 is restarting: it does not answer the scrape.
    const source = workerMetrics(
      coordinator,
      () => samples,
      async () => [
        { worker: 1, json: await metricsJSON(worker) },
        { worker: 2, json: null },
      ],
    );
    const text = await source.render();
    const ty = types(text);
    t.equal(ty.get('pi_gateway_worker_restarts_total'), 'counter');
    t.equal(ty.get('pi_gateway_worker_requests_total'), 'counter');
    t.equal(ty.get('pi_gateway_worker_ready'), 'gauge');
    t.equal(ty.get('pi_gateway_worker_in_flight_requests'), 'gauge');
    t.notOk(
      ty.has('pi_gateway_worker_restarts') || ty.has('pi_gateway_worker_requests'),
      'the old gauge names are gone',
    );
    const m = parseMetrics(text);
    t.equal(sampleValue(m, 'pi_gateway_worker_restarts_total', { worker: '1' }), 2);
    t.equal(sampleValue(m, 'pi_gateway_worker_requests_total', { worker: '1' }), 5);
    t.equal(
      sampleValue(m, 'pi_gateway_worker_requests_total', { worker: '2' }),
      0,
      'a worker that did not answer: at zero, not absent',
    );
    t.equal(sampleValue(m, 'pi_gateway_worker_in_flight_requests', { worker: '2' }), 0);
  },
);
