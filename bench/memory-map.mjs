// Where `serve`'s resident memory is: the gateway with the writer thread (as `serve` runs), loaded in
// phases — saturation (closed loop, 50 connections, 8 s), 1,000 req/s (10 s), 200 concurrent
// streams (50 content events 20 ms apart, 5 s), saturation again (4 s) — and after each phase its
// resident memory split by what holds it, from /proc/<pid>/smaps and V8's own GC trace:
//   file      file-backed pages (the node binary, native addons, libraries)
//   v8 pages  anonymous 256-KiB mappings: V8's heap pages, every isolate (serving thread, writer)
//   arenas    glibc malloc: the main heap (brk) and the largest per-thread arenas (64-MiB-aligned)
//   other     the rest of anonymous memory (stacks, V8's larger reservations, small maps)
// and, from `--trace-gc` (its last line per isolate), each isolate's heap in use and committed and
// the freed pages V8 keeps pooled for reuse ("pooled": resident, not part of any space).
//
//   node bench/run.js memory-map [--node-args "…"] [--env "K=V …"] [--gw-args "…"]
//
// --node-args / --env / --gw-args change the gateway under test (a flag trial: run twice, compare).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { closedLoop, once, openLoop, streamLoop } from './lib/load.mjs';
import { LOG_DIR, ensureBuilt } from './lib/proc.mjs';
import { chatRequest, scriptSim, startGateway, startSimulator, target } from './lib/stack.mjs';
import { fmt, log, table } from './lib/stats.mjs';

const argv = process.argv.slice(2);
const strArg = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : '');
const words = (s) => s.split(' ').filter(Boolean);
const env = Object.fromEntries(
  words(strArg('--env')).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const NAME = 'gw-memory-map';
const ST_MODEL = 'openai/gpt-6.2-sol';
const MB = 1024;

/** Resident kB of `pid` by holder (see the header). */
function split(pid) {
  const out = { file: 0, v8: 0, brk: 0, arenas: [], other: 0 };
  let range = null;
  let path = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      range = [Number.parseInt(head[1], 16), Number.parseInt(head[2], 16), head[3]];
      path = head[4];
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss || !range) continue;
    const kb = Number(rss[1]);
    const [from, to, perms] = range;
    if (path.startsWith('/')) out.file += kb;
    else if (path === '[heap]') out.brk += kb;
    else if (path !== '') out.other += kb;
    else if (to - from === 256 * 1024) out.v8 += kb;
    else if (perms === 'rw-p' && from % (64 * 2 ** 20) === 0) out.arenas.push(kb);
    else out.other += kb;
  }
  out.arenas.sort((a, b) => b - a);
  return out;
}

/** The last `--trace-gc` line of each isolate in the gateway's log: in use → committed, pooled. */
function isolates() {
  const last = new Map();
  const text = readFileSync(join(LOG_DIR, `${NAME}.log`), 'utf8');
  for (const m of text.matchAll(/^\[\d+:(0x[0-9a-f]+)\]\s+\d+ ms: .*?-> ([\d.]+) \(([\d.]+)\) MB, pooled: (\d+) MB/gm))
    last.set(m[1], { used: Number(m[2]), committed: Number(m[3]), pooled: Number(m[4]) });
  return [...last.values()]; // in order of first appearance: the serving thread's isolate first
}

function status(pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  return (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? Number.NaN);
}

ensureBuilt();
const sim = await startSimulator();
await scriptSim(sim.url, ST_MODEL, { chunks: 50, chunkDelayMs: 20 });
const gw = await startGateway(NAME, {
  upstream: sim.url,
  args: ['--writer-thread', 'on', ...words(strArg('--gw-args'))],
  nodeArgs: ['--trace-gc', ...words(strArg('--node-args'))],
  env,
});
const t = target(gw.url);
const headers = { Authorization: `Bearer ${gw.key}` };
const messages = [{ role: 'user', content: 'Hello, how are you today?' }];
const req = chatRequest(t, headers, { model: 'openai/gpt-6-luna', messages, max_tokens: 64 });
const streamReq = chatRequest(t, headers, {
  model: ST_MODEL,
  messages,
  max_tokens: 64,
  stream: true,
  stream_options: { include_usage: true },
});
const first = await once(t, req);
if (first.status !== 200) throw new Error(`gateway: ${first.status} ${first.text.slice(0, 200)}`);

const rows = [];
const snap = (phase) => {
  const st = status(gw.pid);
  const s = split(gw.pid);
  const iso = isolates();
  const isoText = (i) => (i ? `${fmt(i.used)} / ${fmt(i.committed)} / ${fmt(i.pooled, 0)}` : '—');
  const row = [
    phase,
    fmt(st('VmRSS') / MB),
    fmt(s.file / MB),
    fmt(s.v8 / MB),
    fmt(s.brk / MB),
    s.arenas
      .slice(0, 3)
      .map((kb) => fmt(kb / MB))
      .join(' + ') || '—',
    fmt(s.other / MB),
    isoText(iso[0]),
    iso.slice(1).map(isoText).join('; ') || '—',
  ];
  rows.push(row);
  log(`${phase}: RSS ${row[1]} MB (peak ${fmt(st('VmHWM') / MB)})`);
};
snap('started, one answer');
await closedLoop({ target: t, req, conns: 50, warmupMs: 0, durationMs: 8000 });
snap('8 s saturated');
await openLoop({ target: t, req, rate: 1000, conns: 64, warmupMs: 0, durationMs: 10_000 });
snap('10 s at 1,000 req/s');
await streamLoop({ target: t, req: streamReq, streams: 200, warmupMs: 1000, durationMs: 5000 });
snap('200 streams');
await closedLoop({ target: t, req, conns: 50, warmupMs: 0, durationMs: 4000 });
snap('4 s saturated again');
const peak = status(gw.pid)('VmHWM');
await gw.stop();
await sim.stop();

process.stdout.write(
  [
    `## Where serve's memory is (MB)`,
    '',
    `Gateway: writer thread on${strArg('--node-args') ? `, node args \`${strArg('--node-args')}\`` : ''}${
      Object.keys(env).length ? `, env \`${strArg('--env')}\`` : ''
    }. Peak RSS (VmHWM) ${fmt(peak / MB)} MB.`,
    '',
    table(
      [
        'after',
        'RSS',
        'file',
        'v8 pages',
        'malloc brk',
        'largest arenas',
        'other anon',
        'serving isolate used / committed / pooled',
        'other isolates',
      ],
      rows,
    ),
    '',
  ].join('\n'),
);
process.exit(0);
