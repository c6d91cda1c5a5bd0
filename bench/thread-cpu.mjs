// Where `serve`'s CPU goes per request, thread by thread: the gateway with the writer thread (as
// `serve` runs) under an open loop at --rate req/s (1,000) and a closed loop (64 connections), each
// for --seconds (10), CPU of every thread of the process from /proc/<pid>/task/*/stat (µs per
// request), beside the bare passthrough's. With --cpu-prof each thread's profile is written to
// bench/results/profiles/threads-<time>/ (the serving thread's, the writer's, the checkpointer's).
//
// `--workers N`: `serve --workers N` instead; its threads are listed one by one (the main thread is
// the coordinator; the serving threads, the writer and V8's helper threads are told apart only by
// how much they used). `--warm-s S` (0): S more seconds at saturation before each phase's own
// warm-up, for compiled code in every serving thread. Context switches per request of the main
// thread and the busiest other one (voluntary: it slept; involuntary: another thread on the core took
// it over) say how often each request wakes them.
//
// `--perf` (needs Linux `perf`): `perf record` samples `serve` during each measured window (V8's
// --perf-basic-prof names the JavaScript frames) and the serving thread's CPU per request is printed
// by binary (the node binary, JIT-compiled JavaScript, the kernel, libc, the addons) for the open and
// the closed loop side by side: whether a light load runs more code or the same code slower. The
// recordings stay in bench/results/profiles/threads-<time>/ (`perf report -i … --sort pid,dso`: perf's
// `pid` key is the thread; `--tid` did not separate the threads here).
//
//   node bench/run.js thread-cpu [--rate N] [--seconds S] [--workers N] [--warm-s S] [--cpu-prof] [--perf]
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { closedLoop, once, openLoop } from './lib/load.mjs';
import { RESULTS_DIR, ensureBuilt, stopProcess, threadCpu, threadSwitches } from './lib/proc.mjs';
import { chatRequest, startGateway, startPassthrough, startSimulator, target } from './lib/stack.mjs';
import { fmt, log, table } from './lib/stats.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : dflt);
const rate = opt('--rate', 1000);
const durMs = opt('--seconds', 10) * 1000;
const prof = argv.includes('--cpu-prof');
const perf = argv.includes('--perf');
const PERF_HZ = 4999;
const workers = opt('--workers', 0);
const warmS = opt('--warm-s', 0);
if (![rate, durMs, workers, warmS].every(Number.isFinite))
  throw new Error('--rate, --seconds, --workers and --warm-s take numbers');
const BODY = {
  model: 'openai/gpt-6-luna',
  messages: [{ role: 'user', content: 'Hello, how are you today?' }],
  max_tokens: 64,
};

ensureBuilt();
const dir = join(RESULTS_DIR, 'profiles', `threads-${new Date().toISOString().replace(/[:.]/g, '-')}`);
if (prof || perf) mkdirSync(dir, { recursive: true });
if (perf && workers > 0) throw new Error('--perf reads the serving thread of `serve`: not with --workers');
if (perf) {
  try {
    execFileSync('perf', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('--perf needs Linux perf on the PATH');
  }
}
/** The serving thread's samples by binary in a perf recording of process `pid` (perf's `pid` key is the thread). */
function samplesByBinary(file, pid) {
  const out = execFileSync(
    'perf',
    ['report', '-i', file, '--stdio', '--no-children', '--sort', 'pid,dso', '-g', 'none', '-n'],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 << 20 },
  );
  const bins = {};
  for (const line of out.split('\n')) {
    const m = /^\s*[\d.]+%\s+(\d+)\s+(\d+):\S*\s+(.+?)\s*$/.exec(line);
    if (!m || m[2] !== String(pid)) continue;
    const bin = m[3].startsWith('[JIT]') ? 'JIT-compiled JavaScript' : m[3];
    bins[bin] = (bins[bin] ?? 0) + Number(m[1]);
  }
  return bins;
}
const perfRows = {};
const perfCoverage = {};
const sim = await startSimulator();
const rows = [];
for (const who of ['serve', 'passthrough']) {
  for (const phase of ['open', 'closed']) {
    const p =
      who === 'serve'
        ? await startGateway('gw-threads', {
            upstream: sim.url,
            nodeArgs: [
              ...(prof && phase === 'open' ? ['--cpu-prof', '--cpu-prof-dir', dir] : []),
              // V8's log goes nowhere: --perf-basic-prof turns it on, one file per isolate otherwise.
              ...(perf ? ['--perf-basic-prof', '--no-logfile-per-isolate', '--logfile=/dev/null'] : []),
            ],
            args: workers > 0 ? ['--workers', String(workers)] : ['--writer-thread', 'on'],
          })
        : await startPassthrough(sim.url);
    const t = target(p.url);
    const req = chatRequest(t, { Authorization: `Bearer ${p.key ?? 'sk-bench-upstream'}` }, BODY);
    const ok = await once(t, req);
    if (ok.status !== 200) throw new Error(`${who}: ${ok.status} ${ok.text.slice(0, 200)}`);
    if (warmS > 0) await closedLoop({ target: t, req, conns: 64, warmupMs: 0, durationMs: warmS * 1000 });
    let before;
    let after;
    let switchesBefore;
    let switchesAfter;
    const recording = join(dir, `perf-${who}-${phase}.data`);
    const recorderLog = `${recording}.log`;
    let recorder = null;
    let recorderExit = null;
    const hooks = {
      start: () => {
        if (perf && who === 'serve') {
          // perf's own process runs on this (the load generator's) core; its samples are taken on
          // the gateway's. It starts sampling a moment after the window opens: the coverage line
          // says how much of the serving thread's CPU it saw.
          recorder = spawn('perf', ['record', '-F', String(PERF_HZ), '-g', '-p', String(p.pid), '-o', recording], {
            stdio: ['ignore', 'ignore', openSync(recorderLog, 'w')],
          });
          recorderExit = new Promise((resolve) => recorder.once('exit', resolve));
        }
        before = threadCpu(p.pid);
        switchesBefore = threadSwitches(p.pid);
      },
      end: async () => {
        after = threadCpu(p.pid);
        switchesAfter = threadSwitches(p.pid);
        if (recorder) {
          const early = recorder.exitCode !== null || recorder.signalCode !== null;
          if (!early) recorder.kill('SIGINT');
          const stopped = await Promise.race([recorderExit, new Promise((r) => setTimeout(r, 30_000, 'timeout'))]);
          if (early || stopped === 'timeout' || !existsSync(recording))
            throw new Error(
              `perf record ${early ? 'exited before the window closed' : stopped === 'timeout' ? 'did not stop' : 'wrote nothing'}: ${readFileSync(recorderLog, 'utf8').slice(-500)}`,
            );
        }
      },
    };
    log(`${who} ${phase}`);
    const r =
      phase === 'open'
        ? await openLoop({ target: t, req, rate, conns: 64, warmupMs: 3000, durationMs: durMs, hooks })
        : await closedLoop({ target: t, req, conns: 64, warmupMs: 2000, durationMs: durMs, hooks });
    if (recorder) {
      const bins = samplesByBinary(recording, p.pid);
      perfRows[phase] = Object.fromEntries(Object.entries(bins).map(([k, n]) => [k, (n * 1e6) / PERF_HZ / r.ok]));
      // Of the serving thread's CPU in the window (/proc), the share perf sampled.
      const sampled = Object.values(bins).reduce((a, b) => a + b, 0) * (1e6 / PERF_HZ);
      perfCoverage[phase] = sampled / (after.main - before.main);
      // JavaScript frames are named from V8's map of the gateway's process, kept beside the recording.
      const map = `/tmp/perf-${p.pid}.map`;
      if (existsSync(map)) copyFileSync(map, join(dir, `perf-${p.pid}.map`));
    }
    await stopProcess(p, 20_000);
    const per = {};
    for (const k of Object.keys(after)) per[k] = (after[k] - (before[k] ?? 0)) / r.ok;
    const busiest = Object.keys(per)
      .filter((k) => k !== 'main')
      .sort((a, b) => per[b] - per[a])[0];
    // Sleeps and preemptions per request of the main thread and of the busiest other one.
    const switches = (k) => {
      const a = switchesAfter[k];
      const b = switchesBefore[k] ?? { voluntary: 0, involuntary: 0 };
      return a
        ? `${fmt((a.voluntary - b.voluntary) / r.ok, 2)} + ${fmt((a.involuntary - b.involuntary) / r.ok, 2)}`
        : '';
    };
    const switchCell = [
      `main ${switches('main')}`,
      ...(busiest && !(who === 'serve' && workers > 0)
        ? [`${who === 'serve' ? 'writer' : 'busiest other'} ${switches(busiest)}`]
        : []),
    ].join(', ');
    if (who === 'serve' && workers > 0) {
      // Every thread on its own: which one is the writer is not known from the outside.
      per.coordinator = per.main;
      delete per.main;
    } else if (who === 'serve' && busiest) {
      // The thread that worked most after the main one is the writer (its OS name is just "node").
      per.writer = per[busiest];
      delete per[busiest];
    }
    if (!(who === 'serve' && workers > 0)) {
      let others = 0;
      for (const k of Object.keys(per))
        if (k !== 'main' && k !== 'writer') {
          others += per[k];
          delete per[k];
        }
      per.others = others;
    }
    const total = Object.values(per).reduce((a, b) => a + b, 0);
    rows.push([
      who === 'serve' && workers > 0 ? `serve --workers ${workers}` : who,
      phase,
      fmt(r.rps ?? r.ok / (durMs / 1000), 0),
      fmt(total, 1),
      Object.entries(per)
        .filter(([, v]) => v >= 0.5)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${fmt(v, 1)}`)
        .join(', '),
      switchCell,
      r.p99 !== undefined ? fmt(r.p99, 2) : '',
    ]);
  }
}
await stopProcess(sim);
if (perf && perfRows.open && perfRows.closed) {
  const bins = Object.keys(perfRows.open).sort((a, b) => perfRows.open[b] - perfRows.open[a]);
  const total = (ph) => Object.values(perfRows[ph]).reduce((a, b) => a + b, 0);
  const perfTable = [...bins, 'all']
    .map((k) => {
      const o = k === 'all' ? total('open') : perfRows.open[k];
      const c = k === 'all' ? total('closed') : (perfRows.closed[k] ?? 0);
      return [k, fmt(o, 1), fmt(c, 1), c > 0 ? fmt(o / c, 2) : '—'];
    })
    .filter((row, i) => i < 8 || row[0] === 'all');
  process.stdout.write(
    `serve's serving thread, CPU µs per request by binary (perf samples at ${PERF_HZ} Hz):\n\n${table(['binary', `open loop (${rate} req/s)`, 'closed loop', 'open / closed'], perfTable)}\nPerf sampled ${fmt(perfCoverage.open * 100, 0)} % (open) and ${fmt(perfCoverage.closed * 100, 0)} % (closed) of the serving thread's CPU in the windows (/proc).\nRecordings: ${dir} (perf report needs the perf-<pid>.map beside each at /tmp/perf-<pid>.map to name JavaScript frames)\n\n`,
  );
}
process.stdout.write(
  `${table(['who', 'load', 'req/s', 'CPU µs/request', 'by thread (µs/request)', 'context switches per request (voluntary + involuntary)', 'p99 ms'], rows)}\n${prof ? `Profiles: ${dir}\n` : ''}`,
);
