// What `serve --workers N` costs per request: the gateway as `serve` runs it on a database
// file with one serving thread (the writer thread on: `workers-1`) against `--workers 2` (a
// coordinator and two serving threads sharing its state by messages), interleaved per round. CPU is
// the whole process's (/proc: every thread summed) per answered request, at a fixed 1,000 req/s
// (the coordination cost per request, without saturation effects) and at saturation (50
// connections, closed loop). Both gateways on core 0, so on a 2-core machine the workers share one
// core: the figure is the coordination cost, not the gain from more cores (with more cores the
// throughput row shows that gain). Target: summed CPU per request with 2 workers ≤ 1.2× one.
//
// `--all-cores`: both gateways may run on every core (the load generator and simulator still on
// core 1): on a 2-core machine the two serving threads then get a core each part of the time, and
// the per-request CPU shows less of the context switching that four threads on one core cost.
//
// "of it main thread": the main thread's part of that CPU — under --workers the coordinator's work per
// request, the one thread every serving thread depends on (what bounds adding threads on a larger
// host); under one thread, the whole event loop's.
//
// `--pg`: a fleet node instead (private PostgreSQL and Redis on the load generator's core, escrow
// on): one thread (`fleet-1`), `--workers 2` taking holds from the room its slices lend to shared
// memory (`fleet-2`), and `--workers 2` with every hold and rate decision by message (`fleet-2-msg`,
// the baseline the shared memory is measured against).
//
// `--warm-s S` (20; 4 with --quick): before the first round each gateway serves S seconds at
// saturation, so that the rounds compare compiled code with compiled code. Each serving thread is an
// isolate of its own that compiles the request path itself from the requests it sees, so two
// threads sharing the load take longer than one to reach the same code: measured on this machine,
// V8's helper threads (compiling) still used ~174 µs per request at 1,000 req/s after 7 s of load
// under --workers 2 (against ~36 for one thread), ~98 after 9 s and ~32 after 31 s.
//
//   node bench/run.js workers [--quick] [--rounds N] [--warm-s S] [--all-cores] [--pg]
import { havePostgres, startPostgres, startRedis } from './lib/services.mjs';
import { chatRequest, measureLatency, measureThroughput, startGateway, startSimulator, target } from './lib/stack.mjs';
import { readFileSync } from 'node:fs';
import { CLK_TCK, CORES, ensureBuilt, memKb, stopProcess } from './lib/proc.mjs';
import { closedLoop } from './lib/load.mjs';
import {
  fmt,
  fmtInt,
  log,
  machineInfo,
  median,
  numberArg,
  parseFlags,
  rotate,
  saveResult,
  table,
} from './lib/stats.mjs';

const flags = parseFlags(process.argv.slice(2));

/** CPU µs used so far by the process `pid` and by its main thread alone (the coordinator under
 *  --workers; under one thread, the whole gateway's event loop). */
function cpuUs(pid) {
  const read = (path) => {
    const s = readFileSync(path, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1e6) / CLK_TCK;
  };
  return { process: read(`/proc/${pid}/stat`), main: read(`/proc/${pid}/task/${pid}/stat`) };
}

/** Runs `measure` and adds `mainCpuUsPerUnit`: the main thread's share of the process's CPU in that
 *  time, times the CPU per request the measurement reports. */
async function withMainShare(pid, measure) {
  const a = cpuUs(pid);
  const x = await measure();
  const b = cpuUs(pid);
  const share = (b.main - a.main) / Math.max(1, b.process - a.process);
  return { ...x, mainCpuUsPerUnit: share * x.sutCpuUsPerUnit };
}
const ROUNDS = flags.rounds ?? (flags.quick ? 2 : 3);
const DUR = flags.quick ? 2000 : 4000;
const WARM = flags.quick ? 500 : 1000;
const WARM_S = numberArg(process.argv, 'warm-s', flags.quick ? 4 : 20);
if (!Number.isFinite(WARM_S) || WARM_S < 0) throw new Error('--warm-s takes a number of seconds (0 or more)');
// The continuous benchmark's non-streamed request (an instant default answer from the simulator).
const BODY = {
  model: 'openai/gpt-6-luna',
  messages: [{ role: 'user', content: 'Hello, how are you today?' }],
  max_tokens: 64,
};

ensureBuilt();
const sim = await startSimulator();
const ALL_CORES = process.argv.includes('--all-cores');
const gateway = (name, args) =>
  startGateway(name, { upstream: sim.url, args, ...(ALL_CORES ? { core: `0-${CORES - 1}` } : {}) });
const PG = process.argv.includes('--pg');
if (PG && !havePostgres()) throw new Error('--pg needs the PostgreSQL binaries and redis-server');
const pgSrv = PG ? await startPostgres({ core: 1 }) : null;
const redisSrv = PG ? await startRedis({ core: 1 }) : null;
// Each fleet contender its own database (seeded with its own master key), one Redis.
const fleet = async (name) => ['--db', await pgSrv.createDatabase(name), '--redis', redisSrv.url];
const procs = PG
  ? [
      ['fleet-1', await gateway('gw-fleet-1', await fleet('fleet_1'))],
      ['fleet-2', await gateway('gw-fleet-2', [...(await fleet('fleet_2')), '--workers', '2'])],
      [
        'fleet-2-msg',
        await gateway('gw-fleet-2-msg', [
          ...(await fleet('fleet_2_msg')),
          '--workers',
          '2',
          '--shared-admission',
          'off',
        ]),
      ],
    ]
  : [
      ['workers-1', await gateway('gw-workers-1', ['--writer-thread', 'on'])],
      ['workers-2', await gateway('gw-workers-2', ['--workers', '2'])],
    ];
const mk = (name, proc) => {
  const t = target(proc.url);
  return { name, proc, pid: proc.pid, target: t, req: chatRequest(t, { Authorization: `Bearer ${proc.key}` }, BODY) };
};
const contenders = procs.map(([name, proc]) => mk(name, proc));
const [ONE, TWO] = PG ? ['fleet-1', 'fleet-2'] : ['workers-1', 'workers-2'];
const rounds = [];
try {
  for (const c of WARM_S > 0 ? contenders : []) {
    log(`warming ${c.name}: ${WARM_S} s at saturation`);
    const w = await closedLoop({ target: c.target, req: c.req, conns: 50, warmupMs: 0, durationMs: WARM_S * 1000 });
    if (w.errors > 0) log(`warming ${c.name}: ${w.errors} errors`);
  }
  for (let r = 0; r < ROUNDS; r++) {
    const round = { fixed: {}, sat: {} };
    for (const c of rotate(contenders, r)) {
      const x = await withMainShare(c.pid, () =>
        measureLatency(c, { simPid: sim.pid, rate: 1000, conns: 50, warmupMs: WARM, durationMs: DUR }),
      );
      round.fixed[c.name] = x;
      log(
        `round ${r + 1} 1000/s ${c.name} ${fmt(x.sutCpuUsPerUnit)} µs/req  p50 ${fmt(x.p50, 3)} p99 ${fmt(x.p99, 3)} ms  err ${x.errors}`,
      );
    }
    for (const c of rotate(contenders, r)) {
      const x = await withMainShare(c.pid, () =>
        measureThroughput(c, { simPid: sim.pid, conns: 50, warmupMs: WARM, durationMs: DUR }),
      );
      round.sat[c.name] = x;
      log(`round ${r + 1} sat    ${c.name} ${fmtInt(x.rps)} req/s  ${fmt(x.sutCpuUsPerUnit)} µs/req  err ${x.errors}`);
    }
    rounds.push(round);
  }
} finally {
  const rss = Object.fromEntries(contenders.map((c) => [c.name, memKb(c.pid)]));
  for (const [, p] of procs) await stopProcess(p);
  await stopProcess(sim);
  await redisSrv?.stop();
  await pgSrv?.stop();
  const med = (phase, name, key) => median(rounds.map((r) => r[phase][name]?.[key]));
  const rows = contenders.map((c) => [
    c.name,
    fmt(med('fixed', c.name, 'sutCpuUsPerUnit')),
    fmt(med('fixed', c.name, 'mainCpuUsPerUnit')),
    `${fmt(med('fixed', c.name, 'p50'), 3)} / ${fmt(med('fixed', c.name, 'p99'), 3)}`,
    fmtInt(med('sat', c.name, 'rps')),
    fmt(med('sat', c.name, 'sutCpuUsPerUnit')),
    fmt(med('sat', c.name, 'mainCpuUsPerUnit')),
    fmt((rss[c.name]?.hwmKb ?? NaN) / 1024),
  ]);
  const ratio = med('fixed', TWO, 'sutCpuUsPerUnit') / med('fixed', ONE, 'sutCpuUsPerUnit');
  const satRatio = med('sat', TWO, 'sutCpuUsPerUnit') / med('sat', ONE, 'sutCpuUsPerUnit');
  const msg = PG
    ? [
        med('fixed', 'fleet-2-msg', 'sutCpuUsPerUnit') / med('fixed', ONE, 'sutCpuUsPerUnit'),
        med('sat', 'fleet-2-msg', 'sutCpuUsPerUnit') / med('sat', ONE, 'sutCpuUsPerUnit'),
      ]
    : null;
  const report = [
    `### serve --workers${PG ? ' on a fleet node (PostgreSQL + Redis, escrow)' : ''}: CPU per request summed over every thread (${new Date().toISOString().slice(0, 10)}, ${ROUNDS} rounds after a ${WARM_S}-s warm-up of each gateway, medians; gateways on ${ALL_CORES ? 'every core' : 'core 0'})`,
    '',
    table(
      [
        'gateway',
        'CPU µs/req @1,000/s',
        'of it main thread',
        'latency p50 / p99 @1,000/s ms',
        'req/s (50 conns)',
        'CPU µs/req at saturation',
        'of it main thread',
        'peak RSS MB',
      ],
      rows,
    ),
    '',
    `--workers 2 ÷ one thread, CPU per request: ${fmt(ratio, 2)}× at 1,000 req/s, ${fmt(satRatio, 2)}× at saturation — target ≤ 1.2×: **${ratio <= 1.2 ? 'met' : 'missed'}** at 1,000 req/s, **${satRatio <= 1.2 ? 'met' : 'missed'}** at saturation.`,
    ...(msg
      ? [
          '',
          `Without shared memory (every hold and rate decision by message): ${fmt(msg[0], 2)}× at 1,000 req/s, ${fmt(msg[1], 2)}× at saturation.`,
        ]
      : []),
  ].join('\n');
  process.stdout.write(report + '\n');
  log(
    `saved ${saveResult(PG ? 'workers-pg' : 'workers', { machine: machineInfo(), warmS: WARM_S, rounds, ratio, satRatio, msg })}`,
  );
}
