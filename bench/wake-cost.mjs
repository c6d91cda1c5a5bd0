// What a wake-up costs the code that runs after it, on this machine: one fixed unit of JavaScript
// work (serialising and parsing a chat request a few times; or reading a 4-MiB working set, one read
// per cache line) timed back to back, and timed again when the thread sleeps S ms (a futex wait, as
// an idle event loop sleeps in epoll) before each unit. No gateway runs: this is the machine's
// figure. A gateway at 1,000 req/s handles each request in a few short event-loop turns, each after
// such a sleep, where a saturated one runs turn after turn; the ratio of each sleeping row to its
// unit's back-to-back row is how much more such a turn costs when the load is light. Medians over
// --passes interleaved passes (3). It moves itself to --core (0, the core every other benchmark pins
// the process under test to).
//
//   node bench/run.js wake-cost [--passes N] [--core C]
import { execFileSync } from 'node:child_process';
import { TASKSET, affinity } from './lib/proc.mjs';
import { fmt, log, median, table } from './lib/stats.mjs';

const argv = process.argv.slice(2);
const passes = argv.includes('--passes') ? Number(argv[argv.indexOf('--passes') + 1]) : 3;
const core = argv.includes('--core') ? Number(argv[argv.indexOf('--core') + 1]) : 0;
if (!(passes >= 1) || !(core >= 0)) throw new Error('--passes and --core take numbers');
if (TASKSET) execFileSync('taskset', ['-a', '-p', '-c', String(core), String(process.pid)], { stdio: 'ignore' });

const request = {
  model: 'openai/gpt-6-luna',
  messages: [{ role: 'user', content: 'Hello, how are you today?' }],
  max_tokens: 64,
  metadata: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, `value ${i}`])),
};
/** `reps` round trips of the request through JSON: ~5–6 µs each on this machine, warm. */
function unit(reps) {
  let n = 0;
  for (let k = 0; k < reps; k++) {
    const s = JSON.stringify(request);
    n += JSON.parse(s).messages.length + s.length;
  }
  return n;
}
/** One read per 64-byte cache line of a `bytes` buffer: a working set the size of a request's. */
const buffers = new Map();
function touch(bytes) {
  let b = buffers.get(bytes);
  if (!b) {
    b = new Uint8Array(bytes).fill(1);
    buffers.set(bytes, b);
  }
  let n = 0;
  for (let i = 0; i < b.length; i += 64) n += b[i];
  return n;
}
const cell = new Int32Array(new SharedArrayBuffer(4));
/** Median µs of one unit over `count` units, sleeping `sleepMs` before each (0: back to back). */
function timeUnits(size, sleepMs, count) {
  const run = size.reps > 0 ? () => unit(size.reps) : () => touch(size.bytes);
  const times = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    if (sleepMs > 0) Atomics.wait(cell, 0, 0, sleepMs);
    const t0 = process.hrtime.bigint();
    run();
    times[i] = Number(process.hrtime.bigint() - t0) / 1000;
  }
  times.sort();
  return times[count >> 1];
}

const SIZES = [
  { name: '4 JSON round trips (~25 µs)', reps: 4 },
  { name: '64 JSON round trips (~400 µs)', reps: 64 },
  { name: 'one read per cache line of 4 MiB', bytes: 4 << 20 },
];
const SLEEPS = [0, 0.2, 1, 5];
for (const size of SIZES) timeUnits(size, 0, 500); // compile and settle before measuring
const results = new Map();
for (let p = 0; p < passes; p++)
  for (const size of SIZES)
    for (const s of SLEEPS) {
      // About one second per cell.
      const per = timeUnits(size, 0, 50) + s * 1000;
      const m = timeUnits(size, s, Math.max(50, Math.round(1e6 / per)));
      const k = `${size.name}/${s}`;
      results.set(k, [...(results.get(k) ?? []), m]);
      log(`pass ${p + 1}: ${size.name}, sleep ${s} ms before each: ${fmt(m, 1)} µs`);
    }
const rows = [];
for (const size of SIZES) {
  const base = median(results.get(`${size.name}/0`));
  for (const s of SLEEPS) {
    const m = median(results.get(`${size.name}/${s}`));
    rows.push([size.name, s === 0 ? 'none (back to back)' : `${s} ms`, fmt(m, 1), fmt(m / base, 2)]);
  }
}
process.stdout.write(
  `${table(['unit', 'sleep before each unit', 'µs per unit (median)', '× back to back'], rows)}\nPasses: ${passes}; CPU affinity ${JSON.stringify(affinity(process.pid))}.\n`,
);
