// A/B of two gateway builds in one interleaved run: the bare passthrough, the gateway built from a
// base commit (`--base REV`, a `git archive` snapshot as `--rev` makes) and the gateway of the working
// tree, round-robin with the starting contender rotating each round, against one simulator. For
// measuring one change: the machine's drift cancels in the per-round ratios.
// Per round and contender: closed-loop throughput (50 connections, CPU µs/request of the process
// under test) and 200 concurrent streams × 50 content events 20 ms apart (CPU µs per relayed event,
// CPU µs per stream, time to the first content event); peak RSS (VmHWM) of each process at the end.
//
//   node bench/run.js ab --base REV [--quick] [--rounds N] [--writer-thread]
//        [--node-args-a "…"] [--node-args-b "…"] [--args-a "…"] [--args-b "…"] [--env-a "K=V …"] [--env-b "…"] [--same-tree]
//        [--json-only | --streams-only] [--rate R] [--idle-gap S [--idle-dur S]] [--writer-batch-b]
//
// --writer-thread runs both gateways with the SQLite writer thread, as `serve` does. --node-args-*
// pass Node/V8 flags to one side (memory trials), --args-* extra launcher flags (e.g. --metrics on).
// --same-tree runs the working tree on both sides (for flag-only comparisons).
// --rate R adds an open-loop phase at R req/s (latency p50/p99 and CPU µs/request at that rate: the
// cost of work a saturated run spreads over many requests per event-loop turn).
// --writer-batch-b makes side B's writer thread a SCHED_BATCH task (`chrt -b`): Linux then runs it
// when the serving thread yields instead of letting it take the core on wake-up (a scheduling trial;
// needs --writer-thread; the writer is found as the busiest thread after the main one under 3 s
// saturated, a load both sides get so neither is warmer).
// --idle-gap S ends each round with every process idle S seconds, then each contender in the round's
// order at R req/s (1,000 without --rate) for --idle-dur seconds (10) with no warm-up: the tail right
// after an idle gap, as the continuous benchmark measures it (the later contenders of a round idle the
// gap plus the windows before theirs; the rotating order spreads that over the sides).
import { execFileSync } from 'node:child_process';
import { closedLoop, once } from './lib/load.mjs';
import { ROOT, ensureBuilt, memKb, snapshotTree, stopProcess, threadCpu } from './lib/proc.mjs';
import {
  chatRequest,
  measureLatency,
  measureStreams,
  measureThroughput,
  scriptSim,
  startGateway,
  startPassthrough,
  startSimulator,
  target,
} from './lib/stack.mjs';
import { fmt, fmtInt, log, machineInfo, median, parseFlags, rotate, saveResult, table } from './lib/stats.mjs';

const argv = process.argv.slice(2);
const flags = parseFlags(argv);
const opt = (name, dflt = null) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const words = (s) => (s ?? '').split(' ').filter(Boolean);
const P = flags.quick
  ? {
      rounds: 3,
      conns: 50,
      tpWarm: 500,
      tpDur: 2000,
      streams: 200,
      chunks: 50,
      chunkDelayMs: 20,
      stWarm: 1000,
      stDur: 3000,
    }
  : {
      rounds: 5,
      conns: 50,
      tpWarm: 1000,
      tpDur: 4000,
      streams: 200,
      chunks: 50,
      chunkDelayMs: 20,
      stWarm: 2000,
      stDur: 5000,
    };
if (flags.rounds) P.rounds = flags.rounds;
const sameTree = argv.includes('--same-tree');
const base = opt('--base', 'HEAD');
const withPassthrough = !argv.includes('--no-passthrough');
// --json-only / --streams-only: one load only (what one phase leaves behind, say garbage for the
// next GC, then cannot land in the other phase's CPU figures).
const phases = { tp: !argv.includes('--streams-only'), st: !argv.includes('--json-only') };
const rate = opt('--rate') === null ? null : Number(opt('--rate'));
if (rate !== null && !(rate > 0)) throw new Error('--rate takes requests per second');
const idleGapMs = opt('--idle-gap') === null ? null : Number(opt('--idle-gap')) * 1000;
const idleDurMs = Number(opt('--idle-dur', '10')) * 1000;
if (idleGapMs !== null && !(idleGapMs > 0 && idleDurMs > 0)) throw new Error('--idle-gap and --idle-dur take seconds');

ensureBuilt(ROOT);
const snap = sameTree ? { dir: ROOT, commit: 'working tree' } : snapshotTree(base);
log(`ab: A = ${sameTree ? 'working tree' : snap.commit}, B = working tree; ${P.rounds} rounds`);
const ST_MODEL = 'openai/gpt-6.2-sol';
const messages = [{ role: 'user', content: 'Hello, how are you today?' }];
const NS_BODY = { model: 'openai/gpt-6-luna', messages, max_tokens: 64 };
const ST_BODY = { model: ST_MODEL, messages, max_tokens: 64, stream: true, stream_options: { include_usage: true } };

const sim = await startSimulator();
await scriptSim(sim.url, ST_MODEL, { chunks: P.chunks, chunkDelayMs: P.chunkDelayMs });
const common = argv.includes('--writer-thread') ? ['--writer-thread', 'on'] : [];
const pt = withPassthrough ? await startPassthrough(sim.url) : null;
/** `--env-a "K=V K2=V2"`: environment of one side (e.g. PI_V8_PRETENURING=on). */
const envOf = (side) =>
  Object.fromEntries(
    words(opt(`--env-${side}`)).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
const gwA = await startGateway('gateway-a', {
  upstream: sim.url,
  env: { PI_BENCH_TREE: snap.dir, ...envOf('a') },
  nodeArgs: words(opt('--node-args-a')),
  args: [...common, ...words(opt('--args-a'))],
});
const gwB = await startGateway('gateway-b', {
  upstream: sim.url,
  env: { PI_BENCH_TREE: ROOT, ...envOf('b') },
  nodeArgs: words(opt('--node-args-b')),
  args: [...common, ...words(opt('--args-b'))],
});

const simKey = { Authorization: 'Bearer sk-bench-upstream' };
const mk = (name, proc, headers) => {
  const t = target(proc.url);
  return {
    name,
    proc,
    pid: proc.pid,
    target: t,
    req: chatRequest(t, headers, NS_BODY),
    streamReq: chatRequest(t, headers, ST_BODY),
  };
};
const contenders = [
  ...(pt ? [mk('passthrough', pt, simKey)] : []),
  mk('A', gwA, { Authorization: `Bearer ${gwA.key}` }),
  mk('B', gwB, { Authorization: `Bearer ${gwB.key}` }),
];
let expectEvents = null;
for (const c of contenders) {
  const a = await once(c.target, c.req);
  const s = await once(c.target, c.streamReq);
  if (a.status !== 200 || s.status !== 200 || !s.text.includes('[DONE]'))
    throw new Error(`${c.name}: sanity check failed: ${a.status} ${s.status} ${a.text.slice(0, 200)}`);
  expectEvents ??= s.events;
}
if (argv.includes('--writer-batch-b')) {
  if (common.length === 0) throw new Error('--writer-batch-b needs --writer-thread');
  const a = contenders.find((c) => c.name === 'A');
  await closedLoop({ target: a.target, req: a.req, conns: P.conns, warmupMs: 0, durationMs: 3000 });
  const b = contenders.find((c) => c.name === 'B');
  const before = threadCpu(b.pid);
  await closedLoop({ target: b.target, req: b.req, conns: P.conns, warmupMs: 0, durationMs: 3000 });
  const after = threadCpu(b.pid);
  const spent = (k) => after[k] - (before[k] ?? 0);
  const writer = Object.keys(after)
    .filter((k) => k !== 'main')
    .sort((x, y) => spent(y) - spent(x))[0];
  const tid = writer?.split('#')[1];
  if (!tid) throw new Error('--writer-batch-b: no thread besides the main one');
  execFileSync('chrt', ['-b', '-p', '0', tid]);
  const share = spent(writer) / Object.keys(after).reduce((n, k) => n + spent(k), 0);
  log(
    `B's writer thread ${writer} (${Math.round(share * 100)} % of B's CPU): ${execFileSync('chrt', ['-p', tid], { encoding: 'utf8' }).split('\n')[0]}`,
  );
}

const rounds = [];
for (let r = 0; r < P.rounds; r++) {
  const order = rotate(contenders, r);
  const round = { tp: {}, st: {}, lat: {}, idle: {}, idleRssMb: {} };
  for (const c of phases.tp ? order : []) {
    const x = await measureThroughput(c, { simPid: sim.pid, conns: P.conns, warmupMs: P.tpWarm, durationMs: P.tpDur });
    round.tp[c.name] = x;
    log(
      `round ${r + 1} tp ${c.name.padEnd(12)} ${fmtInt(x.rps)} req/s  ${fmt(x.sutCpuUsPerUnit)} µs/req  util ${fmt(x.sutUtil, 2)}  err ${x.errors}`,
    );
  }
  for (const c of rate !== null ? order : []) {
    const x = await measureLatency(c, {
      simPid: sim.pid,
      rate,
      conns: P.conns,
      warmupMs: P.tpWarm,
      durationMs: P.tpDur,
    });
    round.lat[c.name] = x;
    log(
      `round ${r + 1} lat ${c.name.padEnd(11)} p50 ${fmt(x.p50, 3)} p99 ${fmt(x.p99, 3)} ms  ${fmt(x.sutCpuUsPerUnit)} µs/req  achieved ${fmtInt(x.achieved)}/s  err ${x.errors}`,
    );
  }
  for (const c of phases.st ? order : []) {
    const x = await measureStreams(c, {
      simPid: sim.pid,
      streams: P.streams,
      warmupMs: P.stWarm,
      durationMs: P.stDur,
      expectEvents,
    });
    round.st[c.name] = x;
    log(
      `round ${r + 1} st ${c.name.padEnd(12)} ${fmt(x.sutCpuUsPerUnit, 2)} µs/event  ttfc p50 ${fmt(x.ttfcP50, 2)} ms  short ${x.short}  err ${x.errors}`,
    );
  }
  if (idleGapMs !== null) {
    await new Promise((resolve) => setTimeout(resolve, idleGapMs));
    // RSS at the end of the gap, every contender read at the same moment: what the gap gave back.
    for (const c of order) round.idleRssMb[c.name] = memKb(c.pid).rssKb / 1024;
    for (const c of order) {
      const x = await measureLatency(c, {
        simPid: sim.pid,
        rate: rate ?? 1000,
        conns: P.conns,
        warmupMs: 0,
        durationMs: idleDurMs,
      });
      round.idle[c.name] = x;
      log(
        `round ${r + 1} idle ${c.name.padEnd(10)} RSS ${fmt(round.idleRssMb[c.name], 1)} MB; p50 ${fmt(x.p50, 3)} p99 ${fmt(x.p99, 3)} max ${fmt(x.max ?? Number.NaN, 1)} ms  ${fmt(x.sutCpuUsPerUnit)} µs/req  err ${x.errors}; max by second ${x.bySecond.map((b) => fmt(b.max, 0)).join(' ')}`,
      );
    }
  }
  rounds.push(round);
}
const mem = Object.fromEntries(contenders.map((c) => [c.name, memKb(c.pid)]));
for (const p of [pt, gwA, gwB, sim]) if (p) await stopProcess(p);

const names = contenders.map((c) => c.name);
const med = (phase, n, key) => median(rounds.map((r) => r[phase][n]?.[key]));
const ratio = (phase, key) => median(rounds.map((r) => (r[phase].B ? r[phase].B[key] / r[phase].A[key] : NaN)));
const rows = names.map((n) => [
  n,
  fmtInt(med('tp', n, 'rps')),
  fmt(med('tp', n, 'sutCpuUsPerUnit')),
  fmt(med('st', n, 'sutCpuUsPerUnit'), 2),
  fmt(med('st', n, 'sutCpuUsPerUnit') * expectEvents, 0),
  fmt(med('st', n, 'ttfcP50'), 2),
  fmt(med('st', n, 'ttfcP99'), 2),
  fmt(mem[n].hwmKb / 1024, 0),
]);
const out = [];
out.push(`## A/B: A = ${snap.commit}, B = working tree${common.length ? ' (writer thread)' : ''}`);
out.push('');
out.push(
  `${P.rounds} rounds; closed loop ${P.conns} connections ${P.tpDur / 1000} s; ${P.streams} streams × ${expectEvents} events, ${P.stDur / 1000} s. Medians over rounds. Load average at the end: ${machineInfo()
    .loadavg.map((x) => x.toFixed(2))
    .join(' ')}`,
);
out.push('');
out.push(
  table(
    [
      'contender',
      'req/s',
      'CPU µs/req',
      'CPU µs/event',
      'CPU µs/stream',
      'first content p50 ms',
      'p99 ms',
      'peak RSS MB',
    ],
    rows,
  ),
);
out.push('');
if (rate !== null) {
  const latRows = names.map((n) => [
    n,
    fmt(med('lat', n, 'p50'), 3),
    fmt(med('lat', n, 'p99'), 3),
    fmt(med('lat', n, 'sutCpuUsPerUnit')),
  ]);
  out.push(`At ${fmtInt(rate)} req/s (open loop, ${P.tpDur / 1000} s per round):`);
  out.push('');
  out.push(table(['contender', 'p50 ms', 'p99 ms', 'CPU µs/req'], latRows));
  out.push('');
  out.push(
    `B / A per round at ${fmtInt(rate)} req/s, median: CPU/req ${fmt(ratio('lat', 'sutCpuUsPerUnit'), 3)}, p99 ${fmt(ratio('lat', 'p99'), 3)}`,
  );
  out.push('');
}
if (idleGapMs !== null) {
  const idleRows = names.map((n) => [
    n,
    fmt(med('idle', n, 'p50'), 3),
    fmt(med('idle', n, 'p99'), 3),
    rounds.map((r) => fmt(r.idle[n]?.p99, 1)).join(' · '),
    fmt(med('idle', n, 'sutCpuUsPerUnit')),
    fmt(median(rounds.map((r) => r.idleRssMb[n])), 1),
  ]);
  out.push(
    `In the first ${idleDurMs / 1000} s at ${fmtInt(rate ?? 1000)} req/s after ${idleGapMs / 1000} s idle (no warm-up):`,
  );
  out.push('');
  out.push(
    table(['contender', 'p50 ms', 'p99 ms', 'p99 per round', 'CPU µs/req', "RSS at the gap's end MB"], idleRows),
  );
  out.push('');
  out.push(
    `B / A per round after the idle gap, median: p99 ${fmt(ratio('idle', 'p99'), 3)}, CPU/req ${fmt(ratio('idle', 'sutCpuUsPerUnit'), 3)}`,
  );
  out.push('');
}
out.push(
  `B / A per round, median: CPU/req ${fmt(ratio('tp', 'sutCpuUsPerUnit'), 3)}, req/s ${fmt(ratio('tp', 'rps'), 3)}, CPU/event ${fmt(ratio('st', 'sutCpuUsPerUnit'), 3)}`,
);
if (pt) {
  const vs = (n, phase) =>
    median(rounds.map((r) => (r[phase][n] ? r[phase][n].sutCpuUsPerUnit / r[phase].passthrough.sutCpuUsPerUnit : NaN)));
  out.push(
    `vs passthrough, CPU/req: A ${fmt(vs('A', 'tp'), 2)}×, B ${fmt(vs('B', 'tp'), 2)}×; CPU/event: A ${fmt(vs('A', 'st'), 2)}×, B ${fmt(vs('B', 'st'), 2)}×`,
  );
}
const file = saveResult('ab', { bench: 'ab', params: P, base: snap.commit, argv, machine: machineInfo(), rounds, mem });
out.push('');
out.push(`Raw: ${file}`);
process.stdout.write(out.join('\n') + '\n');
