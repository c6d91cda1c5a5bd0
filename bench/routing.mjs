// Routing benchmark: what a routing decision and a failover cost.
// (1) bench/routing-micro.mjs on core 0: µs per routing decision (mergePreferences + planRoute) with
//     50 platforms × 200 models in a synthetic compiled config, with and without `provider`
//     preferences, median of several batches.
// (2) Failover latency overhead over HTTP: the gateway (bundled config, credentials of the openai
//     and local platforms sealed) gets, alternately on one keep-alive connection, a request whose
//     first deployment (openai) answers 500 at once and whose second (local) succeeds, and the same
//     request whose first deployment succeeds. Both name `provider: {order: [openai, local], only:
//     [openai, local]}`; the simulator's per-model behaviour rides in the forwarded body field
//     `sim.by_model` (same byte length in both). Reports p50/p99 of each and the p50 difference; for
//     scale, the direct round trip of the simulator's instant 500.
//
//   node bench/run.js routing [--quick]
import { Conn, buildRequest, once } from './lib/load.mjs';
import { ensureBuilt, startNode, stopProcess } from './lib/proc.mjs';
import { SUT_CORE, placement, startGateway, startSimulator, target } from './lib/stack.mjs';
import { fmt, fmtInt, log, machineInfo, parseFlags, pct, saveResult, sorted, table } from './lib/stats.mjs';

const flags = parseFlags(process.argv.slice(2));
const P = flags.quick ? { pairs: 400, warmPairs: 50 } : { pairs: 3000, warmPairs: 200 };
ensureBuilt();

log('routing (1): micro-benchmark on core 0');
const micro = await startNode('routing-micro', {
  core: SUT_CORE,
  args: ['bench/routing-micro.mjs', ...(flags.quick ? ['--quick'] : [])],
  readyTimeoutMs: 600_000,
});
const m = micro.result;
await stopProcess(micro);

log(`routing (2): failover latency, ${P.pairs} pairs`);
const sim = await startSimulator();
const gw = await startGateway('gateway-failover', { upstream: sim.url, seal: 'openai-prod,local-sim' });
const gt = target(gw.url);
const st = target(sim.url);
const messages = [{ role: 'user', content: 'Hello, how are you today?' }];
const provider = { order: ['openai', 'local'], only: ['openai', 'local'] };
// openai-us/gpt-6-luna's upstream model is "gpt-6-luna"; local-sim/gpt-6-luna's is "openai/gpt-6-luna".
const failBody = {
  model: 'openai/gpt-6-luna',
  messages,
  max_tokens: 64,
  provider,
  sim: { by_model: { 'gpt-6-luna': { status: 500 } } },
};
const okBody = {
  model: 'openai/gpt-6-luna',
  messages,
  max_tokens: 64,
  provider,
  sim: { by_model: { 'gpt-6-lunx': { status: 500 } } },
};
const auth = { 'Content-Type': 'application/json', Authorization: `Bearer ${gw.key}` };
const reqFail = buildRequest({
  method: 'POST',
  host: gt.hostHeader,
  path: '/v1/chat/completions',
  headers: auth,
  body: failBody,
});
const reqOk = buildRequest({
  method: 'POST',
  host: gt.hostHeader,
  path: '/v1/chat/completions',
  headers: auth,
  body: okBody,
});
const direct500 = buildRequest({
  method: 'POST',
  host: st.hostHeader,
  path: '/v1/chat/completions',
  headers: { 'Content-Type': 'application/json', Authorization: 'Bearer sk-bench' },
  body: { model: 'gpt-6-luna', messages, max_tokens: 64, sim: { by_model: { 'gpt-6-luna': { status: 500 } } } },
});
if (reqFail.length !== reqOk.length) throw new Error('the two request bodies must have the same length');

const providerOf = (head) => /\r\nX-Pi-Provider: ([^\r]+)/i.exec(head ?? '')?.[1] ?? null;
const a = await once(gt, reqOk);
const b = await once(gt, reqFail);
if (a.status !== 200 || providerOf(a.headers) !== 'openai')
  throw new Error(`baseline request: ${a.status} served by ${providerOf(a.headers)}`);
if (b.status !== 200 || providerOf(b.headers) !== 'local')
  throw new Error(`failover request: ${b.status} served by ${providerOf(b.headers)}`);
const place = placement({ simulator: sim, gateway: gw });

const send = (conn, buf) =>
  new Promise((resolve) => {
    const t0 = performance.now();
    conn.send(buf, (r) => resolve({ ...r, ms: (r.doneAt ?? performance.now()) - t0 }));
  });
const conn = new Conn(gt.host, gt.port, { keepBody: true });
await conn.connect();
const dconn = new Conn(st.host, st.port, {});
await dconn.connect();
const lat = { ok: [], failover: [], direct500: [] };
let wrong = 0;
for (let i = 0; i < P.warmPairs + P.pairs; i++) {
  const measured = i >= P.warmPairs;
  // Alternate which goes first in the pair.
  const order = i % 2 === 0 ? ['ok', 'failover'] : ['failover', 'ok'];
  for (const kind of order) {
    const r = await send(conn, kind === 'ok' ? reqOk : reqFail);
    const want = kind === 'ok' ? 'openai' : 'local';
    if (r.status !== 200 || providerOf(r.headers) !== want) wrong++;
    else if (measured) lat[kind].push(r.ms);
  }
  const d = await send(dconn, direct500);
  if (measured && d.status === 500) lat.direct500.push(d.ms);
}
conn.close();
dconn.close();
await stopProcess(gw);
await stopProcess(sim);

const q = (xs) => {
  const s = sorted(xs);
  return { n: s.length, p50: pct(s, 50), p90: pct(s, 90), p99: pct(s, 99) };
};
const failover = { ok: q(lat.ok), failover: q(lat.failover), direct500: q(lat.direct500), wrong };
failover.addedP50 = failover.failover.p50 - failover.ok.p50;
failover.addedP99 = failover.failover.p99 - failover.ok.p99;

const out = [];
out.push(`## routing (${flags.quick ? 'quick' : 'full'})`);
out.push('');
out.push(
  `(1) Synthetic config: ${m.platforms} platforms × ${m.models} models = ${fmtInt(m.deployments)} deployments (every model on every platform: ${m.candidatesPerRequest} candidates per request; eligible after the policy: none ${m.eligible.none}, preferences ${m.eligible.prefs}). ${m.batches} batches × ${fmtInt(m.perBatch)} decisions, median per decision:`,
);
out.push('');
out.push(
  table(
    ['what', 'wall µs', 'CPU µs', 'wall min–max µs'],
    m.results.map((r) => [r.name, fmt(r.medianUs, 2), fmt(r.cpuUs, 2), `${fmt(r.minUs, 1)}–${fmt(r.maxUs, 1)}`]),
  ),
);
out.push('');
out.push(
  `Hold sizing alone (the last row minus the first): ≈ ${fmt(m.holdSizingCpuUs, 1)} µs CPU per request at 50 candidates.`,
);
out.push('');
out.push(`(2) Failover over HTTP, one connection, ${fmtInt(P.pairs)} pairs (+${P.warmPairs} warm-up), latency in ms:`);
out.push('');
out.push(
  table(
    ['request', 'n', 'p50', 'p90', 'p99'],
    [
      [
        'first deployment succeeds',
        failover.ok.n,
        fmt(failover.ok.p50, 3),
        fmt(failover.ok.p90, 3),
        fmt(failover.ok.p99, 3),
      ],
      [
        'first answers 500, second succeeds',
        failover.failover.n,
        fmt(failover.failover.p50, 3),
        fmt(failover.failover.p90, 3),
        fmt(failover.failover.p99, 3),
      ],
      [
        '(scale) direct: simulator 500 round trip',
        failover.direct500.n,
        fmt(failover.direct500.p50, 3),
        fmt(failover.direct500.p90, 3),
        fmt(failover.direct500.p99, 3),
      ],
    ].map((r) => r.map(String)),
  ),
);
out.push('');
out.push(
  `Failover overhead: p50 +${fmt(failover.addedP50, 3)} ms, p99 +${fmt(failover.addedP99, 3)} ms (requests served by the wrong provider or failed: ${wrong}).`,
);
out.push('');
out.push(
  `Placement: ${Object.entries(place)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}`,
);
process.stdout.write(out.join('\n') + '\n');
const file = saveResult('routing', {
  bench: 'routing',
  params: P,
  machine: machineInfo(),
  placement: place,
  micro: m,
  failover,
});
log(`saved ${file}`);
