// Child processes of a benchmark: started pinned to a core with `taskset -c`, ready when they print
// one JSON line `{"ready":true,...}` on stdout, stopped by PID only (SIGTERM, then SIGKILL after a
// grace period), whatever way the benchmark ends. Also reads CPU time and peak RSS from /proc.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const BENCH_DIR = fileURLToPath(new URL('..', import.meta.url));
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const RESULTS_DIR = join(BENCH_DIR, 'results');
/** The source tree under test (its dist/ and config/): the repo, or a snapshot made by `--rev`. */
export const TREE = process.env.PI_BENCH_TREE || ROOT;
export const LOG_DIR = join(RESULTS_DIR, 'logs');

/** Clock ticks per second for /proc/<pid>/stat (getconf CLK_TCK; 100 on every Linux we know). */
export const CLK_TCK = (() => {
  const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const n = Number.parseInt(r.stdout ?? '', 10);
  return Number.isFinite(n) && n > 0 ? n : 100;
})();

export const TASKSET = (() => {
  const r = spawnSync('taskset', ['--version'], { encoding: 'utf8' });
  return r.status === 0;
})();

/** Cores on this machine (affinity is only applied when there are at least two). */
export const CORES = (() => {
  const r = spawnSync('nproc', ['--all'], { encoding: 'utf8' });
  const n = Number.parseInt(r.stdout ?? '', 10);
  return Number.isFinite(n) && n > 0 ? n : 1;
})();

const children = new Set();
let hooked = false;

function killAllSync() {
  for (const c of children) {
    try {
      process.kill(c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  children.clear();
}

function hookExit() {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAllSync);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      killAllSync();
      process.exit(130);
    });
  }
  process.on('uncaughtException', (err) => {
    process.stderr.write(`bench: ${err?.stack ? err.stack : String(err)}\n`);
    killAllSync();
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => {
    process.stderr.write(`bench: ${err?.stack ? err.stack : String(err)}\n`);
    killAllSync();
    process.exit(1);
  });
}

/**
 * Starts `node <args>` pinned to `core` (when taskset exists and there are ≥ 2 cores). Resolves
 * with the ready line's fields once the child prints it. stdout/stderr go to bench/results/logs/.
 */
export function startNode(name, { core, args, env = {}, nodeArgs = [], readyTimeoutMs = 30_000, cwd = ROOT }) {
  hookExit();
  mkdirSync(LOG_DIR, { recursive: true });
  const pin = TASKSET && CORES >= 2 && core !== undefined && core !== null;
  const cmd = pin ? 'taskset' : process.execPath;
  const argv = pin ? ['-c', String(core), process.execPath, ...nodeArgs, ...args] : [...nodeArgs, ...args];
  const child = spawn(cmd, argv, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const rec = { name, pid: child.pid, child, core: pin ? core : null };
  children.add(rec);
  const log = createWriteStream(join(LOG_DIR, `${name}.log`));
  child.stderr.pipe(log, { end: false });

  return new Promise((resolve, reject) => {
    let buf = '';
    let ready = false;
    const timer = setTimeout(() => {
      if (ready) return;
      stopProcess(rec);
      reject(new Error(`${name}: not ready within ${readyTimeoutMs} ms (see ${join(LOG_DIR, `${name}.log`)})`));
    }, readyTimeoutMs);
    child.stdout.on('data', (d) => {
      log.write(d);
      if (ready) return;
      buf += d.toString('utf8');
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        const at = line.indexOf('{"ready":true');
        if (at < 0) continue;
        try {
          const info = JSON.parse(line.slice(at));
          ready = true;
          clearTimeout(timer);
          buf = '';
          resolve({ ...rec, ...info, pid: child.pid, stop: () => stopProcess(rec) });
          return;
        } catch {
          // not our line
        }
      }
    });
    child.on('exit', (code, signal) => {
      children.delete(rec);
      log.end();
      if (!ready) {
        clearTimeout(timer);
        reject(
          new Error(
            `${name}: exited before ready (code ${code}, signal ${signal}); see ${join(LOG_DIR, `${name}.log`)}`,
          ),
        );
      }
    });
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the child is gone. */
export function stopProcess(rec, graceMs = 5000) {
  return new Promise((resolve) => {
    const { child } = rec;
    if (child.exitCode !== null || child.signalCode !== null) {
      children.delete(rec);
      resolve();
      return;
    }
    const t = setTimeout(() => {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }, graceMs);
    child.once('exit', () => {
      clearTimeout(t);
      children.delete(rec);
      resolve();
    });
    try {
      process.kill(child.pid, 'SIGTERM');
    } catch {
      clearTimeout(t);
      children.delete(rec);
      resolve();
    }
  });
}

/** utime + stime of a process, microseconds. */
export function cpuUs(pid) {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  // Fields after the command: [0] state ... [11] utime, [12] stime (clock ticks).
  const ticks = Number(f[11]) + Number(f[12]);
  return (ticks * 1e6) / CLK_TCK;
}

/** { userUs, sysUs } of a process. */
export function cpuSplitUs(pid) {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return { userUs: (Number(f[11]) * 1e6) / CLK_TCK, sysUs: (Number(f[12]) * 1e6) / CLK_TCK };
}

/** This process's CPU time, microseconds (the load generator). */
export function selfCpuUs() {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/**
 * The V8 flags the gateway of `tree` starts with, as its executable and `npm start` do
 * (STARTUP_V8_FLAGS of its src/cli/v8-flags.ts, from the tree's dist/; none for a build from before
 * them), so that a benchmark measures the gateway as it ships. Flags a contender adds go after them
 * and win. Any failure but a build without that module is an error, not "no flags".
 */
export async function startupV8Flags(tree = TREE) {
  // The gateway's own opt-out, in the benchmark's environment (which its gateways inherit): V8's
  // default in every thread, the main one included.
  if (process.env.PI_V8_MEMORY_REDUCER === 'on') return [];
  try {
    const m = await import(pathToFileURL(join(tree, 'dist', 'src', 'cli', 'v8-flags.js')).href);
    return m.STARTUP_V8_FLAGS ?? [];
  } catch (err) {
    if (err?.code === 'ERR_MODULE_NOT_FOUND') return [];
    throw err;
  }
}

/** { hwmKb, rssKb } from /proc/<pid>/status. */
export function memKb(pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const get = (k) => {
    const m = new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s);
    return m ? Number(m[1]) : null;
  };
  return { hwmKb: get('VmHWM'), rssKb: get('VmRSS') };
}

/** Cores a process may run on (from /proc/<pid>/status Cpus_allowed_list). */
export function affinity(pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /^Cpus_allowed_list:\s+(\S+)/m.exec(s);
  return m ? m[1] : '?';
}

/** Makes sure TREE/dist is built and not older than TREE/src (rebuilds with tsc when needed). */
export function ensureBuilt(tree = TREE) {
  const entry = join(tree, 'dist', 'src', 'gateway.js');
  const stale = () => {
    if (!existsSync(entry)) return true;
    const r = spawnSync('find', [join(tree, 'src'), '-newer', entry, '-name', '*.ts', '-print', '-quit'], {
      encoding: 'utf8',
    });
    return (r.stdout ?? '').trim() !== '';
  };
  if (!stale()) return;
  process.stderr.write(
    `bench: ${join(tree, 'dist')} is missing or older than src/, building (tsc -p tsconfig.build.json)\n`,
  );
  const r = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], {
    cwd: tree,
    stdio: 'inherit',
  });
  if (r.status !== 0) throw new Error(`the build of ${tree} failed; benchmark a commit instead with --rev HEAD`);
}

/**
 * A read-only snapshot of commit `rev` (git archive → a temp directory, node_modules linked to the
 * repo's), built with tsc. Lets the benchmarks measure a committed state while the working tree is
 * being edited. Changes nothing in the repository.
 */
export function snapshotTree(rev) {
  const sha = spawnSync('git', ['-C', ROOT, 'rev-parse', '--verify', `${rev}^{commit}`], { encoding: 'utf8' });
  if (sha.status !== 0) throw new Error(`unknown revision ${rev}`);
  const id = sha.stdout.trim();
  const dir = join(tmpdir(), `pi-bench-tree-${id.slice(0, 12)}`);
  if (!existsSync(join(dir, 'package.json'))) {
    mkdirSync(dir, { recursive: true });
    const r = spawnSync('sh', ['-c', `git -C "${ROOT}" archive --format=tar ${id} | tar -x -C "${dir}"`], {
      stdio: 'inherit',
    });
    if (r.status !== 0) throw new Error(`git archive of ${id} failed`);
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  }
  ensureBuilt(dir);
  return { dir, commit: id };
}

/** What is being measured: the tree, its commit, and whether the working tree had local changes. */
export function treeInfo(tree = TREE) {
  if (tree !== ROOT) {
    const m = /pi-bench-tree-([0-9a-f]+)/.exec(tree);
    return { tree, commit: process.env.PI_BENCH_COMMIT || (m ? m[1] : null), dirty: false };
  }
  const head = spawnSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).stdout?.trim() ?? null;
  const st =
    spawnSync('git', ['-C', ROOT, 'status', '--porcelain', '--untracked-files=no', '--', 'src', 'config'], {
      encoding: 'utf8',
    }).stdout ?? '';
  return { tree, commit: head, dirty: st.trim() !== '' };
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Every thread of `pid` still alive, as its key ("main", else "<name>#<tid>"), its id and its
 * /proc stat line; `also` names another file of /proc/<pid>/task/<tid>/ to read with it.
 */
function* threads(pid, also = null) {
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat;
    let extra = null;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      if (also) extra = readFileSync(`/proc/${pid}/task/${tid}/${also}`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    yield { key: tid === String(pid) ? 'main' : `${name}#${tid}`, stat, extra };
  }
}

/** Thread → CPU µs so far, for every thread of `pid` ("main", else "<name>#<tid>"). */
export function threadCpu(pid) {
  const out = {};
  for (const { key, stat } of threads(pid)) {
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out[key] = ((Number(f[11]) + Number(f[12])) * 1e6) / CLK_TCK;
  }
  return out;
}

/**
 * Context switches of each thread of a process so far, keyed as `threadCpu` keys its threads:
 * voluntary (the thread slept: an idle event loop, a wait) and involuntary (another thread on the
 * core took it over).
 */
export function threadSwitches(pid) {
  const out = {};
  for (const { key, extra } of threads(pid, 'status')) {
    const count = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(extra)?.[1] ?? 0);
    out[key] = { voluntary: count('voluntary_ctxt_switches'), involuntary: count('nonvoluntary_ctxt_switches') };
  }
  return out;
}

/**
 * What each thread of a `serve` process spent between two `threadCpu` readings, in ms: the serving
 * thread, the writer (the busiest other thread: its OS name is just "node"), and the rest together.
 */
export function serveThreadsMs(before, after) {
  const spent = Object.keys(after).map((k) => [k, (after[k] - (before[k] ?? 0)) / 1000]);
  const others = spent.filter(([k]) => k !== 'main').sort((a, b) => b[1] - a[1]);
  const main = spent.find(([k]) => k === 'main')?.[1] ?? 0;
  const writer = others[0]?.[1] ?? 0;
  const rest = others.slice(1).reduce((n, [, ms]) => n + ms, 0);
  return { serving: main, writer, rest };
}
