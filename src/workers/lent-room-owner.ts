// The coordinator's side of the admission memory a fleet node's serving threads share
// (`serve --workers N --db postgres://…`). The node's wallets are slices of each wallet reserved in
// PostgreSQL (escrow); the coordinator lends part of a wallet's current slice to shared memory as
// `room`, and a serving thread takes a hold from the room with one compare-and-swap, without a
// message (SharedBook.takeRoom). The hold is announced with the thread's next message; the
// coordinator then records it as a reservation of the slice the room was lent from, and its
// settlement or release goes to the wallets as before.
//
// Why one slice per slot at a time: an announced hold must be charged to the slice its room came
// from. A slot is bound to one slice while any room lent from it is out (in the room, or taken and
// not announced yet: `outstanding`). When the wallets need the room back — the slice lost, given
// back, the store down, the node closing — the room is emptied at once (recall); the holds already
// taken from it are still announced against that slice, and only once `outstanding` reaches zero
// may the slot be bound to another slice. Meanwhile, and whenever the room cannot cover a hold, the
// thread asks the coordinator by message, as without shared memory.
//
// Exactness: the room is money the slice has reserved (never more than its free part); a thread can
// take only what the room holds, by compare-and-swap; so holds taken in shared memory never exceed
// the slice, as holds taken by the escrow service itself never do.
import type { WalletService } from '../admission/admission.ts';
import { ensureBytes, SharedBook, type SharedBookMemory } from './shared-book.ts';
import type { SharedWindowsOwner } from './shared-windows.ts';

/** Bytes per 64-bit word. */
const WORD = 8;

/**
 * A fleet node's wallets as lending needs them (EscrowWalletService). `S` is a slice, opaque here.
 * Every method is synchronous: the room and the slice's books change in one step.
 */
export interface LendingWallets<S> extends WalletService {
  /** Reserves up to `want` of the workspace's current slice's free part for the room; null when
   *  there is nothing to lend, or the current slice is not `from` (when `from` is given). */
  lend(workspace: string, want: bigint, from: S | null): { from: S; amount: bigint } | null;
  /** A hold taken from room lent by `from`: now a reservation of that slice for `traceId` (throws a
   *  `duplicate_trace` WalletError when the trace has a hold already). */
  adopt(from: S, workspace: string, traceId: string, amount: bigint): void;
  /** Room lent by `from` that came back unused. */
  unlend(from: S, amount: bigint): void;
  /** Who empties the rooms when the wallets need them back (one workspace, or null: every one). */
  onRecall(recall: (workspace: string | null) => void): void;
}

/** What a slot is bound to: the slice its room was lent from, and how much of that is still out. */
interface Binding<S> {
  workspace: string;
  from: S | null;
  /** Lent and not yet adopted or returned: what is in the room plus what threads took and have not
   *  announced. Zero exactly when `from` is null. */
  outstanding: bigint;
}

export class LentRoomOwner<S> {
  readonly memory: SharedBookMemory;
  private readonly words: BigInt64Array;
  private readonly stride: number;
  private readonly slots = new Map<string, number>();
  private readonly bindings: Binding<S>[] = [];
  private readonly wallets: LendingWallets<S>;
  private readonly windows: SharedWindowsOwner | null;
  /** Holds taken in shared memory and announced (the benchmark and tests read it). */
  adopted = 0;

  /** `windows`: the node's rate windows its threads share (their fallback while Redis does not
   *  answer, or their limits on a node without Redis); null: rate decisions by message. */
  constructor(wallets: LendingWallets<S>, workers: number, windows: SharedWindowsOwner | null = null) {
    this.wallets = wallets;
    this.windows = windows;
    this.memory = SharedBook.create(workers);
    this.words = new BigInt64Array(this.memory.buffer);
    this.stride = workers + 1;
    wallets.onRecall((workspace) => {
      if (workspace === null) for (const slot of this.slots.values()) this.recall(slot);
      else {
        const slot = this.slots.get(workspace);
        if (slot !== undefined) this.recall(slot);
      }
    });
  }

  /** The slot of a workspace's room or of a key's rate window (-1: decided by message). */
  slot(of: 'wallet' | 'window', name: string): number {
    if (of === 'window') return this.windows?.slotOf(name) ?? -1;
    const known = this.slots.get(name);
    if (known !== undefined) return known;
    const slot = this.slots.size;
    if (!ensureBytes(this.memory.buffer, (slot + 1) * this.stride * WORD)) return -1;
    this.slots.set(name, slot);
    this.bindings.push({ workspace: name, from: null, outstanding: 0n });
    this.topUp(slot);
    return slot;
  }

  /**
   * A thread announces a hold it took from the slot's room: it becomes a reservation of the slice
   * the room was lent from. A trace that has a hold already (a reused id) is refused: its amount
   * goes back to the slice, and the thread's settlement of it charges nothing.
   */
  held(worker: number, workspace: string, traceId: string, amount: bigint, slot: number): void {
    const b = this.bindings[slot];
    if (b === undefined) throw new Error(`no slot ${slot}`);
    // Announced: no longer the thread's pending amount, whatever follows.
    Atomics.sub(this.words, slot * this.stride + worker, amount);
    if (b.from === null || b.workspace !== workspace || amount > b.outstanding)
      throw new Error(`no room was lent on slot ${slot} for this hold`);
    const from = b.from;
    this.outOf(b, amount);
    try {
      this.wallets.adopt(from, workspace, traceId, amount);
      this.adopted++;
    } catch (err) {
      this.wallets.unlend(from, amount);
      throw err;
    } finally {
      this.topUp(slot);
    }
  }

  /** The coordinator decided a hold of the workspace by message (the room could not cover it): its
   *  slice may have grown meanwhile, so the room is filled again. */
  decidedByMessage(workspace: string): void {
    const slot = this.slots.get(workspace);
    if (slot !== undefined) this.topUp(slot);
  }

  /** `worker`'s thread ended: what it took and never announced goes back to the slices. */
  workerGone(worker: number): bigint {
    let total = 0n;
    for (const slot of this.slots.values()) {
      const amount = Atomics.exchange(this.words, slot * this.stride + worker, 0n);
      const b = this.bindings[slot] as Binding<S>;
      if (amount === 0n || b.from === null) continue;
      this.wallets.unlend(b.from, amount);
      this.outOf(b, amount);
      total += amount;
    }
    return total;
  }

  /** What a workspace's room holds now (tests, the benchmark). */
  room(workspace: string): bigint {
    const slot = this.slots.get(workspace);
    return slot === undefined ? 0n : Atomics.load(this.words, slot * this.stride);
  }

  /** Lends the slot's room whatever its slice has free (the same slice while room is out). */
  private topUp(slot: number): void {
    const b = this.bindings[slot] as Binding<S>;
    const lent = this.wallets.lend(b.workspace, UNLIMITED, b.from);
    if (lent === null || lent.amount <= 0n) return;
    b.from = lent.from;
    b.outstanding += lent.amount;
    Atomics.add(this.words, slot * this.stride, lent.amount);
  }

  /** Empties the slot's room at once and gives it back to its slice. The holds threads took from
   *  it before are announced later, against the same slice. */
  private recall(slot: number): void {
    const b = this.bindings[slot] as Binding<S>;
    const back = Atomics.exchange(this.words, slot * this.stride, 0n);
    if (back === 0n || b.from === null) return;
    this.wallets.unlend(b.from, back);
    this.outOf(b, back);
  }

  private outOf(b: Binding<S>, amount: bigint): void {
    b.outstanding -= amount;
    if (b.outstanding === 0n) b.from = null;
  }
}

/** `want` for "all that is free": the slice's free part bounds it. */
const UNLIMITED = (1n << 62n) - 1n;
