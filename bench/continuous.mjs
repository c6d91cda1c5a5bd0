// Continuous benchmark: one command that runs the interleaved comparison of every way to run the
// gateway (and Portkey) and writes a dated table. Contenders, round-robin per round (starting contender rotating):
//   direct        load generator → simulator (the baseline every "added" figure is taken against)
//   passthrough   bench/passthrough.mjs, bare uWS → undici relay (the ceiling of a Node proxy)
//   embedded      the compiled gateway on a WAL file store, this thread writing (batched)
//   writer-thread the same with the SQLite writer thread (GatewayOptions.writerThread, as `serve` runs)
//   workers-2     `serve --workers 2` (a coordinator + two serving threads on the same file); its ELD is
//                 the coordinator's loop (the serving threads' own loops are not sampled)
//   pg+redis      a fleet node (`serve --db postgres://… --redis …`) on private PostgreSQL and Redis
//   portkey       @portkey-ai/gateway 1.15.2, when bench/portkey/node_modules is installed
// Measures per contender: closed-loop throughput and CPU µs/request; added latency p50/p99 at 1,000
// and 200 req/s (open loop, vs direct, per round then median); N concurrent streams: CPU per stream,
// added time to first content event p50/p99; peak RSS (VmHWM); and every gateway's event-loop delay
// p50/p99/max during the 1,000 req/s phase (servers/gateway.mjs --eld on: sampled only in that window,
// started and read with SIGUSR2).
// For `serve` (the writer-thread contender) also, per round: the WAL bytes per request at 1,000 req/s
// (a phase of its own after the latency phases, so that the read transaction holding the WAL does not
// touch the latency windows: bench/lib/wal.mjs), its scavenges per 1,000 requests and the bytes that
// survived them in the 1,000 req/s window, and
// its RSS at the end of an idle gap. Last in each round, every process idles for --idle-gap seconds
// (60; 15 with --quick), then each contender in the round's order gets 1,000 req/s with no warm-up
// for 10 s (4 s with --quick): the added p99 right after an idle minute. Scavenges are counted by the
// gateway (perf_hooks 'gc' entries of its serving thread); the surviving bytes come from V8's
// --trace-gc-nvp lines (bench/lib/gc-window.mjs). The first contender has been
// idle exactly the gap, the later ones the gap plus the windows before theirs. How much of `serve`'s
// WAL and database file the page cache still holds at the end of the gap is read with fincore
// (mincore(2)), with the gateway's major page faults in the window after it.
// Writes bench/results/continuous-<date>.md (and the JSON) and prints the markdown.
//
//   node bench/run.js continuous [--quick] [--rounds N] [--no-pg] [--only embedded,writer-thread,…] [--trace-gc] [--idle-gap S]
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { addGcLine, emptyGc, residentShare, servingThreadGc } from './lib/gc-window.mjs';
import { once } from './lib/load.mjs';
import { holdWal } from './lib/wal.mjs';
import {
  BENCH_DIR,
  CLK_TCK,
  RESULTS_DIR,
  cpuUs,
  ensureBuilt,
  memKb,
  serveThreadsMs,
  stopProcess,
  threadCpu,
} from './lib/proc.mjs';
import { havePostgres, startPostgres, startRedis } from './lib/services.mjs';
import {
  GEN_CORE,
  SUT_CORE,
  chatRequest,
  measureLatency,
  measureStreams,
  measureThroughput,
  memOf,
  placement,
  scriptSim,
  startGateway,
  startPassthrough,
  startPortkey,
  startSimulator,
  target,
} from './lib/stack.mjs';
import { fmt, fmtInt, log, machineInfo, median, parseFlags, rotate, saveResult, table } from './lib/stats.mjs';

const argv = process.argv.slice(2);
const flags = parseFlags(argv);
const noPg = argv.includes('--no-pg');
// --only embedded,writer-thread: start only these contenders beside direct and the passthrough (a
// diagnosis run: does a gateway's tail depend on the others sharing its core and disk?).
const onlyArg = argv.includes('--only') ? (argv[argv.indexOf('--only') + 1] ?? '') : null;
const wanted = (name) => onlyArg === null || onlyArg.split(',').includes(name);
const P = flags.quick
  ? {
      rounds: 2,
      conns: 50,
      tpWarm: 500,
      tpDur: 1500,
      latWarm: 1000,
      latDur: 2000,
      settleMs: 1000,
      streams: 200,
      chunks: 100,
      chunkDelayMs: 10,
      stWarm: 1500,
      stDur: 2000,
      walWarm: 500,
      walDur: 2000,
      idleGapMs: 15_000,
      idleDurMs: 4000,
    }
  : {
      rounds: 3,
      conns: 50,
      tpWarm: 1000,
      tpDur: 5000,
      latWarm: 3000,
      latDur: 5000,
      settleMs: 4000,
      streams: 200,
      chunks: 100,
      chunkDelayMs: 10,
      stWarm: 2000,
      stDur: 5000,
      walWarm: 1000,
      walDur: 4000,
      idleGapMs: 60_000,
      idleDurMs: 10_000,
    };
if (flags.rounds) P.rounds = flags.rounds;
if (argv.includes('--idle-gap')) P.idleGapMs = Number(argv[argv.indexOf('--idle-gap') + 1]) * 1000;
/** The contender measured as `serve` runs a database file: WAL, GC and idle RSS are read for it. */
const SERVE = 'writer-thread';
const RATES = [1000, 200];

const NS_MODEL = 'openai/gpt-6-luna'; // instant default answer
const ST_MODEL = 'openai/gpt-6.2-sol'; // scripted: P.chunks content events, P.chunkDelayMs apart
const messages = [{ role: 'user', content: 'Hello, how are you today?' }];
const NS_BODY = { model: NS_MODEL, messages, max_tokens: 64 };
const ST_BODY = { model: ST_MODEL, messages, max_tokens: 64, stream: true, stream_options: { include_usage: true } };

/** CPU time (µs) the given contenders' processes used so far, every thread. */
function othersCpuUs(list) {
  let sum = 0;
  for (const o of list) sum += cpuUs(o.pid);
  return sum;
}

/** One core's steal time so far from /proc/stat (its 8th field), ms. */
function stealMs(core) {
  const line = readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`cpu${core} `));
  return (Number((line ?? '').trim().split(/\s+/)[8] ?? NaN) * 1000) / CLK_TCK;
}

/**
 * Reads `{"eld":…}` lines a gateway started with --eld on prints on SIGUSR2. The report of a window
 * carries `gc` (the serving thread's collections, counted by the gateway) and `bytes`: what survived
 * its scavenges, when the gateway runs with --trace-gc-nvp (else zeros).
 */
function eldReader(proc) {
  let buf = '';
  const waiting = [];
  let gc = null;
  proc.child.stdout.on('data', (d) => {
    buf += d.toString('utf8');
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (!line.startsWith('{"eld":')) {
        if (gc !== null) addGcLine(gc, line);
        continue;
      }
      const eld = JSON.parse(line).eld;
      if (eld.started) gc = emptyGc();
      else if (gc !== null) {
        eld.bytes = { ...servingThreadGc(gc) };
        gc = null; // the window is over: later collections belong to no window
      }
      const w = waiting.shift();
      if (w) w(eld);
    }
  });
  return () =>
    new Promise((resolve) => {
      const t = setTimeout(() => resolve(null), 5000);
      waiting.push((x) => {
        clearTimeout(t);
        resolve(x);
      });
      process.kill(proc.pid, 'SIGUSR2');
    });
}

ensureBuilt();
const started = new Date();
log(`continuous: ${flags.quick ? 'quick' : 'full'} run, ${P.rounds} rounds`);
const sim = await startSimulator();
await scriptSim(sim.url, ST_MODEL, { chunks: P.chunks, chunkDelayMs: P.chunkDelayMs });
const pt = await startPassthrough(sim.url);
const gwArgs = ['--eld', 'on'];
// --trace-gc: every gateway prints V8's GC trace into its log (bench/results/logs/gw-*.log), to line
// its pauses up with the event-loop delay of a phase.
const gwNodeArgs = argv.includes('--trace-gc') ? ['--trace-gc'] : [];
const emb = wanted('embedded')
  ? await startGateway('gw-embedded', { upstream: sim.url, args: gwArgs, nodeArgs: gwNodeArgs })
  : null;
const wt = wanted('writer-thread')
  ? await startGateway('gw-writer-thread', {
      upstream: sim.url,
      args: [...gwArgs, '--writer-thread', 'on'],
      // One line per collection on stdout, counted per window by eldReader.
      nodeArgs: [...gwNodeArgs, '--trace-gc-nvp'],
    })
  : null;
const w2 = wanted('workers-2')
  ? await startGateway('gw-workers-2', { upstream: sim.url, args: [...gwArgs, '--workers', '2'], nodeArgs: gwNodeArgs })
  : null;
const notes = [];
let pgSrv = null;
let redisSrv = null;
let pgw = null;
if (onlyArg !== null) notes.push(`only: ${onlyArg} (--only), beside direct and the passthrough.`);
if (noPg || !wanted('pg+redis')) notes.push('pg+redis: left out (--no-pg or --only).');
else if (!havePostgres()) notes.push('pg+redis: left out (no PostgreSQL binaries or redis-server on this machine).');
else {
  const t0 = performance.now();
  // The database and Redis run on the load generator's core, like the simulator: the gateway's own
  // CPU is what the table compares.
  pgSrv = await startPostgres({ core: GEN_CORE });
  redisSrv = await startRedis({ core: GEN_CORE });
  pgw = await startGateway('gw-pg-redis', {
    upstream: sim.url,
    args: [...gwArgs, '--db', pgSrv.url, '--redis', redisSrv.url],
    nodeArgs: gwNodeArgs,
  });
  log(`pg+redis: private postgres + redis-server up in ${fmtInt(performance.now() - t0)} ms`);
}
const havePortkey =
  wanted('portkey') && existsSync(join(BENCH_DIR, 'portkey', 'node_modules', '@portkey-ai', 'gateway'));
const pk = havePortkey ? await startPortkey() : null;
if (!havePortkey) {
  notes.push(
    'portkey: left out (bench/portkey/node_modules is not installed: `npm ci --prefix bench/portkey --ignore-scripts`).',
  );
  log('portkey: bench/portkey/node_modules missing; skipped');
}

const simKey = { Authorization: 'Bearer sk-bench-upstream' };
const mk = (name, proc, headers, eld = false) => {
  const t = target(proc.url);
  return {
    name,
    proc,
    pid: proc.pid,
    target: t,
    req: chatRequest(t, headers, NS_BODY),
    streamReq: chatRequest(t, headers, ST_BODY),
    eld: eld ? eldReader(proc) : null,
    db: proc.db ?? null,
  };
};
const gwHeaders = (g) => ({ Authorization: `Bearer ${g.key}` });
const contenders = [
  mk('direct', sim, simKey),
  mk('passthrough', pt, simKey),
  ...(emb ? [mk('embedded', emb, gwHeaders(emb), true)] : []),
  ...(wt ? [mk('writer-thread', wt, gwHeaders(wt), true)] : []),
  ...(w2 ? [mk('workers-2', w2, gwHeaders(w2), true)] : []),
  ...(pgw ? [mk('pg+redis', pgw, gwHeaders(pgw), true)] : []),
  ...(pk
    ? [mk('portkey', pk, { ...simKey, 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${sim.url}/v1` })]
    : []),
];
const GATEWAYS = contenders.filter((c) => c.eld).map((c) => c.name);

let expectEvents = null;
for (const c of contenders) {
  const a = await once(c.target, c.req);
  const s = await once(c.target, c.streamReq);
  if (a.status !== 200 || !a.text.includes('chat.completion'))
    throw new Error(
      `${c.name}: non-streaming sanity check failed: ${a.status} ${a.error ?? ''} ${a.text.slice(0, 200)}`,
    );
  if (s.status !== 200 || !s.text.includes('[DONE]'))
    throw new Error(`${c.name}: streaming sanity check failed: ${s.status} ${s.error ?? ''} ${s.text.slice(0, 200)}`);
  if (expectEvents === null) expectEvents = s.events;
  else if (s.events !== expectEvents) log(`warning: ${c.name} relayed ${s.events} events, direct ${expectEvents}`);
}
const simPid = sim.pid;
const procs = {
  simulator: sim,
  passthrough: pt,
  embedded: emb,
  'writer-thread': wt,
  'workers-2': w2,
  'pg+redis': pgw,
  portkey: pk,
};
const place = placement(procs);
log(`placement: ${JSON.stringify(place)}`);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** Gateway's major page faults so far (/proc/<pid>/stat field 12). */
const majflt = (pid) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[9]);

/**
 * `serve`'s WAL bytes per request at 1,000 req/s: a read transaction holds the WAL for the window,
 * whose frames are then counted (bench/lib/wal.mjs). A phase of its own: a held WAL grows instead of
 * being reset, which the latency windows must not see.
 */
async function walPhase(c) {
  await sleep(P.settleMs);
  let held = null;
  const x = await measureLatency(c, {
    simPid,
    rate: 1000,
    conns: P.conns,
    warmupMs: P.walWarm,
    durationMs: P.walDur,
    onStart: async () => {
      for (let tries = 0; held === null && tries < 3000; tries++) {
        held = holdWal(c.db);
        if (held === null) await sleep(1);
      }
    },
  });
  await sleep(500); // the window's last holds and final log rows are committed within ~10 ms each
  const w = held?.end() ?? null;
  if (w === null) return { restarted: true, p50: x.p50 };
  const pageBytes = w.pageSize + 24;
  return {
    requests: x.ok,
    walBytesPerRequest: (w.frames * pageBytes) / x.ok,
    commitsPerRequest: w.commits / x.ok,
    pageSize: w.pageSize,
    p50: x.p50,
  };
}

/**
 * Every process idles P.idleGapMs, then each contender in turn answers 1,000 req/s with no warm-up:
 * the added tail right after an idle minute. For `serve`, its RSS and the page cache's share of its
 * WAL and database file at the end of the idle time, and its major faults and GCs in the window.
 */
async function idlePhase(order, round) {
  await sleep(P.idleGapMs);
  for (const c of order) {
    const s = c.name === SERVE ? serveIdleState(c) : null;
    const f0 = c.name === SERVE ? majflt(c.pid) : 0;
    const cpu0 = c.name === SERVE ? threadCpu(c.pid) : null;
    const x = await measureLatency(c, {
      simPid,
      rate: 1000,
      conns: P.conns,
      warmupMs: 0,
      durationMs: P.idleDurMs,
      onStart: c.eld ? () => c.eld() : null,
    });
    round.idle[c.name] = x;
    if (c.eld) round.idleEld[c.name] = await c.eld();
    if (s && cpu0) {
      // Which thread spent the window's CPU: a tail the serving loop's delay does not show is the
      // writer's commits or the other threads' (the checkpointer, V8's helpers) on the shared core.
      const threads = serveThreadsMs(cpu0, threadCpu(c.pid));
      round.idleMem[c.name] = { ...s, majorFaults: majflt(c.pid) - f0, threadsMs: threads };
    }
    log(
      `round ${rounds.length + 1} idle    ${c.name.padEnd(13)} p50 ${fmt(x.p50, 3)} p99 ${fmt(x.p99, 3)} max ${fmt(x.max ?? NaN, 1)} ms  err ${x.errors}${s ? `  rss ${fmt(s.rssMb)} MB, WAL ${s.walBytes === 0 ? 'empty' : `${fmt(s.walResident * 100, 0)} %`} / db ${fmt(s.dbResident * 100, 0)} % in the page cache, ${round.idleMem[c.name].majorFaults} major faults; CPU ms serving / writer / rest ${fmt(round.idleMem[c.name].threadsMs.serving, 0)} / ${fmt(round.idleMem[c.name].threadsMs.writer, 0)} / ${fmt(round.idleMem[c.name].threadsMs.rest, 0)}` : ''}; slowest by second ${x.bySecond.map((b) => fmt(b.max, 0)).join(' ')} ms`,
    );
  }
}

function serveIdleState(c) {
  const walBytes = statSync(`${c.db}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  return {
    rssMb: memKb(c.pid).rssKb / 1024,
    walBytes,
    // An empty WAL (the idle writer truncated it) has nothing the page cache could drop.
    walResident: walBytes === 0 ? 1 : residentShare(`${c.db}-wal`),
    dbResident: residentShare(c.db),
  };
}

const rounds = [];
for (let r = 0; r < P.rounds; r++) {
  const order = rotate(contenders, r);
  const round = {
    order: order.map((c) => c.name),
    tp: {},
    lat1000: {},
    lat200: {},
    st: {},
    eld: {},
    wal: {},
    idle: {},
    idleEld: {},
    idleMem: {},
  };
  for (const c of order) {
    const x = await measureThroughput(c, { simPid, conns: P.conns, warmupMs: P.tpWarm, durationMs: P.tpDur });
    round.tp[c.name] = x;
    log(
      `round ${r + 1} tp      ${c.name.padEnd(13)} ${fmtInt(x.rps)} req/s  ${fmt(x.sutCpuUsPerUnit)} µs/req  util ${fmt(x.sutUtil, 2)}  err ${x.errors}`,
    );
  }
  for (const rate of RATES) {
    for (const c of order) {
      // Every process under test shares core 0: the one measured before this one collects the
      // garbage of its load for a few seconds after it (V8's memory reducer: ~30–40 ms of CPU),
      // which landed in this contender's latency tail. Let it finish first.
      await new Promise((resolve) => setTimeout(resolve, P.settleMs));
      const others = contenders.filter((o) => o !== c && o.name !== 'direct');
      const before = { others: othersCpuUs(others), steal: stealMs(SUT_CORE) };
      // The event-loop delay window opens when the warm-up is over, with the latency window.
      const onStart = rate === 1000 && c.eld ? () => c.eld() : null;
      const x = await measureLatency(c, {
        simPid,
        rate,
        conns: P.conns,
        warmupMs: P.latWarm,
        durationMs: P.latDur,
        onStart,
      });
      // What else ran on the measured core meanwhile: the other contenders (idle, but collecting
      // garbage or ticking timers) and the hypervisor (steal: the VM's core given to another guest).
      x.othersCpuMs = (othersCpuUs(others) - before.others) / 1000;
      x.stealMs = stealMs(SUT_CORE) - before.steal;
      round[`lat${rate}`][c.name] = x;
      if (rate === 1000 && c.eld) round.eld[c.name] = await c.eld();
      const e = round.eld[c.name];
      const g = rate === 1000 && c.name === SERVE && e?.gc && e.bytes ? { ...e.bytes, ...e.gc } : null;
      log(
        `round ${r + 1} lat${rate} ${c.name.padEnd(13)} p50 ${fmt(x.p50, 3)} p99 ${fmt(x.p99, 3)} ms  achieved ${fmtInt(x.achieved)}/s  err ${x.errors}${rate === 1000 && e ? `  eld p99 ${fmt(e.p99, 2)} max ${fmt(e.max, 1)} ms` : ''}${g ? `  ${fmt((g.scavenges * 1000) / x.ok, 2)} scavenges/1,000 req, ${fmtInt(g.survivedBytes / x.ok)} + ${fmtInt(g.promotedBytes / x.ok)} B/req survived + promoted` : ''}  core ${SUT_CORE}: others ${fmt(x.othersCpuMs, 0)} ms CPU, steal ${fmt(x.stealMs, 0)} ms`,
      );
    }
  }
  for (const c of order.filter((o) => o.name === SERVE && o.db)) {
    const w = await walPhase(c);
    round.wal[c.name] = w;
    log(
      w.restarted
        ? `round ${r + 1} wal     ${c.name}: the WAL was restarted during the window; no figure`
        : `round ${r + 1} wal     ${c.name.padEnd(13)} ${fmtInt(w.walBytesPerRequest)} B/req (${w.pageSize}-byte pages), ${fmt(w.commitsPerRequest, 3)} commits/req, p50 ${fmt(w.p50, 2)} ms`,
    );
  }
  for (const c of order) {
    const x = await measureStreams(c, {
      simPid,
      streams: P.streams,
      warmupMs: P.stWarm,
      durationMs: P.stDur,
      expectEvents,
    });
    x.cpuUsPerStream = x.ok > 0 ? x.sutCpuUs / x.ok : NaN;
    round.st[c.name] = x;
    log(
      `round ${r + 1} st      ${c.name.padEnd(13)} ${x.ok} streams  ttfc p50 ${fmt(x.ttfcP50, 2)} p99 ${fmt(x.ttfcP99, 2)} ms  ${fmtInt(x.cpuUsPerStream)} µs/stream  short ${x.short}  err ${x.errors}`,
    );
  }
  if (P.idleGapMs > 0) await idlePhase(order, round);
  rounds.push(round);
}
const mem = memOf(procs);

const names = contenders.map((c) => c.name);
const med = (phase, n, key) => median(rounds.map((r) => r[phase][n]?.[key]));
const per = (phase, a, b, key, op) => median(rounds.map((r) => op(r[phase][a]?.[key], r[phase][b]?.[key])));
const minus = (x, y) => x - y;
const div = (x, y) => x / y;
const summary = {};
for (const n of names) {
  const memKey = n === 'direct' ? 'simulator' : n;
  summary[n] = {
    rps: med('tp', n, 'rps'),
    cpuUsPerReq: med('tp', n, 'sutCpuUsPerUnit'),
    cpuVsPassthrough: per('tp', n, 'passthrough', 'sutCpuUsPerUnit', div),
    tpVsPassthrough: per('tp', n, 'passthrough', 'rps', div),
    util: med('tp', n, 'sutUtil'),
    added1000P50: per('lat1000', n, 'direct', 'p50', minus),
    added1000P99: per('lat1000', n, 'direct', 'p99', minus),
    achieved1000: med('lat1000', n, 'achieved'),
    added200P50: per('lat200', n, 'direct', 'p50', minus),
    added200P99: per('lat200', n, 'direct', 'p99', minus),
    achieved200: med('lat200', n, 'achieved'),
    addedIdleP50: per('idle', n, 'direct', 'p50', minus),
    addedIdleP99: per('idle', n, 'direct', 'p99', minus),
    cpuUsPerStream: med('st', n, 'cpuUsPerStream'),
    streamCpuVsPassthrough: per('st', n, 'passthrough', 'cpuUsPerStream', div),
    addedTtfcP50: per('st', n, 'direct', 'ttfcP50', minus),
    addedTtfcP99: per('st', n, 'direct', 'ttfcP99', minus),
    eldP50: GATEWAYS.includes(n) ? median(rounds.map((r) => r.eld[n]?.p50)) : NaN,
    eldP99: GATEWAYS.includes(n) ? median(rounds.map((r) => r.eld[n]?.p99)) : NaN,
    eldMax: GATEWAYS.includes(n) ? Math.max(...rounds.map((r) => r.eld[n]?.max ?? NaN)) : NaN,
    peakRssMb: mem[memKey] ? mem[memKey].hwmKb / 1024 : NaN,
    others1000Ms: med('lat1000', n, 'othersCpuMs'),
    steal1000Ms: med('lat1000', n, 'stealMs'),
    errors: rounds.reduce(
      (a, r) =>
        a +
        (r.tp[n]?.errors ?? 0) +
        (r.lat1000[n]?.errors ?? 0) +
        (r.lat200[n]?.errors ?? 0) +
        (r.st[n]?.errors ?? 0) +
        (r.st[n]?.short ?? 0),
      0,
    ),
  };
}

/** `serve`'s per-request figures: WAL, collections (1,000 req/s window and the one after idle), idle RSS. */
/** Median over rounds of a window's collection figure per `k` requests ('eld'/'lat1000' or 'idleEld'/'idle'). */
const perK = (eldPhase, latPhase, key, k) =>
  median(
    rounds.map((r) => {
      const e = r[eldPhase][SERVE];
      const v = e?.gc?.[key] ?? e?.bytes?.[key];
      const ok = r[latPhase][SERVE]?.ok;
      return v !== undefined && ok ? (v * k) / ok : NaN;
    }),
  );
/**
 * A WAL window whose median latency is above this did not keep up with the rate (the machine is
 * shared): its commits carry many requests each and say nothing about 1,000 req/s (as in wal.mjs).
 */
const KEPT_UP_P50_MS = 5;
const walKept = rounds.map((r) => r.wal[SERVE]).filter((w) => w && !w.restarted && w.p50 <= KEPT_UP_P50_MS);
const serve = names.includes(SERVE)
  ? {
      walBytesPerRequest: median(walKept.map((w) => w.walBytesPerRequest)),
      walCommitsPerRequest: median(walKept.map((w) => w.commitsPerRequest)),
      walRounds: walKept.length,
      scavengesPer1000: perK('eld', 'lat1000', 'scavenges', 1000),
      scavengeMsPer1000: perK('eld', 'lat1000', 'scavengeMs', 1000),
      survivedPerRequest: perK('eld', 'lat1000', 'survivedBytes', 1),
      promotedPerRequest: perK('eld', 'lat1000', 'promotedBytes', 1),
      fullGcsPer1000: perK('eld', 'lat1000', 'full', 1000),
      allocatedPerRequest: perK('eld', 'lat1000', 'allocatedBytes', 1),
      idleScavengesPer1000: perK('idleEld', 'idle', 'scavenges', 1000),
      idleScavengeMsPer1000: perK('idleEld', 'idle', 'scavengeMs', 1000),
      rssIdleMb: median(rounds.map((r) => r.idleMem[SERVE]?.rssMb)),
      walResident: median(rounds.map((r) => r.idleMem[SERVE]?.walResident)),
      walIdleBytes: median(rounds.map((r) => r.idleMem[SERVE]?.walBytes)),
      dbResident: median(rounds.map((r) => r.idleMem[SERVE]?.dbResident)),
      idleMajorFaults: median(rounds.map((r) => r.idleMem[SERVE]?.majorFaults)),
      idleEldP99: median(rounds.map((r) => r.idleEld[SERVE]?.p99)),
      idleEldMax: Math.max(...rounds.map((r) => r.idleEld[SERVE]?.max ?? NaN)),
    }
  : null;

const machine = machineInfo();
const sat = (n, rate) => (summary[n][`achieved${rate}`] < 0.97 * rate ? ' (sat.)' : '');
const pair = (n, a, b, rate) =>
  n === 'direct' ? '—' : `${fmt(summary[n][a], 2)} / ${fmt(summary[n][b], 2)}${sat(n, rate)}`;
const out = [];
out.push(
  `## continuous benchmark, ${started.toISOString().slice(0, 10)} (${flags.quick ? 'quick' : 'full'}: ${P.rounds} rounds, medians)`,
);
out.push('');
out.push(
  `Command: \`node bench/run.js continuous${flags.quick ? ' --quick' : ''}${flags.rounds ? ` --rounds ${flags.rounds}` : ''}${noPg ? ' --no-pg' : ''}${onlyArg !== null ? ` --only ${onlyArg}` : ''}${argv.includes('--idle-gap') ? ` --idle-gap ${P.idleGapMs / 1000}` : ''}\` — commit ${machine.tree.commit?.slice(0, 12) ?? '?'}${machine.tree.dirty ? ' (src/ or config/ modified)' : ''}, started ${started.toISOString()}.`,
);
out.push('');
out.push(
  `Machine: ${machine.cores} cores (${machine.cpus.join(', ')}), Node ${machine.node}, load average at the end ${machine.loadavg.map((x) => fmt(x, 2)).join(' / ')} (1/5/15 min) — the cores may be shared with other work, so every figure is noisy. Placement: process under test on core 0; load generator, simulator${pgw ? ', postgres and redis-server' : ''} on core 1 (${Object.entries(
    place,
  )
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}).`,
);
out.push('');
out.push(
  `Throughput: closed loop, ${P.conns} connections, ${P.tpDur / 1000} s. Latency: open loop at 1,000 and 200 req/s, ${P.latDur / 1000} s each after a ${P.latWarm / 1000}-s warm-up at the same rate (and ${P.settleMs / 1000} s idle before it, so the previous contender's post-load garbage collection on the shared core is over), from the scheduled send time, added = contender − direct per round. Streams: ${P.streams} concurrent × ${expectEvents} events (${P.chunks} content events ${P.chunkDelayMs} ms apart), ${P.stDur / 1000} s window; TTFB = first content event. ELD = the gateway's event-loop delay (monitorEventLoopDelay, 1 ms resolution: an idle loop reads ≈ 1.1 ms, so the delay beyond the timer is the figure minus ≈ 1 ms) during the measured 1,000 req/s window.`,
);
out.push('');
out.push(
  table(
    [
      'contender',
      'req/s',
      'CPU µs/req',
      '× passthrough',
      'added p50 / p99 @1,000/s ms',
      'added p50 / p99 @200/s ms',
      'CPU µs/stream',
      '× passthrough',
      'added TTFB p50 / p99 ms',
      'ELD p50 / p99 / max ms',
      'peak RSS MB',
      'errors',
    ],
    names.map((n) => {
      const s = summary[n];
      return [
        n,
        fmtInt(s.rps),
        fmtInt(s.cpuUsPerReq),
        n === 'passthrough' || n === 'direct' ? '—' : `${fmt(s.cpuVsPassthrough, 2)}×`,
        pair(n, 'added1000P50', 'added1000P99', 1000),
        pair(n, 'added200P50', 'added200P99', 200),
        fmtInt(s.cpuUsPerStream),
        n === 'passthrough' || n === 'direct' ? '—' : `${fmt(s.streamCpuVsPassthrough, 2)}×`,
        n === 'direct' ? '—' : `${fmt(s.addedTtfcP50, 2)} / ${fmt(s.addedTtfcP99, 2)}`,
        GATEWAYS.includes(n) ? `${fmt(s.eldP50, 2)} / ${fmt(s.eldP99, 2)} / ${fmt(s.eldMax, 1)}` : '—',
        fmt(s.peakRssMb),
        String(s.errors),
      ];
    }),
  ),
);
out.push('');
const targetRows = [];
const idleOn = P.idleGapMs > 0;
for (const n of GATEWAYS) {
  const s = summary[n];
  const t = (name, shown, ok) => targetRows.push([n, name, shown, ok ? 'met' : '**missed**']);
  t('CPU/request ≤ 2.5× passthrough (stretch 2×)', `${fmt(s.cpuVsPassthrough, 2)}×`, s.cpuVsPassthrough <= 2.5);
  t('added p99 @1,000/s ≤ 3 ms, after a warm-up', `${fmt(s.added1000P99, 2)} ms`, s.added1000P99 <= 3);
  if (idleOn)
    t(
      `added p99 @1,000/s ≤ 3 ms, first ${P.idleDurMs / 1000} s after ${P.idleGapMs / 1000} s idle`,
      `${fmt(s.addedIdleP99, 2)} ms`,
      s.addedIdleP99 <= 3,
    );
  t('CPU/stream ≤ 1.25× passthrough', `${fmt(s.streamCpuVsPassthrough, 2)}×`, s.streamCpuVsPassthrough <= 1.25);
  t('peak RSS ≤ 140 MB (stretch 120 MB)', `${fmt(s.peakRssMb)} MB`, s.peakRssMb <= 140);
  t('added p50 @1,000/s ≤ 0.4 ms', `${fmt(s.added1000P50, 2)} ms`, s.added1000P50 <= 0.4);
  t(
    'added TTFB p50 ≤ 1 ms / p99 ≤ 5 ms',
    `${fmt(s.addedTtfcP50, 2)} / ${fmt(s.addedTtfcP99, 2)} ms`,
    s.addedTtfcP50 <= 1 && s.addedTtfcP99 <= 5,
  );
  t('ELD p99 @1,000/s ≤ 1 ms (raw histogram; ≈ 1 ms of it is the timer)', `${fmt(s.eldP99, 2)} ms`, s.eldP99 <= 1);
}
out.push(
  `During each contender's 1,000 req/s phase (${(P.latWarm + P.latDur) / 1000} s), what else ran on core ${SUT_CORE} (medians): ${names
    .filter((n) => n !== 'direct')
    .map(
      (n) =>
        `${n} — other contenders ${fmt(summary[n].others1000Ms, 0)} ms CPU, steal ${fmt(summary[n].steal1000Ms, 0)} ms`,
    )
    .join(
      '; ',
    )}. Steal is time the hypervisor gave the VM's core to another guest: a stall no process here can see or avoid.`,
);
out.push('');
if (idleOn) {
  out.push(
    `After an idle gap: every process idle ${P.idleGapMs / 1000} s, then each contender in the round's order at 1,000 req/s for ${P.idleDurMs / 1000} s with no warm-up (new connections), added = contender − direct per round (the later contenders of a round idle the gap plus the windows before theirs): ${names
      .filter((n) => n !== 'direct')
      .map((n) => `${n} p50 / p99 ${fmt(summary[n].addedIdleP50, 2)} / ${fmt(summary[n].addedIdleP99, 2)} ms`)
      .join('; ')}.`,
  );
  out.push('');
}
if (serve) {
  out.push(
    `\`serve\` (${SERVE}) per request: WAL bytes in a separate 1,000 req/s phase of ${P.walDur / 1000} s (a read transaction holds the WAL so every frame stays countable; ${serve.walRounds} of ${rounds.length} rounds kept: one whose p50 was above ${KEPT_UP_P50_MS} ms did not keep up with the rate and is left out); the serving thread's collections in the 1,000 req/s latency window (count and pauses: perf_hooks 'gc' entries; bytes allocated, surviving a scavenge and promoted: V8's --trace-gc-nvp); RSS and the page cache's share of the WAL and database file (fincore) at the end of the idle gap.`,
  );
  out.push('');
  out.push(
    table(
      [
        'WAL bytes/req',
        'commits/req',
        'scavenges /1,000 req',
        'scavenge ms /1,000 req',
        'allocated / survived + promoted B/req',
        'full GCs /1,000 req',
        'RSS peak / idle MB',
        ...(idleOn
          ? ['after idle: scavenges /1,000 req (ms)', 'WAL / db in page cache', 'major faults', 'ELD p99 / max ms']
          : []),
      ],
      [
        [
          fmtInt(serve.walBytesPerRequest),
          fmt(serve.walCommitsPerRequest, 3),
          fmt(serve.scavengesPer1000, 2),
          fmt(serve.scavengeMsPer1000, 1),
          `${fmtInt(serve.allocatedPerRequest)} / ${fmtInt(serve.survivedPerRequest)} + ${fmtInt(serve.promotedPerRequest)}`,
          fmt(serve.fullGcsPer1000, 3),
          `${fmt(summary[SERVE].peakRssMb)} / ${fmt(serve.rssIdleMb)}`,
          ...(idleOn
            ? [
                `${fmt(serve.idleScavengesPer1000, 2)} (${fmt(serve.idleScavengeMsPer1000, 1)})`,
                `${serve.walIdleBytes === 0 ? 'WAL empty' : `${fmt(serve.walResident * 100, 0)} %`} / ${fmt(serve.dbResident * 100, 0)} %`,
                fmt(serve.idleMajorFaults, 0),
                `${fmt(serve.idleEldP99, 2)} / ${fmt(serve.idleEldMax, 1)}`,
              ]
            : []),
        ],
      ],
    ),
  );
  out.push('');
}
out.push('Performance goals (same-run ratios):');
out.push('');
out.push(table(['gateway', 'target', 'measured', ''], targetRows));
if (notes.length) {
  out.push('');
  for (const x of notes) out.push(`- ${x}`);
}
const md = out.join('\n') + '\n';
process.stdout.write(md);
mkdirSync(RESULTS_DIR, { recursive: true });
const mdFile = join(RESULTS_DIR, `continuous-${started.toISOString().replace(/[:.]/g, '-')}.md`);
writeFileSync(mdFile, md);
const file = saveResult('continuous', {
  bench: 'continuous',
  params: P,
  quick: flags.quick,
  machine,
  placement: place,
  notes,
  rounds,
  summary,
  serve,
  mem,
});
log(`saved ${mdFile} and ${file}`);
for (const p of [pk, pgw, w2, wt, emb, pt, sim]) if (p) await stopProcess(p);
await pgSrv?.stop();
await redisSrv?.stop();
