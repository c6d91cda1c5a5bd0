// Per-key request limits in fixed windows aligned to the clock minute (floor(now / 60 000)).
// In memory, so the limit is per process; `RateLimiter` is the seam a shared store implements (the
// --workers coordinator, Redis): one atomic count-and-decide per request, answered now or later.
import type { Clock } from '../clock.ts';

const WINDOW_MS = 60_000;

export type RateDecision = { ok: true; remaining: number } | { ok: false; retryAfterSeconds: number };

export interface RateLimiter {
  /**
   * Counts one request against `key` in the current minute. Refused requests are not counted.
   * A limit that is not a positive number refuses everything.
   */
  take(key: string, limitPerMinute: number): RateDecision | Promise<RateDecision>;
}

export class FixedWindowRateLimiter implements RateLimiter {
  private readonly clock: Clock;
  /** Counters of the current window only: a new window drops them all, which bounds memory. */
  private counts = new Map<string, number>();
  private window = Number.NaN;

  constructor(clock: Clock) {
    this.clock = clock;
  }

  take(key: string, limitPerMinute: number): RateDecision {
    const now = this.clock.now();
    const window = Math.floor(now / WINDOW_MS);
    if (window !== this.window) {
      this.window = window;
      this.counts = new Map();
    }
    const used = this.counts.get(key) ?? 0;
    if (!(used < Math.floor(limitPerMinute))) {
      return { ok: false, retryAfterSeconds: retryAfterSeconds(now) };
    }
    this.counts.set(key, used + 1);
    return { ok: true, remaining: Math.floor(limitPerMinute) - used - 1 };
  }

  /** Keys counted in the current window (for tests and metrics). */
  size(): number {
    return this.counts.size;
  }
}

/** Whole seconds to the next full minute, rounded up, within the API's 1..60. */
export function retryAfterSeconds(now: number): number {
  const toNext = WINDOW_MS - (((now % WINDOW_MS) + WINDOW_MS) % WINDOW_MS);
  return Math.min(60, Math.max(1, Math.ceil(toNext / 1000)));
}
