// Where a gateway's tail at a fixed rate comes from: one gateway with V8's --trace-gc, loaded the way
// the continuous benchmark loads it (saturation, an idle gap, then open loop at R req/s), with every
// garbage-collection pause longer than --min-ms printed that fell inside the fixed-rate window.
// At the end of the gap it prints how much of the database file and its WAL the page cache holds
// (fincore); --drop-cache first drops both from the page cache (posix_fadvise DONTNEED through
// `dd iflag=nocache`; they are clean by then), the state the VM's proactive reclaim leaves after an
// idle minute or two, made certain. --warm-ms sets the warm-up at the rate before the window (1000;
// 0 measures from the first request after the gap). It also counts the full collections V8 ran
// during the gap, per isolate (the serving one and the writer's), with how many were flagged
// "(reduce)" (collections that shrink the heap: the memory reducer's among them), and the
// optimizations V8 completed in the window (--trace-opt; every isolate, re-optimizations included):
// code thrown away during the gap is compiled again there.
//
// --gaps N repeats the gap and the window N times in one process (1): the collections V8 runs in a
// gap differ from gap to gap.
//
//   node bench/run.js gc-trace [--rate 1000] [--gap-s 40] [--gaps N] [--writer-thread] [--min-ms 3] [--slow-ms 3] [--node-args "…"] [--gw-args "…"] [--streams-first] [--dur-s 5] [--eld] [--drop-cache] [--warm-ms 1000]
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { residentShare } from './lib/gc-window.mjs';
import { join } from 'node:path';
import { LOG_DIR, ensureBuilt, stopProcess } from './lib/proc.mjs';
import {
  chatRequest,
  measureLatency,
  measureStreams,
  measureThroughput,
  startGateway,
  startSimulator,
  target,
} from './lib/stack.mjs';
import { fmt, log } from './lib/stats.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const rate = Number(opt('--rate', '1000'));
const gapS = Number(opt('--gap-s', '40'));
const minMs = Number(opt('--min-ms', '3'));
const slowMs = Number(opt('--slow-ms', '3'));
const extraNode = (opt('--node-args', '') ?? '').split(' ').filter(Boolean);
const NS_BODY = { model: 'openai/gpt-6-luna', messages: [{ role: 'user', content: 'hello' }], max_tokens: 64 };

ensureBuilt();
const sim = await startSimulator('gc-sim');
const gw = await startGateway('gc-gateway', {
  upstream: sim.url,
  nodeArgs: ['--trace-gc', '--trace-opt', ...extraNode],
  // The writer thread reports each commit of --slow-ms or more (src/store/sqlite/slow-commit.ts).
  env: { PI_WRITER_SLOW_COMMIT_MS: String(slowMs) },
  args: [
    ...(argv.includes('--writer-thread') ? ['--writer-thread', 'on'] : []),
    '--eld',
    'on',
    ...(opt('--gw-args', '') ?? '').split(' ').filter(Boolean),
  ],
});
const t = target(gw.url);
const c = { name: 'gw', pid: gw.pid, target: t, req: chatRequest(t, { Authorization: `Bearer ${gw.key}` }, NS_BODY) };
const logFile = join(LOG_DIR, 'gc-gateway.log');
/** The log's size in bytes now, and its complete lines written from byte `from` to byte `to`. */
const logSize = () => statSync(logFile).size;
const linesBetween = (from, to = logSize()) => {
  const text = readFileSync(logFile).subarray(from, to).toString('utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean);
};
const gaps = Number(opt('--gaps', '1'));
if (!(gaps >= 1)) throw new Error('--gaps takes a count');

const ST_BODY = { ...NS_BODY, stream: true };
if (argv.includes('--streams-first')) {
  const st = await measureStreams(
    { ...c, streamReq: chatRequest(t, { Authorization: `Bearer ${gw.key}` }, ST_BODY) },
    { simPid: sim.pid, streams: 200, warmupMs: 1000, durationMs: 4000, expectEvents: null },
  );
  log(`streams first: ${st.ok} streams`);
}
const tp = await measureThroughput(c, { simPid: sim.pid, conns: 50, warmupMs: 1000, durationMs: 5000 });
log(`saturation: ${Math.round(tp.rps)} req/s`);
const files = [gw.db, `${gw.db}-wal`];
const size = (f) => statSync(f, { throwIfNoEntry: false })?.size ?? 0;
const majflt = (pid) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[9]);
const vm = () =>
  Object.fromEntries(
    readFileSync('/proc/vmstat', 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split(' '))
      .filter(([k]) => k === 'pgmajfault' || k === 'workingset_refault_file')
      .map(([k, v]) => [k, Number(v)]),
  );
// --eld: the gateway's event-loop delay sampled during the window, as the continuous benchmark does.
const eld = argv.includes('--eld');
const pause = (l) => Number((/, ([\d.]+) \/ [\d.]+ ms/.exec(l) ?? [])[1] ?? Number.NaN);
/** Full collections per isolate (the `[pid:0xADDRESS]` prefix of --trace-gc), with the "(reduce)" ones. */
const fullByIsolate = (ls) => {
  const out = {};
  for (const l of ls.filter((x) => /ms: Mark-Compact/.test(x))) {
    const iso = /\[\d+:(0x[0-9a-f]+)\]/.exec(l)?.[1] ?? '?';
    out[iso] ??= { full: 0, reduce: 0 };
    out[iso].full++;
    if (/Mark-Compact \(reduce\)/.test(l)) out[iso].reduce++;
  }
  return Object.entries(out)
    .map(([iso, n]) => `isolate ${iso}: ${n.full} (${n.reduce} "(reduce)")`)
    .join(', ');
};

for (let g = 1; g <= gaps; g++) {
  const tag = gaps > 1 ? `gap ${g}: ` : '';
  log(`${tag}idle ${gapS} s`);
  const gapFrom = logSize();
  await new Promise((r) => setTimeout(r, gapS * 1000));
  log(`${tag}full collections in the gap: ${fullByIsolate(linesBetween(gapFrom)) || 'none'}`);
  if (argv.includes('--drop-cache'))
    for (const f of files) execFileSync('dd', [`if=${f}`, 'iflag=nocache', 'count=0', 'status=none']);
  log(
    `${tag}end of the gap${argv.includes('--drop-cache') ? ', page cache dropped' : ''}: ${files
      .map((f) => `${f.split('/').pop()} ${size(f) === 0 ? 'empty' : `${fmt(residentShare(f) * 100, 0)} % resident`}`)
      .join(', ')}`,
  );
  const f0 = majflt(gw.pid);
  const vm0 = vm();
  const from = logSize();
  const wallFrom = Date.now();
  if (eld) process.kill(gw.pid, 'SIGUSR2');
  const lat = await measureLatency(c, {
    simPid: sim.pid,
    rate,
    conns: 50,
    warmupMs: Number(opt('--warm-ms', '1000')),
    durationMs: Number(opt('--dur-s', '5')) * 1000,
  });
  const to = logSize();
  const vm1 = vm();
  const wallTo = Date.now();
  const window = linesBetween(from, to);
  const slow = window
    .filter((l) => l.includes('"writer_slow_commit"'))
    .map((l) => JSON.parse(l.slice(l.indexOf('{'))))
    .filter((x) => Date.parse(x.time) >= wallFrom && Date.parse(x.time) <= wallTo);
  log(
    `${tag}writer commits of ${slowMs} ms or more in the window: ${slow.length}, ${fmt(
      slow.reduce((a, x) => a + x.ms, 0),
      1,
    )} ms in all (with --writer-thread)`,
  );
  log(
    `${tag}major page faults in the window: gateway ${majflt(gw.pid) - f0}, machine ${vm1.pgmajfault - vm0.pgmajfault}; file pages refaulted (machine) ${vm1.workingset_refault_file - vm0.workingset_refault_file}`,
  );
  if (eld) {
    const before = logSize();
    process.kill(gw.pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 200));
    log(
      `${tag}eld: ${linesBetween(before)
        .filter((l) => l.startsWith('{"eld":'))
        .pop()}`,
    );
  }
  const gcs = window.filter((l) => /ms: (Scavenge|Mark-Compact|Mark-sweep|Minor)/.test(l));
  const long = gcs.filter((l) => pause(l) >= minMs);
  log(
    `${tag}${rate} req/s: p50 ${fmt(lat.p50, 3)} p99 ${fmt(lat.p99, 3)} max ${fmt(lat.max ?? Number.NaN, 1)} ms; ${gcs.length} GCs in the window (every isolate), ${long.length} of ${minMs} ms or more:`,
  );
  for (const l of long) process.stdout.write(`${l.trim()}\n`);
  const byKind = {};
  for (const l of gcs) {
    const k = /(Scavenge|Mark-Compact|Mark-sweep|Minor[^ ]*)/.exec(l)?.[1] ?? '?';
    byKind[k] = (byKind[k] ?? 0) + pause(l);
  }
  log(`${tag}pause ms by kind: ${JSON.stringify(byKind)}`);
  log(
    `${tag}full collections in the window: ${fullByIsolate(window) || 'none'}; optimizations completed in the window (every isolate, re-optimizations included): ${
      window.filter((l) => l.includes('[completed optimizing')).length
    }; slowest request of each second: ${lat.bySecond.map((b) => fmt(b.max, 0)).join(' ')} ms`,
  );
}
await stopProcess(gw);
await stopProcess(sim);
