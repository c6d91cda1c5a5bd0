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
import { closeSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ROOT, ensureBuilt } from './lib/proc.mjs';
import { chatRequest, measureLatency, startGateway, startSimulator, target } from './lib/stack.mjs';
import { fmt, fmtInt, log, machineInfo, median, parseFlags, saveResult, table } from './lib/stats.mjs';

const Database = createRequire(join(ROOT, 'package.json'))('better-sqlite3');

const argv = process.argv.slice(2);
const flags = parseFlags(argv);
const arg = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : dflt;
};
const P = {
  rounds: flags.rounds ?? (flags.quick ? 1 : 3),
  rate: arg('--rate', 1000),
  warmMs: flags.quick ? 1500 : 3000,
  durMs: arg('--seconds', flags.quick ? 3 : 10) * 1000,
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

/**
 * The wal-index header (the first of its two copies, which must agree): frames, salt, page size; and
 * how many frames the last checkpoint copied (nBackfill). `fd` stays open for the whole round: closing
 * a descriptor of the -shm file would drop every POSIX lock this process holds on it, the reader's too.
 */
function walIndex(fd) {
  const b = Buffer.alloc(100);
  for (let tries = 0; tries < 100; tries++) {
    readSync(fd, b, 0, 100, 0);
    if (b.subarray(0, 48).equals(b.subarray(48, 96))) {
      return {
        mxFrame: b.readUInt32LE(16),
        salt: b.subarray(32, 40).toString('hex'),
        pageSize: b.readUInt16LE(14),
        backfilled: b.readUInt32LE(96),
      };
    }
  }
  throw new Error('the wal-index header never read consistently');
}

/** Frames [from, to) of the WAL: commits among them and frames per page number. */
function walFrames(dbFile, pageSize, from, to) {
  const fd = openSync(`${dbFile}-wal`, 'r');
  const head = Buffer.alloc(24);
  const pages = new Map();
  let commits = 0;
  try {
    for (let i = from; i < to; i++) {
      readSync(fd, head, 0, 24, 32 + i * (pageSize + 24));
      const pgno = head.readUInt32BE(0);
      if (head.readUInt32BE(4) !== 0) commits++;
      pages.set(pgno, (pages.get(pgno) ?? 0) + 1);
    }
  } finally {
    closeSync(fd);
  }
  return { commits, pages };
}

/** Frames per b-tree (table or index name), largest first. */
function byTree(dbFile, pages) {
  const db = new Database(dbFile, { readonly: true });
  try {
    const owner = new Map(
      db
        .prepare('SELECT pageno, name FROM dbstat')
        .all()
        .map((r) => [r.pageno, r.name]),
    );
    const out = new Map();
    for (const [pgno, n] of pages) {
      const name = owner.get(pgno) ?? '(freelist or new)';
      out.set(name, (out.get(name) ?? 0) + n);
    }
    return [...out.entries()].sort((a, b) => b[1] - a[1]);
  } finally {
    db.close();
  }
}

async function round(sim, i) {
  const gw = await startGateway(`gw-wal-${i}`, { upstream: sim.url, args: ['--writer-thread', 'on'] });
  try {
    const t = target(gw.url);
    const c = { pid: gw.pid, target: t, req: chatRequest(t, { Authorization: `Bearer ${gw.key}` }, BODY) };
    let reader = null;
    let start = null;
    let shm = null;
    const r = await measureLatency(c, {
      simPid: sim.pid,
      rate: P.rate,
      conns: P.conns,
      warmupMs: P.warmMs,
      durationMs: P.durMs,
      onStart: () => {
        reader = new Database(gw.db, { readonly: true });
        shm = openSync(`${gw.db}-shm`, 'r');
        // A read transaction that began on a WAL every frame of which was copied reads the database
        // file alone and does not keep the WAL from a restart: begin again until frames were left.
        for (let tries = 0; tries < 1000; tries++) {
          const before = walIndex(shm);
          reader.exec('BEGIN');
          reader.prepare('SELECT COUNT(*) FROM wallets').get();
          start = walIndex(shm);
          if (before.backfilled < before.mxFrame && before.salt === start.salt && start.backfilled < before.mxFrame)
            return;
          reader.exec('COMMIT');
        }
        throw new Error('could not begin a read transaction that holds the WAL');
      },
    });
    await new Promise((res) => setTimeout(res, P.tailMs));
    const end = walIndex(shm);
    const { commits, pages } =
      end.salt === start.salt ? walFrames(gw.db, start.pageSize, start.mxFrame, end.mxFrame) : {};
    reader.exec('COMMIT');
    reader.close();
    closeSync(shm);
    if (end.salt !== start.salt) return { round: i, restarted: true };
    const frames = end.mxFrame - start.mxFrame;
    const trees = byTree(gw.db, pages);
    const n = r.ok;
    return {
      round: i,
      requests: n,
      errors: r.errors,
      pageSize: start.pageSize,
      frames,
      commits,
      walBytesPerRequest: (frames * (start.pageSize + 24)) / n,
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
