// A node's state for one wallet under escrow (src/fleet/pg-escrow.ts): its current slice (what
// PostgreSQL counts as held for this node, and how much of it open requests have reserved), the
// recent admission rate the next slice is sized from, and whether the wallet is in per-request mode
// (its available balance was below the threshold at the last try). Plain bookkeeping: every change
// here is synchronous, so an admission decided against it can never interleave with another.
import { MAX_WALLET_NANO } from '../money.ts';

/** What sizes and retires slices (all optional on the service; defaults in ESCROW_DEFAULTS). */
export interface EscrowTuning {
  /** A slice is sized to cover this long of the node's recent admissions on the wallet (ms). */
  sliceMs: number;
  /** Below this many of the wallet's largest recent holds available, admit with per-request holds. */
  fallbackHolds: number;
  /** A slice is at least this many of the wallet's largest recent holds (a cold start grows it in
   *  few steps), within `fraction` of the available balance. */
  minSliceHolds: number;
  /** A slice never takes more than 1/fraction of the available balance beyond the request's need. */
  fraction: number;
  /** A slice with nothing reserved and unused this long is returned (ms). */
  idleMs: number;
  /** In per-request mode, a slice is tried again after this long (ms). */
  probeMs: number;
}

export const ESCROW_DEFAULTS: EscrowTuning = {
  sliceMs: 1000,
  fallbackHolds: 4,
  minSliceHolds: 8,
  fraction: 4,
  idleMs: 2000,
  probeMs: 1000,
};

/** One slice of the wallet held by this node. `size` is what the database will hold for it once
 *  the settlements already decided are written (it never holds less): free = size − reserved. */
export class Slice {
  readonly id: string;
  size: bigint;
  reserved = 0n;
  /** Settlements of this slice not answered yet: it is not returned while any is in flight. */
  settling = 0;
  /** The database no longer holds it (its lease lapsed and a node released it). */
  lost = false;
  lastUsed: number;
  constructor(id: string, size: bigint, now: number) {
    this.id = id;
    this.size = size;
    this.lastUsed = now;
  }

  free(): bigint {
    return this.size - this.reserved;
  }
}

export class EscrowWallet {
  readonly workspace: string;
  current: Slice | null = null;
  /** A slice statement of this wallet in flight (single flight: requests wait for it). */
  busy: Promise<unknown> | null = null;
  /** Per-request holds until this time (the wallet was below the threshold). */
  perRequestUntil = 0;
  /** The largest hold seen recently (the threshold is a few of them). */
  private maxHold = 0n;
  private windowStart: number;
  private windowNano = 0n;
  private lastWindowNano = 0n;
  private readonly tuning: EscrowTuning;

  constructor(workspace: string, tuning: EscrowTuning, now: number) {
    this.workspace = workspace;
    this.tuning = tuning;
    this.windowStart = now;
  }

  /** Counts a request's hold in the recent rate and the largest hold (refused ones too: they are demand). */
  noteDemand(amount: bigint, now: number): void {
    if (now - this.windowStart >= this.tuning.sliceMs) {
      // A window with no traffic in between forgets the old rate.
      this.lastWindowNano = now - this.windowStart >= 2 * this.tuning.sliceMs ? 0n : this.windowNano;
      this.windowNano = 0n;
      this.windowStart = now;
      this.maxHold = amount;
    }
    this.windowNano += amount;
    if (amount > this.maxHold) this.maxHold = amount;
  }

  /**
   * Whether `amount` can be admitted from the current slice now, in memory. Also while the wallet
   * is admitted per request (`perRequestUntil` bars growing the slice, not using it): what releases
   * and settlements below their holds give back to the slice is this node's to admit against,
   * exactly, and a per-request statement would count it as held and refuse.
   */
  canAdmit(amount: bigint): boolean {
    const s = this.current;
    return s !== null && !s.lost && s.free() >= amount;
  }

  /** The size a slice should have now: the recent rate over `sliceMs`, at least `minSliceHolds` of the largest holds. */
  target(): bigint {
    return maxOf(maxOf(this.windowNano, this.lastWindowNano), this.maxHold * BigInt(this.tuning.minSliceHolds));
  }

  /** Available balance below which the wallet is admitted per request (within what a wallet holds:
   *  a hold near that bound would otherwise make every slice statement of the wallet out of range). */
  floor(): bigint {
    const floor = this.maxHold * BigInt(this.tuning.fallbackHolds);
    return floor < MAX_WALLET_NANO ? floor : MAX_WALLET_NANO;
  }
}

const maxOf = (a: bigint, b: bigint): bigint => (a > b ? a : b);
