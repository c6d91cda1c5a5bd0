// The clock and timers an attempt runs on. Production uses Node's own; unit tests hand in fake ones
// so the first-byte and stream-idle rules are checked without sleeping.

/** A running timer. A Node `Timeout` is one: `refresh()` restarts it (even after it fired), `close()`
 *  is `clearTimeout()` (after which `refresh()` no longer re-arms it). */
export interface AttemptTimer {
  refresh(): unknown;
  close(): unknown;
}

export interface AttemptTimers {
  /** Calls `fn` once after `ms`. */
  start(fn: () => void, ms: number): AttemptTimer;
  /** Milliseconds on a monotonic clock (first-byte times are differences of it). */
  now(): number;
}

export const systemTimers: AttemptTimers = {
  start: (fn, ms) => setTimeout(fn, ms),
  now: () => performance.now(),
};
