// Catalog benchmark: GET /v1/models on the gateway (bundled config/) vs the same bytes from a bare
// uWebSockets.js static handler (bench/static-catalog.mjs), one run, interleaved round-robin, closed
// loop at a fixed concurrency. Reports req/s, CPU µs/request of each server and the ratio.
//
//   node bench/run.js catalog [--quick] [--rounds N]
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildRequest, once } from './lib/load.mjs';
import { ensureBuilt, startNode, stopProcess } from './lib/proc.mjs';
import { SUT_CORE, measureThroughput, memOf, placement, startGateway, target } from './lib/stack.mjs';
import { fmt, fmtInt, log, machineInfo, median, parseFlags, rotate, saveResult, table } from './lib/stats.mjs';

const flags = parseFlags(process.argv.slice(2));
const P = flags.quick
  ? { rounds: 3, conns: 32, warm: 500, dur: 2000 }
  : { rounds: 7, conns: 32, warm: 1000, dur: 5000 };
if (flags.rounds) P.rounds = flags.rounds;
ensureBuilt();

// The gateway needs an upstream URL only for inference; the catalog reads none.
const gw = await startGateway('gateway-catalog', { upstream: 'http://127.0.0.1:9', seal: 'all' });
const gt = target(gw.url);
const req = (t) =>
  buildRequest({ method: 'GET', host: t.hostHeader, path: '/v1/models', headers: { Accept: 'application/json' } });
const first = await once(gt, req(gt));
if (first.status !== 200) throw new Error(`gateway /v1/models: ${first.status}`);
const dir = mkdtempSync(join(tmpdir(), 'pi-bench-cat-'));
const payloadFile = join(dir, 'models.json');
writeFileSync(payloadFile, first.body);
const st = await startNode('static-catalog', {
  core: SUT_CORE,
  args: ['bench/static-catalog.mjs', '--payload', payloadFile],
});
const stt = target(st.url);
const check = await once(stt, req(stt));
if (check.status !== 200 || !check.body.equals(first.body))
  throw new Error('static-catalog does not serve the same bytes');
log(`catalog: ${fmtInt(first.body.length)} bytes, ${JSON.parse(first.text).data.length} models; ${P.rounds} rounds`);

const contenders = [
  { name: 'static uWS', pid: st.pid, target: stt, req: req(stt) },
  { name: 'pi-gateway', pid: gw.pid, target: gt, req: req(gt) },
];
const place = placement({ gateway: gw, static: st });
const rounds = [];
for (let r = 0; r < P.rounds; r++) {
  const round = {};
  for (const c of rotate(contenders, r)) {
    round[c.name] = await measureThroughput(c, { simPid: null, conns: P.conns, warmupMs: P.warm, durationMs: P.dur });
    const x = round[c.name];
    log(
      `round ${r + 1} ${c.name.padEnd(10)} ${fmtInt(x.rps)} req/s  ${fmt(x.sutCpuUsPerUnit)} µs/req  util ${fmt(x.sutUtil, 2)}  loadgen ${fmt(x.genUtil, 2)}  err ${x.errors}`,
    );
  }
  rounds.push(round);
}
const mem = memOf({ gateway: gw, static: st });
await stopProcess(st);
await stopProcess(gw);
rmSync(dir, { recursive: true, force: true });

const names = contenders.map((c) => c.name);
const med = (n, k) => median(rounds.map((r) => r[n][k]));
const summary = Object.fromEntries(
  names.map((n) => [
    n,
    {
      rps: med(n, 'rps'),
      cpuUsPerReq: med(n, 'sutCpuUsPerUnit'),
      util: med(n, 'sutUtil'),
      genUtil: med(n, 'genUtil'),
      p50: med(n, 'p50'),
      p99: med(n, 'p99'),
      errors: rounds.reduce((a, r) => a + r[n].errors, 0),
    },
  ]),
);
const ratio = median(rounds.map((r) => r['pi-gateway'].rps / r['static uWS'].rps));
const cpuRatio = median(rounds.map((r) => r['pi-gateway'].sutCpuUsPerUnit / r['static uWS'].sutCpuUsPerUnit));

const out = [];
out.push(`## catalog (${flags.quick ? 'quick' : 'full'}; ${P.rounds} rounds, medians)`);
out.push('');
out.push(
  `GET /v1/models, ${fmtInt(first.body.length)}-byte body, closed loop, ${P.conns} connections, ${P.dur / 1000} s per contender per round.`,
);
out.push('');
out.push(
  table(
    ['server', 'req/s', 'CPU µs/req', 'capacity req/s/core', 'util (server / load gen)', 'p50 ms', 'p99 ms', 'errors'],
    names.map((n) => {
      const s = summary[n];
      return [
        n,
        fmtInt(s.rps),
        fmt(s.cpuUsPerReq, 1),
        fmtInt(1e6 / s.cpuUsPerReq),
        `${fmt(s.util, 2)} / ${fmt(s.genUtil, 2)}`,
        fmt(s.p50, 3),
        fmt(s.p99, 3),
        String(s.errors),
      ];
    }),
  ),
);
out.push('');
out.push(
  `pi-gateway / static throughput: ${fmt(ratio * 100)} % measured (median of per-round ratios); CPU per request ${fmt(cpuRatio, 2)}× (CPU-normalised capacity ${fmt(100 / cpuRatio)} %). When the load generator's util is near 1, it — not the server — limits req/s, and only the CPU figures compare the servers.`,
);
out.push('');
out.push(
  `Placement: ${Object.entries(place)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}`,
);
process.stdout.write(out.join('\n') + '\n');
const file = saveResult('catalog', {
  bench: 'catalog',
  params: P,
  machine: machineInfo(),
  placement: place,
  bytes: first.body.length,
  rounds,
  summary,
  ratio,
  cpuRatio,
  mem,
});
log(`saved ${file}`);
