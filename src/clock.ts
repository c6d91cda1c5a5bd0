// Injectable time source: every time rule (rate-limit windows, pins, discounts, lifecycle, health
// cool-downs) reads the clock through this, so tests move time instead of sleeping.

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests set and advance by hand. */
export class ManualClock implements Clock {
  private t: number;
  constructor(start: number | string = Date.UTC(2026, 0, 15, 12, 0, 0)) {
    this.t = typeof start === 'string' ? Date.parse(start) : start;
  }
  now(): number {
    return this.t;
  }
  set(t: number | string): void {
    this.t = typeof t === 'string' ? Date.parse(t) : t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}
