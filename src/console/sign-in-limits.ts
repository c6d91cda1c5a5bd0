// How many wrong credentials the admin listener takes: failed sign-ins (the console's form, a wrong
// bearer token on /admin/) counted per client address and over all clients in fixed one-minute
// windows. A client that reaches its limit is refused (429 with Retry-After) — correct credentials
// included, so the refusal is no oracle — until its lock ends; each lock that follows another without
// a clean window between them lasts twice as long (back-off), up to a quarter of an hour. The global
// count closes the door to guessing spread over many addresses. A success clears the client's record.
// Time comes from the injected clock, so the windows are tested without waiting.

export interface SignInLimits {
  /** Failures per client address in one window before it is locked out. */
  perClient: number;
  /** Failures over all clients in one window before everyone is locked out. */
  global: number;
  windowMs: number;
  /** The longest a lock lasts however often it repeats. */
  maxLockMs: number;
}

export const DEFAULT_SIGN_IN_LIMITS: SignInLimits = {
  perClient: 10,
  global: 100,
  windowMs: 60_000,
  maxLockMs: 15 * 60_000,
};

/** Clients remembered at once; past it the oldest record is dropped. */
const MAX_CLIENTS = 10_000;
const GLOBAL = '\u0000all';

interface Counter {
  windowStart: number;
  failures: number;
  lockedUntil: number;
  /** Locks in a row (each doubles the next); back to 0 after a clean window or a success. */
  strikes: number;
}

export class SignInLimiter {
  private readonly counters = new Map<string, Counter>();
  private readonly now: () => number;
  private readonly limits: SignInLimits;

  constructor(now: () => number, limits: SignInLimits = DEFAULT_SIGN_IN_LIMITS) {
    this.now = now;
    this.limits = limits;
  }

  /** Milliseconds this client must wait before it may present a credential again (0: it may now). */
  waitMs(client: string): number {
    const now = this.now();
    const wait = (c: Counter | undefined): number => (c !== undefined && c.lockedUntil > now ? c.lockedUntil - now : 0);
    return Math.max(wait(this.counters.get(client)), wait(this.counters.get(GLOBAL)));
  }

  /** Records a failed attempt; true when it locked the client (or everyone) out. */
  failed(client: string): boolean {
    const own = this.count(client, this.limits.perClient);
    const all = this.count(GLOBAL, this.limits.global);
    return own || all;
  }

  succeeded(client: string): void {
    this.counters.delete(client);
  }

  private count(key: string, limit: number): boolean {
    const now = this.now();
    let c = this.counters.get(key);
    if (c === undefined) {
      c = { windowStart: now, failures: 0, lockedUntil: 0, strikes: 0 };
      this.counters.set(key, c);
      while (this.counters.size > MAX_CLIENTS) this.counters.delete(this.counters.keys().next().value as string);
    }
    if (now - c.windowStart >= this.limits.windowMs) {
      // A whole window passed since the last lock ended without one: the back-off starts over.
      if (c.lockedUntil + this.limits.windowMs <= now) c.strikes = 0;
      c.windowStart = now;
      c.failures = 0;
    }
    c.failures += 1;
    if (c.failures < limit) return false;
    c.strikes += 1;
    const lock = Math.min(this.limits.windowMs * 2 ** (c.strikes - 1), this.limits.maxLockMs);
    c.lockedUntil = now + lock;
    // The next window starts when the lock ends.
    c.windowStart = c.lockedUntil;
    c.failures = 0;
    return true;
  }
}
