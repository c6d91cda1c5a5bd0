// The campaign's only source of randomness: a seeded PRNG (mulberry32, test/helpers/prng.ts), so a
// seed and a case number give the same input on every machine. Each case draws from its own stream
// (`Rng.forCase`), so a case can be rebuilt alone from (seed, target, case number).
import { seededRandom } from '../../test/helpers/prng.ts';

export class Rng {
  private readonly next: () => number;

  readonly seed: number;
  constructor(seed: number) {
    this.seed = seed;
    this.next = seededRandom(seed);
  }

  /** The generator of case `n` of `target` under campaign seed `seed`. */
  static forCase(seed: number, target: string, n: number): Rng {
    return new Rng(mix(seed, hashString(target), n));
  }

  /** A float in [0, 1). */
  float(): number {
    return this.next();
  }

  /** An integer in [lo, hi] (both included). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.int(0, items.length - 1)] as T;
  }

  /** One of `items`, chosen with the given relative weights. */
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    let total = 0;
    for (const [, w] of items) total += w;
    let r = this.next() * total;
    for (const [v, w] of items) {
      r -= w;
      if (r < 0) return v;
    }
    return (items[items.length - 1] as readonly [T, number])[0];
  }

  bytes(n: number): Buffer {
    const out = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) out[i] = Math.floor(this.next() * 256);
    return out;
  }

  /** A size skewed towards small values but reaching `max` now and then. */
  size(max: number): number {
    const r = this.next();
    if (r < 0.6) return this.int(0, Math.min(16, max));
    if (r < 0.9) return this.int(0, Math.min(1024, max));
    return this.int(0, max);
  }

  /** `n` cut points in (0, len), ascending and distinct (fewer when len is small). */
  cuts(len: number, n: number): number[] {
    const set = new Set<number>();
    for (let i = 0; i < n && len > 1; i++) set.add(this.int(1, len - 1));
    return [...set].sort((a, b) => a - b);
  }
}

/** FNV-1a of a string: a target's name as a number for seeding. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

function mix(a: number, b: number, c: number): number {
  let h = (a ^ 0x9e3779b9) >>> 0;
  for (const v of [b, c]) {
    h = Math.imul(h ^ (v >>> 0), 0x85ebca6b) >>> 0;
    h ^= h >>> 13;
  }
  return h >>> 0;
}

/** Splits `buf` at the given cut points. */
export function splitAt(buf: Buffer, cuts: readonly number[]): Buffer[] {
  const parts: Buffer[] = [];
  let at = 0;
  for (const c of cuts) {
    parts.push(buf.subarray(at, c));
    at = c;
  }
  parts.push(buf.subarray(at));
  return parts;
}
