// Wallet admission by reservation (escrow) for a fleet node. The node takes a slice of a wallet's
// available balance from PostgreSQL in one statement (src/store/postgres/slices.ts: counted as held in
// the database, leased and renewed like a hold, released by any node when the lease lapses) and
// admits requests against it in memory: the decision is synchronous (no read-then-write across an
// await), so it is exact. Settlements are charged out of the slice and written in batches
// (pg-escrow-settle-batch.ts; a settlement resolves once durable); a release frees its reservation
// in memory and writes nothing (the slice still holds the money in the database).
//
// When the slice cannot cover a hold, the request waits for the wallet's single slice statement in
// flight (or starts it): the slice grows by the recent rate, never beyond 1/fraction of what is
// available beyond the request's need, so slices shrink as the wallet empties. When the wallet's
// available balance is below the threshold (`fallbackHolds` × the largest recent hold), or cannot
// cover the request with this node's free part, the node gives its free part back and admits that
// wallet with today's per-request holds (PgWalletService: exact to the nano-dollar) — and tries a
// slice again after `probeMs`. A request is refused only by a per-request hold, that is only when
// the database's available balance (every slice counted as held) cannot cover it.
//
// An unused slice with nothing reserved is returned after `idleMs`; a node that dies leaves its
// slices to lapse with the lease, released by any node's sweep. docs/fleet.md states the invariants.
//
// On a node with serving threads (`serve --workers N`), part of a wallet's current slice may be lent
// to the memory the threads share (src/workers/lent-room-owner.ts): the room lent is reserved in the
// slice, a thread's hold taken from it becomes the slice's reservation when announced (`adopt`), and
// whatever this service must give back or stop admitting against — a slice lost, returned or given
// back in part, PostgreSQL not answering, the node closing — empties the room first (`onRecall`).
//
// PostgreSQL unreachable (fail closed, as per-request holds): as soon as the node learns of it — a
// pooled connection dropped, or a statement failed — it stops admitting against its slices and
// admits per request, which refuses with 503 store_unavailable while PostgreSQL does not answer; the
// first per-request hold that succeeds ends it. Settlements already decided are retried as before.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { GatewayError } from '../errors.ts';
import { MAX_WALLET_NANO } from '../money.ts';
import type { LedgerDetails, RequestLogRow } from '../store/types.ts';
import { WalletError } from '../store/errors.ts';
import {
  HOLD_LEASE_MS,
  isConflict,
  isTransient,
  isUnavailable,
  LEASE_RENEW_MS,
  type PgStore,
} from '../store/postgres/store.ts';
import type { HoldResult, WalletService } from '../admission/admission.ts';
import { ESCROW_DEFAULTS, EscrowWallet, type EscrowTuning, Slice } from './pg-escrow-slice.ts';
import { rowAside } from './isolated-batch.ts';
import { SliceSettleBatcher } from './pg-escrow-settle-batch.ts';
import { PgWalletService } from './pg-wallet-service.ts';

const RETRY_MS = 200;
/** Times a slice statement chosen as a deadlock's victim is run again before the request fails. */
const CONFLICT_RETRIES = 3;
/** Per-request holds tried again when refused while the balance read after covered them. */
const REFUSAL_RETRIES = 8;
/** How often the timer looks for idle slices (and, every renew interval, renews and sweeps). */
const TICK_MS = 500;

export interface EscrowOptions {
  clock: Clock;
  /** This node's name in slice and hold rows. */
  node: string;
  leaseMs?: number;
  renewMs?: number;
  tuning?: Partial<EscrowTuning>;
  log?: (event: string, fields?: Record<string, unknown>) => void;
  /** Start the timer (default true; tests drive `tick()` themselves). */
  timer?: boolean;
}

interface Reservation {
  slice: Slice;
  amount: bigint;
  workspace: string;
}

export class EscrowWalletService implements WalletService {
  private readonly wallets = new Map<string, EscrowWallet>();
  /** Traces admitted against a slice, not settled or released yet. */
  private readonly reservations = new Map<string, Reservation>();
  /** Traces admitted with a per-request hold (the fallback service owns them). */
  private readonly perRequest = new Set<string>();
  /** Traces whose admission is being decided (a second hold of one is a duplicate). */
  private readonly deciding = new Set<string>();
  /** Slices to give back once PostgreSQL answers again. */
  private readonly toClose = new Set<string>();
  private readonly fallback: PgWalletService;
  private readonly settles: SliceSettleBatcher;
  private readonly tuning: EscrowTuning;
  private readonly leaseMs: number;
  private readonly renewMs: number;
  private readonly log: (event: string, fields?: Record<string, unknown>) => void;
  private readonly timer: NodeJS.Timeout | null;
  private lastRenew: number;
  private ticking: Promise<void> | null = null;
  private sliceSeq = 0;
  private readonly sliceTag = randomUUID().slice(0, 8);
  private closed = false;
  /** PostgreSQL did not answer (a dropped connection, a failed statement) since the last success. */
  private storeDown = false;
  /** After an outage: the slices are renewed (and lost ones dropped) before any admission against them. */
  private recheck: Promise<void> | null = null;
  private readonly store: PgStore;
  private readonly opts: EscrowOptions;
  /** Empties the room lent to serving threads (one workspace, or null: all) back into its slice. */
  private recallRoom: (workspace: string | null) => void = () => undefined;

  constructor(store: PgStore, opts: EscrowOptions) {
    this.store = store;
    this.opts = opts;
    this.tuning = { ...ESCROW_DEFAULTS, ...opts.tuning };
    this.leaseMs = opts.leaseMs ?? HOLD_LEASE_MS;
    this.renewMs = opts.renewMs ?? LEASE_RENEW_MS;
    this.log = opts.log ?? (() => undefined);
    const fallbackOpts = {
      clock: opts.clock,
      node: opts.node,
      leaseMs: this.leaseMs,
      renewMs: this.renewMs,
      timer: false,
    };
    this.fallback = new PgWalletService(store, opts.log ? { ...fallbackOpts, log: opts.log } : fallbackOpts);
    this.settles = new SliceSettleBatcher(store.slices, opts.clock, (row) => rowAside(store, row));
    this.lastRenew = opts.clock.now();
    this.timer = opts.timer === false ? null : setInterval(() => void this.tick(), Math.min(TICK_MS, this.renewMs));
    this.timer?.unref();
    store.pool.on('error', () => this.markDown());
  }

  private markDown(): void {
    this.recallRoom(null);
    if (!this.storeDown) this.log('escrow_paused', { why: 'PostgreSQL does not answer; admitting per request' });
    this.storeDown = true;
  }

  hold(workspace: string, traceId: string, amount: bigint): HoldResult | Promise<HoldResult> {
    if (this.closed) throw new GatewayError('store_unavailable', 'the gateway is shutting down');
    if (typeof workspace !== 'string' || workspace === '') throw new RangeError('workspace is required');
    if (typeof traceId !== 'string' || traceId === '') throw new RangeError('trace id is required');
    if (typeof amount !== 'bigint' || amount < 0n || amount > MAX_WALLET_NANO)
      throw new RangeError(`a hold must be a bigint amount of nano-USD within 0 … ${MAX_WALLET_NANO}`);
    if (this.reservations.has(traceId) || this.perRequest.has(traceId) || this.deciding.has(traceId))
      throw new WalletError('duplicate_trace', `trace ${traceId} already has a hold`);
    const now = this.opts.clock.now();
    const w = this.wallet(workspace, now);
    w.noteDemand(amount, now);
    if (!this.storeDown && this.recheck === null && w.canAdmit(amount)) return this.reserve(w, traceId, amount, now);
    this.deciding.add(traceId);
    return this.holdSlowly(w, traceId, amount).finally(() => this.deciding.delete(traceId));
  }

  /** The slice could not cover the hold at once: wait for (or start) the wallet's slice statement. */
  private async holdSlowly(first: EscrowWallet, traceId: string, amount: bigint): Promise<HoldResult> {
    for (let conflicts = 0; ; ) {
      const now = this.opts.clock.now();
      // After any await the idle return may have dropped this entry: decide on the one in the map,
      // whose slice the renewals and the idle return see.
      const w = this.wallet(first.workspace, now);
      if (this.storeDown) return this.holdPerRequest(w, traceId, amount);
      if (this.recheck !== null) {
        await this.recheck;
        continue;
      }
      if (w.canAdmit(amount)) return this.reserve(w, traceId, amount, now);
      if (w.busy !== null) {
        await w.busy.catch(() => undefined);
        continue;
      }
      // Room lent to serving threads is this slice's free part too (a thread found it short, and it
      // may have been refilled since): taken back before any statement, so a hold it covers is
      // admitted here rather than growing the slice, or giving it back for a per-request hold.
      this.recallRoom(w.workspace);
      if (w.canAdmit(amount)) return this.reserve(w, traceId, amount, now);
      // Per request until the probe: no slice statement, unless money came back to the slice since
      // it was given back (a release, a settlement below its hold) — that free part goes back
      // first, or the per-request statement would count it as held against this very request.
      const s = w.current !== null && !w.current.lost && w.current.free() > 0n ? w.current : null;
      if (amount === 0n || (now < w.perRequestUntil && s === null)) return this.holdPerRequest(w, traceId, amount);
      let grown: boolean;
      try {
        grown = await this.exclusive(w, () =>
          s !== null && now < w.perRequestUntil ? this.giveBackFree(w, s, now).then(() => false) : this.grow(w, amount),
        );
      } catch (err) {
        if (isConflict(err) && ++conflicts <= CONFLICT_RETRIES) continue;
        // A statement or lock wait that ran out is a 503 like no answer; only no answer marks the
        // store down for every wallet.
        if (!isTransient(err)) throw err;
        if (isUnavailable(err)) this.markDown();
        // A slice statement whose outcome is unknown leaves the database holding at most more than
        // this node counts: it is given back with the slice, or lapses with its lease.
        this.log('store_unavailable', { during: 'slice_take', workspace: w.workspace, error: message(err) });
        throw new GatewayError(
          'store_unavailable',
          'the wallet store (PostgreSQL) did not answer in time; the request was not admitted',
        );
      }
      if (!grown) return this.holdPerRequest(w, traceId, amount);
    }
  }

  private reserve(w: EscrowWallet, traceId: string, amount: bigint, now: number): HoldResult {
    const s = w.current as Slice;
    s.reserved += amount;
    s.lastUsed = now;
    this.reservations.set(traceId, { slice: s, amount, workspace: w.workspace });
    return { ok: true };
  }

  /** Runs one slice statement of the wallet; others wait for it. */
  private exclusive<T>(w: EscrowWallet, fn: () => Promise<T>): Promise<T> {
    const run = fn().finally(() => (w.busy = null));
    w.busy = run;
    return run;
  }

  /**
   * Grows (or opens) the wallet's slice so that it covers `amount`; true when it does now. False:
   * the wallet is below the threshold or cannot cover the request from this slice — the slice's free
   * part is given back and the wallet goes to per-request holds until `probeMs` from now.
   */
  private async grow(w: EscrowWallet, amount: bigint): Promise<boolean> {
    const now = this.opts.clock.now();
    let s = w.current;
    if (s?.lost) s = w.current = null;
    const free = s === null ? 0n : s.free();
    const need = amount - free;
    const target = w.target() - free;
    const sliceId = s?.id ?? this.newSliceId();
    const r = await this.store.slices.take(
      {
        workspace: w.workspace,
        sliceId,
        grow: s !== null,
        want: clamp(target > need ? target : need),
        need,
        floor: w.floor(),
        fraction: BigInt(this.tuning.fraction),
      },
      now,
      this.opts.node,
      this.leaseMs,
    );
    if (s !== null && !r.sliceOpen) {
      this.lose(w, s);
      return true; // try again with a new slice
    }
    if (r.granted > 0n) {
      if (s === null) w.current = new Slice(sliceId, r.granted, now);
      else s.size += r.granted;
      return true;
    }
    w.perRequestUntil = now + this.tuning.probeMs;
    if (s !== null) await this.giveBackFree(w, s, now);
    return false;
  }

  /** Gives the slice's free part back (all of it, closing the slice, when nothing is reserved). */
  private async giveBackFree(w: EscrowWallet, s: Slice, now: number): Promise<void> {
    this.recallRoom(w.workspace);
    const free = s.free();
    try {
      if (s.reserved === 0n && s.settling === 0) {
        w.current = null;
        await this.store.slices.close(s.id, now);
      } else if (free > 0n) {
        s.size -= free; // before the await: no admission may use what is on its way back
        if (!(await this.store.slices.shrink(s.id, free, now))) this.lose(w, s);
      }
    } catch (err) {
      // Whatever failed (no answer, a statement timeout), a slice no longer current is closed by a
      // later tick, not left to lapse with its lease.
      if (w.current === null) this.toClose.add(s.id);
      if (!isUnavailable(err)) throw err;
      this.log('store_unavailable', { during: 'slice_return', slice: s.id, error: message(err) });
    }
  }

  private async holdPerRequest(w: EscrowWallet, traceId: string, amount: bigint): Promise<HoldResult> {
    let r: HoldResult;
    try {
      r = await this.fallback.hold(w.workspace, traceId, amount);
      // Refused, yet the balance read just after covers the hold: closes and slice returns freed
      // money in between (many nodes on a wallet near empty). A refused statement wrote nothing, so
      // try again — a bounded number of times — rather than refuse what the database now covers.
      for (let again = 0; !r.ok && r.available >= amount && again < REFUSAL_RETRIES; again++)
        r = await this.fallback.hold(w.workspace, traceId, amount);
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'store_unavailable') this.markDown();
      throw err;
    }
    if (this.storeDown) {
      this.storeDown = false;
      this.log('escrow_resumed', {});
      // A slice may have lapsed and been released by another node while this one could not renew it:
      // no admission against a slice until a renewal says which are still held.
      this.recheck ??= this.renewSlices(this.opts.clock.now())
        .catch((err) => this.log('lease_tick_failed', { error: message(err) }))
        .finally(() => (this.recheck = null));
    }
    if (r.ok) this.perRequest.add(traceId);
    return r;
  }

  settle(traceId: string, cost: bigint, details: LedgerDetails, logRow?: RequestLogRow): Promise<boolean> {
    const settled = this.settleSlice(traceId, cost, details, logRow);
    // The row rides with the settlement: the request's final row is to replace it once it is over.
    if (logRow) this.store.requestLog.carried(traceId, settled);
    return settled;
  }

  private async settleSlice(
    traceId: string,
    cost: bigint,
    details: LedgerDetails,
    logRow: RequestLogRow | undefined,
  ): Promise<boolean> {
    const r = this.reservations.get(traceId);
    if (r === undefined) {
      this.perRequest.delete(traceId);
      return this.fallback.settle(traceId, cost, details, logRow);
    }
    if (typeof cost !== 'bigint' || cost < 0n)
      throw new RangeError('a cost must be a non-negative bigint amount of nano-USD');
    this.reservations.delete(traceId);
    const s = r.slice;
    s.reserved -= r.amount;
    // A cost above the hold comes out of the slice's free part (room lent to serving threads taken
    // back for it); beyond it, it is not charged (the slice must keep what other requests reserved).
    // Holds are sized at the worst case, so this needs a provider that ignores max_tokens.
    if (cost > s.free() && !s.lost) this.recallRoom(r.workspace);
    const room = s.free();
    const charge = cost <= room ? cost : room;
    if (charge !== cost)
      this.log('settlement_capped', { trace_id: traceId, cost: String(cost), charged: String(charge) });
    s.size -= charge;
    s.settling++;
    s.lastUsed = this.opts.clock.now();
    try {
      const charged = await this.settleDurably({ traceId, sliceId: s.id, cost: charge, details, logRow });
      if (!charged && !s.lost) {
        const w = this.wallets.get(r.workspace);
        if (w) this.lose(w, s);
      }
      return charged;
    } finally {
      s.settling--;
    }
  }

  /** Retried on a passing failure (an outage, a conflict, a timeout), for at most lease − renew
   *  interval: by attempts (tests stop the clock) and by real time (a statement timeout alone takes
   *  seconds). */
  private async settleDurably(settle: Parameters<SliceSettleBatcher['settle']>[0]): Promise<boolean> {
    const attempts = Math.max(1, Math.floor((this.leaseMs - this.renewMs) / RETRY_MS));
    const until = performance.now() + (this.leaseMs - this.renewMs);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.settles.settle(settle);
      } catch (err) {
        if (isUnavailable(err)) this.markDown();
        if (!isTransient(err) || attempt >= attempts || performance.now() + RETRY_MS >= until) {
          this.log('settlement_failed', { trace_id: settle.traceId, error: message(err) });
          throw err;
        }
        await sleep(RETRY_MS);
      }
    }
  }

  release(traceId: string): void | Promise<void> {
    const r = this.reservations.get(traceId);
    if (r === undefined) {
      if (!this.perRequest.delete(traceId)) return;
      return this.fallback.release(traceId);
    }
    // The slice keeps the money in the database: nothing to write.
    this.reservations.delete(traceId);
    r.slice.reserved -= r.amount;
    r.slice.lastUsed = this.opts.clock.now();
  }

  refresh(): void {
    // Balances live in PostgreSQL; a credit is seen by the next slice statement.
  }

  /**
   * Reserves up to `want` of the wallet's current slice's free part as room for serving threads'
   * shared memory; null when nothing can be lent (no slice, a slice other than `from`, the wallet
   * admitted per request, PostgreSQL not answering or being re-checked, the node closing).
   */
  lend(workspace: string, want: bigint, from: Slice | null): { from: Slice; amount: bigint } | null {
    if (this.closed || this.storeDown || this.recheck !== null) return null;
    const w = this.wallets.get(workspace);
    const s = w?.current ?? null;
    if (w === undefined || s === null || s.lost || (from !== null && from !== s)) return null;
    if (this.opts.clock.now() < w.perRequestUntil) return null;
    const free = s.free();
    const amount = want < free ? want : free;
    if (amount <= 0n) return null;
    s.reserved += amount;
    return { from: s, amount };
  }

  /** A hold a serving thread took from room `from` lent: now that slice's reservation for the trace. */
  adopt(from: Slice, workspace: string, traceId: string, amount: bigint): void {
    if (this.reservations.has(traceId) || this.perRequest.has(traceId) || this.deciding.has(traceId))
      throw new WalletError('duplicate_trace', `trace ${traceId} already has a hold`);
    const now = this.opts.clock.now();
    this.wallet(workspace, now).noteDemand(amount, now);
    from.lastUsed = now;
    this.reservations.set(traceId, { slice: from, amount, workspace });
  }

  /** Room lent by `from` that came back unused. */
  unlend(from: Slice, amount: bigint): void {
    from.reserved -= amount;
  }

  /** Who empties the rooms lent to serving threads when this service needs them back. */
  onRecall(recall: (workspace: string | null) => void): void {
    this.recallRoom = recall;
  }

  /** Returns idle slices; every renew interval renews this node's slices and holds and sweeps lapsed ones. */
  tick(): Promise<void> {
    this.ticking ??= this.runTick().finally(() => (this.ticking = null));
    return this.ticking;
  }

  private async runTick(): Promise<void> {
    const now = this.opts.clock.now();
    try {
      await this.returnIdle(now, false);
    } catch (err) {
      this.log('slice_return_failed', { error: message(err) });
    }
    if (now - this.lastRenew < this.renewMs) return;
    try {
      this.lastRenew = now;
      await this.renewSlices(now);
      const swept = await this.store.slices.sweep(now);
      if (swept > 0) this.log('released_lapsed_slices', { count: swept });
      await this.fallback.tick();
    } catch (err) {
      this.log('lease_tick_failed', { error: message(err) });
    }
  }

  private async renewSlices(now: number): Promise<void> {
    const open = [...this.wallets.values()].flatMap((w) =>
      w.current && !w.current.lost ? [[w, w.current] as const] : [],
    );
    if (open.length === 0) return;
    const still = await this.store.slices.renew(
      open.map(([, s]) => s.id),
      now,
      this.leaseMs,
    );
    // The slices named, not the wallets' current ones: during the statement a slice may have been
    // given back (not lapsed) and another opened, which this renewal neither saw nor found lapsed.
    for (const [w, s] of open) if (!still.has(s.id) && w.current === s) this.lose(w, s);
  }

  /**
   * Gives back what slices do not use: with `all`, every slice's free part now (the contract
   * suite's view of the books, and a node's close); else the slices idle for `idleMs`.
   */
  async returnIdle(now: number, all: boolean): Promise<void> {
    for (const id of [...this.toClose]) {
      try {
        await this.store.slices.close(id, now);
        this.toClose.delete(id);
      } catch (err) {
        // One slice that cannot be closed now must not hold back every other wallet's idle return.
        this.log('slice_return_failed', { slice: id, error: message(err) });
      }
    }
    for (const w of this.wallets.values()) {
      const s = w.current;
      if (s === null || w.busy !== null) continue;
      const quiet = s.settling === 0 && now - s.lastUsed >= this.tuning.idleMs;
      // Room lent to serving threads is reserved but unused: a quiet slice takes it back first.
      if (all || quiet) this.recallRoom(w.workspace);
      const idle = quiet && s.reserved === 0n;
      if (all || idle) await this.exclusive(w, () => this.giveBackFree(w, s, now));
      if (w.current === null && w.busy === null && now >= w.perRequestUntil) this.wallets.delete(w.workspace);
    }
  }

  /** Writes the settlements decided so far and gives back every slice's free part. */
  async flush(): Promise<void> {
    await this.settles.drain();
    await this.returnIdle(this.opts.clock.now(), true);
  }

  /** Settlement statements and the settlements in them (the bench reports the batch size). */
  get batchStats(): { batches: number; settlements: number } {
    return { ...this.settles.stats };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // First: a hold arriving while the slices are given back would open one nothing returns.
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.ticking) await this.ticking;
    await this.settles.drain();
    // What is still reserved lapses with the lease if this node stops before it is settled.
    await this.returnIdle(this.opts.clock.now(), true).catch(() => undefined);
    await this.fallback.close();
  }

  private wallet(workspace: string, now: number): EscrowWallet {
    let w = this.wallets.get(workspace);
    if (!w) this.wallets.set(workspace, (w = new EscrowWallet(workspace, this.tuning, now)));
    return w;
  }

  private newSliceId(): string {
    return `${this.opts.node}/${this.sliceTag}/${++this.sliceSeq}`;
  }

  /** The database no longer holds this slice: admissions against it stop; its open requests'
   *  settlements charge nothing (as a late settlement of a swept hold). */
  private lose(w: EscrowWallet, s: Slice): void {
    this.recallRoom(w.workspace);
    s.lost = true;
    if (w.current === s) w.current = null;
    this.log('slice_lapsed', { slice: s.id, workspace: w.workspace });
  }
}

/** PostgreSQL chose this statement as a deadlock's victim or a serialisation failure: it wrote nothing, run it again. */
const clamp = (n: bigint): bigint => (n > MAX_WALLET_NANO ? MAX_WALLET_NANO : n);

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
