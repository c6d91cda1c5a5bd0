// The rate limits' fixed minute windows in memory every thread of `serve --workers N` shares: so a
// serving thread counts a request against its key without a message to the coordinator.
//
// One 64-bit word per key: the window (minutes since the epoch) in the high 32 bits, the requests
// counted in it in the low 32. A decision is one compare-and-swap loop on that word: it reads the
// window and count, decides, and writes the count + 1 only if the word is still the one it read —
// so exactly `limit` requests of a window get through whichever threads race, and a refusal writes
// nothing (refused requests are not counted). A word of an older window is a count of zero: the
// first request of a new minute replaces it. A thread whose clock reads a minute the word has
// already left (threads read the clock at slightly different instants) counts in the word's window.
import { type RateDecision, retryAfterSeconds } from '../admission/rate-limit.ts';
import { ensureBytes, growableBuffer } from './shared-book.ts';

const WORD = 8;
const WINDOW_MS = 60_000;
const FIRST_SLOTS = 256;
/** The most keys the buffer takes (others are decided by the coordinator's limiter, by message). */
export const MAX_WINDOW_SLOTS = 1 << 20;
/** The count's bits: a limit beyond them counts up to this many requests a minute. */
const COUNT_MAX = 0xffff_ffff;

export class SharedWindows {
  protected readonly words: BigInt64Array;
  readonly buffer: SharedArrayBuffer;

  constructor(buffer: SharedArrayBuffer) {
    this.buffer = buffer;
    // Length-tracking: the view follows the buffer as the coordinator grows it.
    this.words = new BigInt64Array(buffer);
  }

  static create(): SharedArrayBuffer {
    return growableBuffer(FIRST_SLOTS * WORD, MAX_WINDOW_SLOTS * WORD);
  }

  /** Counts one request against the key in `slot` at `now`, if fewer than `limitPerMinute` were. */
  take(slot: number, limitPerMinute: number, now: number): RateDecision {
    const limit = Math.min(COUNT_MAX, Math.floor(limitPerMinute));
    const window = Math.floor(now / WINDOW_MS);
    for (;;) {
      const seen = Atomics.load(this.words, slot);
      const seenWindow = Number(seen >> 32n);
      const used = seenWindow < window ? 0 : Number(seen & 0xffff_ffffn);
      if (!(used < limit)) return { ok: false, retryAfterSeconds: retryAfterSeconds(now) };
      const next = (BigInt(Math.max(window, seenWindow)) << 32n) | BigInt(used + 1);
      if (Atomics.compareExchange(this.words, slot, seen, next) === seen)
        return { ok: true, remaining: limit - used - 1 };
    }
  }
}

/** The coordinator's side: hands out one slot per key, never reused, the buffer grown as keys appear. */
export class SharedWindowsOwner extends SharedWindows {
  private readonly slots = new Map<string, number>();

  /** The key's slot; -1 once the buffer is full (that key is then counted by the coordinator). */
  slotOf(key: string): number {
    const known = this.slots.get(key);
    if (known !== undefined) return known;
    const slot = this.slots.size;
    if (!ensureBytes(this.buffer, (slot + 1) * WORD)) return -1;
    this.slots.set(key, slot);
    return slot;
  }
}
