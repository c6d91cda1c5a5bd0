// The wallet book of a node on PostgreSQL: every hold, settlement and release is one atomic statement
// in the shared database (src/store/postgres/holds.ts), so admission is exact across nodes — no node keeps
// balances in memory. This node remembers only which of its holds are still open, to renew their
// lease every LEASE_RENEW_MS; the same timer sweeps lapsed holds of any node (a node that died).
//
// PostgreSQL unreachable (fail closed): a hold that cannot be taken refuses the request with 503
// store_unavailable — nothing is admitted without a hold. A hold whose outcome is unknown (the
// connection dropped mid-statement) is released in the background until PostgreSQL answers (release
// is idempotent: a hold that never committed is a no-op). A settlement is retried until it commits or
// the hold's lease is near its end (settle is idempotent per trace, so a retry never charges twice);
// settlements and releases of one event-loop turn go as one statement (pg-close-batch.ts);
// only then is the answer delivered uncharged, and the sweeper releases the hold. A settlement the
// database refuses (an amount out of its column's range) is not retried: the hold is released at
// once — nothing charged, the note says why — rather than held until its lease lapses.
import type { Clock } from '../clock.ts';
import { GatewayError } from '../errors.ts';
import type { LedgerDetails, RequestLogRow } from '../store/types.ts';
import { HOLD_LEASE_MS, isTransient, isUnavailable, LEASE_RENEW_MS, type PgStore } from '../store/postgres/store.ts';
import type { HoldResult, WalletService } from '../admission/admission.ts';
import { rowAside } from './isolated-batch.ts';
import { CloseBatcher } from './pg-close-batch.ts';

const RETRY_MS = 200;

export interface PgWalletOptions {
  clock: Clock;
  /** This node's name in hold rows (the sweeper's ledger note names it). */
  node: string;
  leaseMs?: number;
  renewMs?: number;
  log?: (event: string, fields?: Record<string, unknown>) => void;
  /** Start the renew/sweep timer (default true; tests drive `tick()` themselves). */
  timer?: boolean;
}

export class PgWalletService implements WalletService {
  /** Open holds this node took and still serves: trace → lease end. */
  private readonly open = new Set<string>();
  /** Traces to release once PostgreSQL answers again. */
  private readonly pendingRelease = new Set<string>();
  private readonly leaseMs: number;
  private readonly renewMs: number;
  private readonly timer: NodeJS.Timeout | null;
  private ticking: Promise<void> | null = null;
  private closed = false;
  private readonly log: (event: string, fields?: Record<string, unknown>) => void;

  private readonly store: PgStore;
  private readonly opts: PgWalletOptions;
  private readonly closes: CloseBatcher;
  constructor(store: PgStore, opts: PgWalletOptions) {
    this.store = store;
    this.opts = opts;
    this.closes = new CloseBatcher(store.holds, opts.clock, (row) => rowAside(store, row));
    this.leaseMs = opts.leaseMs ?? HOLD_LEASE_MS;
    this.renewMs = opts.renewMs ?? LEASE_RENEW_MS;
    this.log = opts.log ?? (() => undefined);
    this.timer = opts.timer === false ? null : setInterval(() => void this.tick(), this.renewMs);
    this.timer?.unref();
  }

  async hold(workspace: string, traceId: string, amount: bigint): Promise<HoldResult> {
    if (this.closed) throw unavailableError('the gateway is shutting down');
    try {
      const r = await this.store.holds.hold(
        workspace,
        traceId,
        amount,
        this.opts.clock.now(),
        this.opts.node,
        this.leaseMs,
      );
      if (r.ok) this.open.add(traceId);
      return r;
    } catch (err) {
      // A passing failure (no answer, a statement or lock wait that ran out) is the store's, a 503 the
      // client may retry, not an error of this request.
      if (!isTransient(err)) throw err;
      // The statement may have committed before the connection died: make sure it does not stay held.
      this.pendingRelease.add(traceId);
      this.log('store_unavailable', { during: 'hold', trace_id: traceId, error: message(err) });
      throw unavailableError('the wallet store (PostgreSQL) did not answer in time; the request was not admitted');
    }
  }

  settle(traceId: string, cost: bigint, details: LedgerDetails, logRow?: RequestLogRow): Promise<boolean> {
    const settled = this.settleHold(traceId, cost, details, logRow);
    // The row rides with the settlement: the request's final row is to replace it once it is over.
    if (logRow) this.store.requestLog.carried(traceId, settled);
    return settled;
  }

  private async settleHold(
    traceId: string,
    cost: bigint,
    details: LedgerDetails,
    logRow: RequestLogRow | undefined,
  ): Promise<boolean> {
    // A passing failure (an outage, a conflict, a timeout) is retried for at most the lease − renew
    // interval: by attempts (tests stop the clock) and by real time (a statement timeout alone takes
    // seconds). Only a refusal of the data closes the hold at zero cost; a settlement still failing
    // at the end leaves its hold to lapse with its lease.
    const attempts = Math.max(1, Math.floor((this.leaseMs - this.renewMs) / RETRY_MS));
    const until = performance.now() + (this.leaseMs - this.renewMs);
    for (let attempt = 1; ; attempt++) {
      try {
        const done = await this.closes.close({ traceId, kind: 'settle', cost, details, logRow });
        this.open.delete(traceId);
        return done;
      } catch (err) {
        if (!isTransient(err) || attempt >= attempts || performance.now() + RETRY_MS >= until) {
          if (!isTransient(err)) await this.releaseRefused(traceId, err);
          this.open.delete(traceId);
          throw err;
        }
        await sleep(RETRY_MS);
      }
    }
  }

  /** The database refused this trace's settlement: its hold is closed now, at zero cost. */
  private async releaseRefused(traceId: string, err: unknown): Promise<void> {
    this.log('settlement_refused', { trace_id: traceId, error: message(err) });
    try {
      await this.store.holds.release(
        traceId,
        this.opts.clock.now(),
        `settlement refused by the store: ${message(err)}`,
      );
    } catch (releaseErr) {
      // Released later (by the timer when PostgreSQL is back, else by the lease): never hides why
      // the settlement failed.
      if (isUnavailable(releaseErr)) this.pendingRelease.add(traceId);
      else this.log('release_failed', { trace_id: traceId, error: message(releaseErr) });
    }
  }

  async release(traceId: string): Promise<void> {
    if (!this.open.has(traceId) && !this.pendingRelease.has(traceId)) return;
    this.open.delete(traceId);
    try {
      await this.closes.close({ traceId, kind: 'release', note: null });
      this.pendingRelease.delete(traceId);
    } catch (err) {
      if (!isTransient(err)) throw err;
      // Retried by the timer; the lease releases it anyway if this node dies first.
      this.pendingRelease.add(traceId);
    }
  }

  refresh(): void {
    // Balances live in PostgreSQL only: nothing cached to refresh.
  }

  /** Renews this node's open holds, retries pending releases, sweeps lapsed holds of every node. */
  tick(): Promise<void> {
    this.ticking ??= this.runTick().finally(() => (this.ticking = null));
    return this.ticking;
  }

  /** Open holds this node serves (tests, diagnostics). */
  get openHolds(): number {
    return this.open.size;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.timer) clearInterval(this.timer);
    if (this.ticking) await this.ticking;
    await this.closes.drain();
    // Releases what is still pending while we can; anything left lapses with its lease.
    await this.retryReleases().catch(() => undefined);
    this.closed = true;
  }

  private async runTick(): Promise<void> {
    const now = this.opts.clock.now();
    try {
      await this.retryReleases();
      if (this.open.size > 0) await this.store.holds.renew([...this.open], now, this.leaseMs);
      const swept = await this.store.holds.sweep(now);
      if (swept > 0) this.log('released_lapsed_holds', { count: swept });
    } catch (err) {
      this.log('lease_tick_failed', { error: message(err) });
    }
  }

  private async retryReleases(): Promise<void> {
    for (const traceId of [...this.pendingRelease]) {
      await this.store.holds.release(traceId, this.opts.clock.now(), 'released after the store came back');
      this.pendingRelease.delete(traceId);
    }
  }
}

function unavailableError(why: string): GatewayError {
  return new GatewayError('store_unavailable', why);
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
