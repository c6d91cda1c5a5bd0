// V8 settings `serve` and `demo` apply to their own process before they start serving. Only flags
// V8 reads while it runs (not when the heap is created) can be set this way, so no wrapper process or
// NODE_OPTIONS is needed; they hold for every thread of the process (the writer thread, the serving
// threads of --workers).
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

/** Applies SERVING_V8_FLAGS unless the environment opts out; returns the flags it set. */
export function applyServingV8Flags(env: NodeJS.ProcessEnv = process.env): readonly string[] {
  if (env['PI_V8_PRETENURING'] === 'on') return [];
  for (const f of SERVING_V8_FLAGS) setFlagsFromString(f);
  return SERVING_V8_FLAGS;
}
