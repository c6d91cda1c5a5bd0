// Benchmark dispatcher (`npm run bench -- <name> [--quick]`). Builds dist/ when it is missing or
// stale, then runs each selected benchmark as its own process pinned to core 1 (the load generator's
// core; the processes under test are pinned to core 0 by the benchmarks themselves).
//
//   node bench/run.js catalog|proxy|admission|routing|profile|telemetry|stalled-readers|continuous|workers|workers-drills|fleet-drills|hot-wallet|ab|gc-trace|executable|wal|wal-shape|thread-cpu|alloc-sites|soak|memory-map|wake-cost|all [--quick] [--rounds N] [--rev REV]
//
// --rev REV measures commit REV instead of the working tree: it is exported with `git archive` into
// a temp directory (node_modules linked) and built there; the repository is not touched.
//
// Benchmarks are never part of `npm test`. Results: stdout (markdown) and bench/results/*.json.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { CORES, TASKSET, ensureBuilt, snapshotTree } from './lib/proc.mjs';

const BENCHES = {
  catalog: 'catalog.mjs',
  admission: 'admission.mjs',
  routing: 'routing.mjs',
  proxy: 'proxy.mjs',
  profile: 'profile.mjs',
  telemetry: 'telemetry.mjs',
  'stalled-readers': 'stalled-readers.mjs',
  continuous: 'continuous.mjs',
  workers: 'workers.mjs',
  'workers-drills': 'workers-drills.mjs',
  'fleet-drills': 'fleet-drills.mjs',
  'hot-wallet': 'hot-wallet.mjs',
  ab: 'ab.mjs',
  'gc-trace': 'gc-trace.mjs',
  executable: 'executable.mjs',
  wal: 'wal.mjs',
  'wal-shape': 'wal-shape.mjs',
  'thread-cpu': 'thread-cpu.mjs',
  'alloc-sites': 'alloc-sites.mjs',
  soak: 'soak.mjs',
  'memory-map': 'memory-map.mjs',
  'wake-cost': 'wake-cost.mjs',
};
const ALL = ['catalog', 'admission', 'routing', 'proxy', 'profile'];

const [name, ...argv] = process.argv.slice(2);
const revAt = argv.findIndex((a) => a === '--rev' || a.startsWith('--rev='));
let rev = null;
const rest = [...argv];
if (revAt >= 0) {
  const a = argv[revAt];
  rev = a.includes('=') ? a.slice(6) : argv[revAt + 1];
  rest.splice(revAt, a.includes('=') ? 1 : 2);
}
if (!name || name === '-h' || name === '--help' || !(name in BENCHES || name === 'all')) {
  process.stderr.write(
    `usage: node bench/run.js ${[...Object.keys(BENCHES), 'all'].join('|')} [--quick] [--rounds N] [--rev REV]\n`,
  );
  process.exit(name ? 2 : 0);
}
if (!TASKSET)
  process.stderr.write(
    'bench: taskset (util-linux) not found: processes are NOT pinned to cores; ratios will be noisier\n',
  );
if (CORES < 2)
  process.stderr.write(
    `bench: only ${CORES} core(s): processes are not pinned; the load generator competes with the process under test\n`,
  );

const env = { ...process.env };
if (rev) {
  const snap = snapshotTree(rev);
  env.PI_BENCH_TREE = snap.dir;
  env.PI_BENCH_COMMIT = snap.commit;
  process.stderr.write(`bench: measuring commit ${snap.commit} (snapshot in ${snap.dir})\n`);
} else {
  ensureBuilt();
}
const dir = fileURLToPath(new URL('.', import.meta.url));
const list = name === 'all' ? ALL : [name];
let failed = 0;
for (const b of list) {
  const script = join(dir, BENCHES[b]);
  const pin = TASKSET && CORES >= 2;
  const cmd = pin ? 'taskset' : process.execPath;
  const args = pin ? ['-c', '1', process.execPath, script, ...rest] : [script, ...rest];
  process.stderr.write(`\n=== bench ${b} ${rest.join(' ')} ===\n`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: join(dir, '..'), env });
  if (r.status !== 0) {
    failed++;
    process.stderr.write(`bench ${b} failed (exit ${r.status}${r.signal ? `, ${r.signal}` : ''})\n`);
  }
}
process.exit(failed ? 1 : 0);
