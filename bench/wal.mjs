// WAL benchmark: what the SQLite writer puts on disk per request when the gateway runs as `serve`
// does (the compiled gateway with its writer thread, on a WAL file), answering an open-loop load at a
// fixed rate (default 1,000 req/s) from the simulator.
//
// How the bytes are counted: when the measured window starts, this process opens the database
// read-only and holds a read transaction for the whole window. A reader's snapshot keeps the WAL from
// being restarted, so every frame committed during the window stays in the file; the window's frames
// are the wal-index's frame count (mxFrame, read from the -shm header) at its end minus at its start.
// The frames are then read back from the WAL: a frame with a database size in its header ends a commit
// (commits per request), and each frame's page number is mapped to its table or index (dbstat), which
// says where the bytes go. A round whose WAL was restarted anyway (the salt in the header changed)
// is reported and left out, and so is a round that did not keep up with the rate (its median latency
// above KEPT_UP_P50_MS; up to three times the rounds asked for are run). Each round starts a fresh
// gateway on a fresh database.
//
//   node bench/run.js wal [--quick] [--rounds N] [--rate R] [--seconds S] [--rev REV]
import { ensureBuilt } from './lib/proc.mjs';
import { chatRequest, measureLatency, startGateway, startSimulator, target } from './lib/stack.mjs';
import { fmt, fmtInt, log, machineInfo, median, numberArg, parseFlags, saveResult, table } from './lib/stats.mjs';
import { holdWal } from './lib/wal.mjs';

const argv = process.argv.slice(2);
const flags = parseFlags(argv);
const P = {
  rounds: flags.rounds ?? (flags.quick ? 1 : 3),
  rate: numberArg(argv, 'rate', 1000),
  warmMs: flags.quick ? 1500 : 3000,
  durMs: numberArg(argv, 'seconds', flags.quick ? 3 : 10) * 1000,
  /** After the window: the last requests' holds and final log rows wait up to ~10 ms each. */
  tailMs: 500,
  conns: 64,
};

/**
 * A round whose median latency is above this did not keep up with the rate (requests queued: the
 * machine is shared): its commits carry many requests each and say nothing about the rate asked for.
 */
const KEPT_UP_P50_MS = 5;

const messages = [{ role: 'user', content: 'Hello, how are you today?' }];
const BODY = { model: 'openai/gpt-6-luna', messages, max_tokens: 64 };

async function round(sim, i) {
  const gw = await startGateway(`gw-wal-${i}`, { upstream: sim.url, args: ['--writer-thread', 'on'] });
  try {
    const t = target(gw.url);
    const c = { pid: gw.pid, target: t, req: chatRequest(t, { Authorization: `Bearer ${gw.key}` }, BODY) };
    let held = null;
    const r = await measureLatency(c, {
      simPid: sim.pid,
      rate: P.rate,
      conns: P.conns,
      warmupMs: P.warmMs,
      durationMs: P.durMs,
      onStart: async () => {
        // Under load frames are almost always waiting for the checkpointer; after a quiet moment
        // the next commit brings some.
        for (let tries = 0; held === null && tries < 3000; tries++) {
          held = holdWal(gw.db);
          if (held === null) await new Promise((r) => setTimeout(r, 1));
        }
        if (held === null) throw new Error('could not begin a read transaction that holds the WAL');
      },
    });
    await new Promise((res) => setTimeout(res, P.tailMs));
    const w = held.end();
    if (w === null) return { round: i, restarted: true };
    const { frames, commits, pageSize, trees } = w;
    const n = r.ok;
    return {
      round: i,
      requests: n,
      errors: r.errors,
      pageSize,
      frames,
      commits,
      walBytesPerRequest: (frames * (pageSize + 24)) / n,
      framesPerRequest: frames / n,
      commitsPerRequest: commits / n,
      framesPerCommit: frames / commits,
      p50: r.p50,
      p99: r.p99,
      trees: trees.map(([name, f]) => ({ name, framesPerRequest: f / n })),
    };
  } finally {
    await gw.stop();
  }
}

ensureBuilt();
log(`wal: ${P.rounds} round(s) at ${P.rate} req/s for ${P.durMs / 1000} s after ${P.warmMs / 1000} s of warm-up`);
const sim = await startSimulator();
const rounds = [];
try {
  for (let i = 0; rounds.length < P.rounds && i < P.rounds * 3; i++) {
    const r = await round(sim, i);
    if (r.restarted) log(`round ${i}: the WAL was restarted during the window; left out`);
    else if (!(r.p50 <= KEPT_UP_P50_MS))
      log(
        `round ${i}: did not keep up with ${P.rate} req/s (p50 ${fmt(r.p50, 0)} ms: the machine is busy); left out ` +
          `(${fmt(r.walBytesPerRequest / 1024, 2)} KiB WAL/request, ${fmt(r.commitsPerRequest, 3)} commits/request)`,
      );
    else {
      log(
        `round ${i}: ${fmtInt(r.requests)} requests, ${fmt(r.walBytesPerRequest / 1024, 2)} KiB WAL/request, ` +
          `${fmt(r.commitsPerRequest, 3)} commits/request, ${fmt(r.framesPerCommit, 1)} frames/commit`,
      );
      rounds.push(r);
    }
  }
} finally {
  await sim.stop();
}
if (rounds.length === 0) throw new Error('no round measured');
const med = (k) => median(rounds.map((r) => r[k]));
const treeNames = [...new Set(rounds.flatMap((r) => r.trees.map((t) => t.name)))];
const treeMed = treeNames
  .map((name) => ({
    name,
    framesPerRequest: median(rounds.map((r) => r.trees.find((t) => t.name === name)?.framesPerRequest ?? 0)),
  }))
  .sort((a, b) => b.framesPerRequest - a.framesPerRequest);
const summary = {
  walBytesPerRequest: med('walBytesPerRequest'),
  framesPerRequest: med('framesPerRequest'),
  commitsPerRequest: med('commitsPerRequest'),
  framesPerCommit: med('framesPerCommit'),
  p50: med('p50'),
  p99: med('p99'),
};
const md = [
  `## WAL per request, \`serve\` (writer thread) at ${P.rate} req/s, median of ${rounds.length} round(s)`,
  '',
  table(
    ['WAL bytes/request', 'frames/request', 'commits/request', 'frames/commit', 'p50 ms', 'p99 ms'],
    [
      [
        fmtInt(summary.walBytesPerRequest),
        fmt(summary.framesPerRequest, 2),
        fmt(summary.commitsPerRequest, 3),
        fmt(summary.framesPerCommit, 1),
        fmt(summary.p50, 2),
        fmt(summary.p99, 2),
      ],
    ],
  ),
  '',
  'Frames per request by b-tree:',
  '',
  table(
    ['b-tree', 'frames/request'],
    treeMed.map((t) => [t.name, fmt(t.framesPerRequest, 3)]),
  ),
  '',
].join('\n');
process.stdout.write(`${md}\n`);
const file = saveResult('wal', { machine: machineInfo(), params: P, summary, trees: treeMed, rounds });
log(`wrote ${file}`);
