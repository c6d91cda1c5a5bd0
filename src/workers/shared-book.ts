// The wallets' admission in memory every thread of `serve --workers N` shares: so a serving thread
// takes a hold without a message to the coordinator.
//
// One 64-bit word per workspace, `available` = balance − every open hold (those the coordinator's
// book knows and those still only in a serving thread), in a growable SharedArrayBuffer. A hold is
// one compare-and-swap loop on that word: it succeeds only if the word covers the amount, and the
// word it replaces is the one it compared — so two threads can never both spend the same nano-dollar
// (exact by construction, as the single event loop is exact by running one hold at a time).
//
// Who writes what: serving threads only subtract (a hold); the coordinator only adds the changes of
// balance − held its wallet book makes (a settlement returns the hold and charges the cost, a
// release returns the hold, a credit from another process adds, a batch the store refused restores)
// — see WalletBook.watchAvailable. Beside `available`, each slot has one word per serving thread:
// what that thread holds that the coordinator's book does not know yet (its announcement is on the
// way). A thread that dies leaves those amounts there; the coordinator adds them back to `available`
// (its announced holds are released through the book, as before).
//
// The word pair (subtract `available`, add the thread's pending word) is two atomic steps of one
// synchronous function: only Worker.terminate() could stop a thread between them, and the gateway
// uses it only at shutdown, when this memory is dropped and the next start releases open holds.

/** Bytes per 64-bit word. */
const WORD = 8;

/** A growable SharedArrayBuffer (ES2024; the project's TypeScript lib predates it). */
export interface GrowableBuffer extends SharedArrayBuffer {
  readonly maxByteLength: number;
  grow(byteLength: number): void;
}

/** A buffer of `bytes` that may grow to `maxBytes`, seen grown by every thread it is sent to. */
export function growableBuffer(bytes: number, maxBytes: number): GrowableBuffer {
  const Growable = SharedArrayBuffer as unknown as new (b: number, o: { maxByteLength: number }) => GrowableBuffer;
  return new Growable(bytes, { maxByteLength: maxBytes });
}

/** Grows `buffer` to hold at least `needed` bytes (doubling); false when it cannot. */
export function ensureBytes(buffer: SharedArrayBuffer, needed: number): boolean {
  const b = buffer as GrowableBuffer;
  if (needed <= b.byteLength) return true;
  if (needed > b.maxByteLength) return false;
  b.grow(Math.min(b.maxByteLength, Math.max(needed, b.byteLength * 2)));
  return true;
}
/** Slots the buffer starts with, and the most workspaces it takes (others are decided by message). */
const FIRST_SLOTS = 64;
export const MAX_WALLET_SLOTS = 1 << 16;

/** What a serving thread starts with: the buffer, and how many threads it has a word for. */
export interface SharedBookMemory {
  buffer: SharedArrayBuffer;
  workers: number;
}

/** The slot layout, on either side: [available, pending of worker 1, …, pending of worker N]. */
export class SharedBook {
  protected readonly words: BigInt64Array;
  protected readonly stride: number;
  readonly memory: SharedBookMemory;

  constructor(memory: SharedBookMemory) {
    this.memory = memory;
    // Length-tracking: the view follows the buffer as the coordinator grows it.
    this.words = new BigInt64Array(memory.buffer);
    this.stride = memory.workers + 1;
  }

  /** Creates the memory for `workers` serving threads. */
  static create(workers: number): SharedBookMemory {
    const stride = workers + 1;
    const buffer = growableBuffer(FIRST_SLOTS * stride * WORD, MAX_WALLET_SLOTS * stride * WORD);
    return { buffer, workers };
  }

  /** balance − held of the slot's workspace, as the serving threads admit against it. */
  available(slot: number): bigint {
    return Atomics.load(this.words, slot * this.stride);
  }

  /**
   * Takes `amount` from the slot if it covers it (one CAS loop), counted as `worker`'s pending hold.
   * Returns null when held, else what was available (the refusal's figure).
   */
  tryHold(slot: number, worker: number, amount: bigint): bigint | null {
    const at = slot * this.stride;
    for (;;) {
      const seen = Atomics.load(this.words, at);
      if (amount > seen) return seen;
      if (Atomics.compareExchange(this.words, at, seen, seen - amount) === seen) break;
    }
    Atomics.add(this.words, at + worker, amount);
    return null;
  }

  /**
   * Takes `amount` from the slot's room lent by a fleet node's slice (lent-room-owner.ts) by one CAS
   * loop, counted in the thread's pending word until it is announced. Which slice an announced hold
   * came from follows from the owner's count of room still out (a slot is bound to one slice until
   * that count is zero), not from this word: the owner reads it only once the thread has ended, to
   * give back what it took and never announced. It is raised before the CAS (lowered on refusal), so
   * only a thread stopped between the two steps (Worker.terminate, at shutdown) could leave it above
   * what was taken. True when taken.
   */
  takeRoom(slot: number, worker: number, amount: bigint): boolean {
    const at = slot * this.stride;
    Atomics.add(this.words, at + worker, amount);
    for (;;) {
      const seen = Atomics.load(this.words, at);
      if (amount > seen) {
        Atomics.sub(this.words, at + worker, amount);
        return false;
      }
      if (Atomics.compareExchange(this.words, at, seen, seen - amount) === seen) return true;
    }
  }

  /** What `worker` holds on the slot that the coordinator's book does not know yet. */
  pending(slot: number, worker: number): bigint {
    return Atomics.load(this.words, slot * this.stride + worker);
  }
}

/**
 * The coordinator's side: hands out slots (one per workspace, never reused, the buffer grown as
 * workspaces appear), and is the one writer that adds to `available`.
 */
export class SharedBookOwner extends SharedBook {
  private readonly slots = new Map<string, number>();

  /** The workspace's slot, made with `available` as the book has it now; -1 once the buffer is
   *  full (that workspace is then decided by the coordinator's book, by message). */
  slotOf(workspace: string, available: () => bigint): number {
    const known = this.slots.get(workspace);
    if (known !== undefined) return known;
    const slot = this.slots.size;
    if (!ensureBytes(this.memory.buffer, (slot + 1) * this.stride * WORD)) return -1;
    Atomics.store(this.words, slot * this.stride, available());
    this.slots.set(workspace, slot);
    return slot;
  }

  /** The slot of a workspace that has one (no slot is made). */
  slotIfAny(workspace: string): number | undefined {
    return this.slots.get(workspace);
  }

  /** The book's balance − held of `workspace` moved by `delta` (a settlement, a release, a credit). */
  changed(workspace: string, delta: bigint): void {
    const slot = this.slots.get(workspace);
    if (slot === undefined || delta === 0n) return;
    Atomics.add(this.words, slot * this.stride, delta);
  }

  /** `worker` announced a hold: the book knows it now, so it is no longer that thread's pending. */
  announced(slot: number, worker: number, amount: bigint): void {
    Atomics.sub(this.words, slot * this.stride + worker, amount);
  }

  /** A hold announced that the book could not take (a trace id open twice): its amount comes back. */
  returned(slot: number, worker: number, amount: bigint): void {
    this.announced(slot, worker, amount);
    Atomics.add(this.words, slot * this.stride, amount);
  }

  /** `worker`'s thread ended: what it held unannounced is available again. Returns how much. */
  workerGone(worker: number): bigint {
    let total = 0n;
    for (const slot of this.slots.values()) {
      const at = slot * this.stride + worker;
      const amount = Atomics.exchange(this.words, at, 0n);
      if (amount === 0n) continue;
      Atomics.add(this.words, slot * this.stride, amount);
      total += amount;
    }
    return total;
  }
}
