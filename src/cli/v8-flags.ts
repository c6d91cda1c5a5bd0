// V8 settings `serve` and `demo` run with. Two kinds, because V8 reads flags at two moments:
// - flags it reads while it runs are set by the process on itself before it starts serving, so no
//   wrapper process or NODE_OPTIONS is needed; they hold for every thread of the process;
// - flags it reads when an isolate's heap is created must be on the node command line to reach the
//   main thread. The single executable carries them (its `execArgv`, scripts/build-executable.ts) and
//   `npm start` passes them; set at run time too, they reach every thread started after (the writer
//   thread, the serving threads of --workers), whatever the command line was.
import { setFlagsFromString } from 'node:v8';

/**
 * `--no-allocation-site-pretenuring`. V8 watches where objects are allocated and, when most objects
 * from one place survive a young-generation collection, allocates that place's objects in the old
 * generation from then on. Under saturation nearly every request is in flight when a scavenge runs,
 * so the request path's object literals (settlements, log rows, attempt records) look long-lived
 * and get pretenured; once the load eases they keep filling the old generation with objects that
 * die within a millisecond, and the full collections that clears them paused the loop for 10–35 ms.
 * Measured (bench ab --same-tree --rate 1000, 4 interleaved rounds after a saturation phase, flag
 * set at run time as here): added p99 at 1,000 req/s 25.6 → 4.8 ms, CPU per request unchanged
 * (0.97–1.02×). Set PI_V8_PRETENURING=on to keep V8's default.
 */
export const SERVING_V8_FLAGS: readonly string[] = ['--no-allocation-site-pretenuring'];

/**
 * `--no-memory-reducer`. When an isolate's allocation rate drops (a load ends), V8's memory reducer
 * runs full collections that shrink the heap to give memory back. They also drop the request path's
 * optimized code, so the next burst runs unoptimized while V8 compiles it again, on the core the
 * requests need: when the reducer ran during an idle minute, the first one or two seconds after it
 * could stall for up to ~0.5 s, and saturated bursts between idle spells cost more CPU per request
 * (docs/operations.md has the measurements). The cost is memory: between bursts the process keeps
 * the heap its last load grew (RSS stays near its peak instead of falling ~50 MB); the peak is about
 * the same for one serving thread and ~40 MB higher under --workers 2. V8 creates the reducer with
 * each isolate's heap, so this is a start-up flag. PI_V8_MEMORY_REDUCER=on stops the run-time
 * setting; it cannot undo the flag on a command line (the executable's, npm start's).
 */
export const STARTUP_V8_FLAGS: readonly string[] = ['--no-memory-reducer'];

type Env = Readonly<Record<string, string | undefined>>;

/** Runtime flags unless the environment opts out: SERVING_V8_FLAGS, then STARTUP_V8_FLAGS for the
 *  isolates created after this call. */
function runtimeFlags(env: Env): string[] {
  return [
    ...(env['PI_V8_PRETENURING'] === 'on' ? [] : SERVING_V8_FLAGS),
    ...(env['PI_V8_MEMORY_REDUCER'] === 'on' ? [] : STARTUP_V8_FLAGS),
  ];
}

/** Applies the runtime flags unless the environment opts out; returns the flags it set. */
export function applyServingV8Flags(env: Env = process.env): readonly string[] {
  const flags = runtimeFlags(env);
  for (const f of flags) setFlagsFromString(f);
  return flags;
}

/** A flag's name as V8 reads it ("--no-memory_reducer" → "memory-reducer"), and whether it negates. */
function parseV8Flag(arg: string): { name: string; negated: boolean } | null {
  if (!arg.startsWith('-')) return null;
  const bare = arg.replace(/^--?/, '').split('=')[0]?.replace(/_/g, '-') ?? '';
  if (bare.startsWith('no-')) return { name: bare.slice(3), negated: true };
  if (bare.startsWith('no')) return { name: bare.slice(2), negated: true };
  return { name: bare, negated: false };
}

/** Whether the node command line leaves `flag` (a "--no-…" flag) in effect: V8 takes a flag's last
 *  occurrence, in any of the spellings it accepts. */
function onCommandLine(flag: string, execArgv: readonly string[]): boolean {
  const wanted = parseV8Flag(flag);
  let inEffect = false;
  for (const arg of execArgv) {
    const f = parseV8Flag(arg);
    if (f !== null && wanted !== null && f.name === wanted.name) inEffect = f.negated === wanted.negated;
  }
  return inEffect;
}

/**
 * The settings in effect, for the `listening` log line: a runtime flag as it is; a start-up flag as
 * it is when the command line carried it (every thread has it), marked "(not the main thread)" when
 * only the runtime setting brought it (the main thread, where a gateway without --workers serves,
 * runs without it; threads started after have it).
 */
export function v8FlagsInEffect(env: Env = process.env, execArgv: readonly string[] = process.execArgv): string[] {
  const fromRuntime = runtimeFlags(env);
  const startup = STARTUP_V8_FLAGS.filter((f) => onCommandLine(f, execArgv));
  return [
    ...fromRuntime.filter((f) => !STARTUP_V8_FLAGS.includes(f)),
    ...startup,
    ...fromRuntime
      .filter((f) => STARTUP_V8_FLAGS.includes(f) && !startup.includes(f))
      .map((f) => `${f} (not the main thread)`),
  ];
}
