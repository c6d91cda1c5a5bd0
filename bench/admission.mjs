// Admission benchmark: what authenticating, rate-limiting, holding and settling cost per request.
// (a) bench/admission-micro.mjs in its own process on core 0: µs per request of exactly the store
//     path (sync + verifyKey + rate limit + hold + settle + request-log append with its batched
//     flush) on a WAL file store, its parts, floors, and what-if schema variants.
// (b) HTTP, one run, interleaved round-robin, same payload and simulator (instant answers):
//       passthrough        bare uWS → undici relay (no logic)
//       gateway (stub)     the full gateway path with the store's per-request calls stubbed out
//                          (wallet hold/settle/release, request-log append, data_version check)
//       gateway (WAL)      the same gateway with the real file-backed store
//     gateway(WAL) − gateway(stub) = what the store part of admission costs per request over HTTP;
//     gateway(stub) − passthrough = everything else the gateway does (parse, validate, route, hold
//     sizing, body rewrite, response rewrite, usage + settlement arithmetic, headers, in-memory
//     auth cache and rate limiter).
//
//   node bench/run.js admission [--quick] [--rounds N]
import { once } from './lib/load.mjs';
import { ensureBuilt, startNode, stopProcess } from './lib/proc.mjs';
import {
  chatRequest,
  measureThroughput,
  memOf,
  placement,
  startGateway,
  startPassthrough,
  startSimulator,
  target,
  SUT_CORE,
} from './lib/stack.mjs';
import { fmt, fmtInt, log, machineInfo, median, parseFlags, rotate, saveResult, table } from './lib/stats.mjs';

const flags = parseFlags(process.argv.slice(2));
const P = flags.quick
  ? { rounds: 3, conns: 64, warm: 500, dur: 2000 }
  : { rounds: 7, conns: 64, warm: 1000, dur: 5000 };
if (flags.rounds) P.rounds = flags.rounds;
ensureBuilt();

// (a) micro-benchmark
log('admission (a): micro-benchmark on core 0');
const micro = await startNode('admission-micro', {
  core: SUT_CORE,
  args: ['bench/admission-micro.mjs', ...(flags.quick ? ['--quick'] : [])],
  readyTimeoutMs: 600_000,
});
const m = micro.result;
await stopProcess(micro);

// (b) HTTP
log(`admission (b): HTTP, ${P.rounds} rounds`);
const sim = await startSimulator();
const pt = await startPassthrough(sim.url);
const stub = await startGateway('gateway-stub', { upstream: sim.url, store: 'stub' });
const wal = await startGateway('gateway-wal', { upstream: sim.url, store: 'wal' });
const body = {
  model: 'openai/gpt-6-luna',
  messages: [{ role: 'user', content: 'Hello, how are you today?' }],
  max_tokens: 64,
};
const mk = (name, proc, headers) => {
  const t = target(proc.url);
  return { name, pid: proc.pid, target: t, req: chatRequest(t, headers, body) };
};
const contenders = [
  mk('passthrough', pt, { Authorization: 'Bearer sk-bench-upstream' }),
  mk('gateway (stub store)', stub, { Authorization: `Bearer ${stub.key}` }),
  mk('gateway (WAL store)', wal, { Authorization: `Bearer ${wal.key}` }),
];
for (const c of contenders) {
  const r = await once(c.target, c.req);
  if (r.status !== 200) throw new Error(`${c.name}: sanity request failed ${r.status} ${r.text.slice(0, 200)}`);
}
const place = placement({ simulator: sim, passthrough: pt, 'gateway-stub': stub, 'gateway-wal': wal });
const rounds = [];
for (let r = 0; r < P.rounds; r++) {
  const round = {};
  for (const c of rotate(contenders, r)) {
    round[c.name] = await measureThroughput(c, {
      simPid: sim.pid,
      conns: P.conns,
      warmupMs: P.warm,
      durationMs: P.dur,
    });
    const x = round[c.name];
    log(
      `round ${r + 1} ${c.name.padEnd(22)} ${fmtInt(x.rps)} req/s  ${fmt(x.sutCpuUsPerUnit)} µs/req  util ${fmt(x.sutUtil, 2)}  err ${x.errors}`,
    );
  }
  rounds.push(round);
}
const mem = memOf({ passthrough: pt, 'gateway-stub': stub, 'gateway-wal': wal });
for (const p of [wal, stub, pt, sim]) await stopProcess(p);

const names = contenders.map((c) => c.name);
const med = (n, k) => median(rounds.map((r) => r[n][k]));
const diff = (a, b, k) => median(rounds.map((r) => r[a][k] - r[b][k]));
const http = Object.fromEntries(
  names.map((n) => [
    n,
    {
      rps: med(n, 'rps'),
      cpuUsPerReq: med(n, 'sutCpuUsPerUnit'),
      sysShare: med(n, 'sutSysShare'),
      util: med(n, 'sutUtil'),
      errors: rounds.reduce((a, r) => a + r[n].errors, 0),
    },
  ]),
);
const storeCostUs = diff('gateway (WAL store)', 'gateway (stub store)', 'sutCpuUsPerUnit');
const restCostUs = diff('gateway (stub store)', 'passthrough', 'sutCpuUsPerUnit');

const out = [];
out.push(`## admission (${flags.quick ? 'quick' : 'full'})`);
out.push('');
out.push(
  `(a) In-process, file-backed store (WAL, synchronous=NORMAL), ${m.batches} batches × ${fmtInt(m.perBatch)} calls, median per call. Wall = elapsed; CPU = user+system time of the process (robust to other load on the machine).`,
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
  `(b) HTTP, closed loop, ${P.conns} connections, ${P.dur / 1000} s per contender per round, ${P.rounds} rounds (medians):`,
);
out.push('');
out.push(
  table(
    ['contender', 'req/s', 'CPU µs/req', 'sys share', 'capacity req/s/core', 'util', 'errors'],
    names.map((n) => [
      n,
      fmtInt(http[n].rps),
      fmt(http[n].cpuUsPerReq),
      `${fmt(http[n].sysShare * 100, 0)} %`,
      fmtInt(1e6 / http[n].cpuUsPerReq),
      fmt(http[n].util, 2),
      String(http[n].errors),
    ]),
  ),
);
out.push('');
out.push(
  `Store part of admission over HTTP (WAL − stub, median of per-round differences): ${fmt(storeCostUs)} µs CPU per request.`,
);
out.push(`Rest of the gateway path (stub − passthrough): ${fmt(restCostUs)} µs CPU per request.`);
out.push('');
out.push(
  `Placement: ${Object.entries(place)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}`,
);
process.stdout.write(out.join('\n') + '\n');
const file = saveResult('admission', {
  bench: 'admission',
  params: P,
  machine: machineInfo(),
  placement: place,
  micro: m,
  rounds,
  http,
  storeCostUs,
  restCostUs,
  mem,
});
log(`saved ${file}`);
