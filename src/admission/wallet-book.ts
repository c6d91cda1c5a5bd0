// The gateway's wallet book: admission decided in memory, the ledger written by group commit.
//
// A per-request IMMEDIATE transaction for the hold and another for the settlement cost about as much
// CPU as the whole proxy path (each touches ~8 B-tree pages and the WAL checkpoints every few hundred
// commits). The gateway is the only process that takes holds on its database, so it can keep each
// wallet's balance and held amount in memory, admit against that, and persist every hold, settlement
// and release of one event-loop turn in a single transaction (`Wallets.apply`, the store's one
// implementation of those writes), so the ledger, its invariants and `ledger verify` are unchanged.
//
// Where batches go: by default this thread's own connection (one synchronous transaction per turn);
// `serve` gives it the writer thread (src/store/sqlite/thread-writer.ts), which commits each batch off the
// event loop — one batch in flight at a time, the next gathering meanwhile — together with the log
// row of every settlement in it.
//
// Holds may wait (`holdDelayMs`, given with the writer thread) for their own close: a hold goes with
// the batch that settles or releases it, or — once it is that old — with the next batch, or alone.
// At a modest rate a turn carries about one request, and without the wait every request costs the
// writer two round trips and two transactions (its hold, then its settlement); with it, one, and a
// hold closed in the batch that takes it writes no holds row (nor the row's delete later). Nothing
// waits on a hold's row, and a crash before it is written leaves nothing to release.
//
// One request's refused write never takes another's down: the store writes a batch's operations so
// that one it refuses (an amount out of its column's range, a trace held twice) is left out alone
// (`Wallets.applyEach`), and answers which; `landed` undoes just those here.
//
// Durability: a settlement's promise resolves only once its transaction committed, and the request
// path sends the answer's last bytes after that (AttemptInput.beforeComplete). A crash can lose
// holds not yet written — which the restart would have released anyway — but never a charge for an
// answer the client holds complete.
//
// Other processes: the CLI only adds money (`wallet credit`); `refresh()` — called when another
// connection committed — writes what is pending, then reloads balances. Two gateways taking holds on
// one database file is not supported (each would admit against its own memory).
import {
  type LedgerDetails,
  type LedgerOp,
  type LedgerRefusal,
  type LedgerWriter,
  type RequestLogRow,
  type Store,
  WalletError,
} from '../store/sqlite/store.ts';
import type { HoldResult, WalletService } from './admission.ts';

/** After a batch the store rolled back, what it still owes is sent again this much later. */
const RETRY_FAILED_MS = 1000;

interface Account {
  balance: bigint;
  held: bigint;
}

interface Waiter {
  traceId: string;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** One batch taken from the queue: its operations and the settlements waiting for its commit. */
interface Batch {
  ops: LedgerOp[];
  waiters: Waiter[];
}

export class WalletBook implements WalletService {
  private readonly accounts = new Map<string, Account>();
  private readonly open = new Map<string, { workspace: string; amount: bigint }>();
  private queue: LedgerOp[] = [];
  private waiters: Waiter[] = [];
  private scheduled = false;
  /** When each hold still queued was taken (performance.now()): a hold younger than holdDelayMs
   *  stays queued until its own close comes (see the file's header). */
  private readonly heldAt = new Map<LedgerOp, number>();
  /** A timer sends holds whose own close did not come within holdDelayMs. */
  private holdTimer: ReturnType<typeof setTimeout> | null = null;
  /** The queue holds a settlement or release (sent this turn, not after holdDelayMs). */
  private urgent = false;
  /** The last batch was rolled back: what it still owes is retried by `retryTimer`, not at once. */
  private failing = false;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  /** The batch the writer thread has not acknowledged yet (at most one: the next one gathers). */
  private inFlight: Promise<void> | null = null;
  /** Another process changed the database while a batch was in flight: reload once it lands. */
  private refreshWanted = false;
  /** Told every change of a workspace's balance − held (see watchAvailable). */
  private onAvailable: ((workspace: string, delta: bigint) => void) | null = null;

  private readonly wallets: Store['wallets'];
  private readonly writer: LedgerWriter;
  /** Batches are committed on this thread's connection (no writer thread). */
  private readonly inline: boolean;

  private readonly onError: (err: unknown) => void;
  private readonly holdDelayMs: number;
  constructor(
    store: Store,
    onError: (err: unknown) => void = () => undefined,
    /** Where batches are committed; default this thread's own connection, synchronously. */
    writer?: LedgerWriter,
    /** How long a batch of holds alone may wait for a settlement to ride with (0: this turn). */
    holdDelayMs = 0,
  ) {
    this.onError = onError;
    this.holdDelayMs = holdDelayMs;
    this.wallets = store.wallets;
    const inline = (ops: LedgerOp[]): LedgerRefusal[] =>
      store.batchEach((isolated) => this.wallets.applyEach(ops, isolated));
    this.writer = writer ?? { commit: inline, commitNow: inline };
    this.inline = writer === undefined;
  }

  /**
   * Admits when balance − held covers `amount` (in memory); the hold row follows in this turn's batch.
   * A trace already open here is a WalletError (a reused trace id that was closed earlier fails its
   * batch instead: the ledger takes one hold per trace).
   */
  hold(workspace: string, traceId: string, amount: bigint): HoldResult {
    if (typeof workspace !== 'string' || workspace === '') throw new RangeError('workspace is required');
    checkTrace(traceId);
    if (typeof amount !== 'bigint' || amount < 0n)
      throw new RangeError('a hold must be a non-negative bigint amount of nano-USD');
    if (this.open.has(traceId)) throw new WalletError('duplicate_trace', `trace ${traceId} already has a hold`);
    const a = this.account(workspace);
    const available = a.balance - a.held;
    if (available < amount) return { ok: false, available };
    this.record(workspace, traceId, amount);
    this.onAvailable?.(workspace, -amount);
    return { ok: true };
  }

  /**
   * Records a hold admitted elsewhere against the same balance − held (a serving thread's shared
   * memory, `serve --workers N`): no check here, and no change told to watchAvailable (whoever
   * admitted it already took it from what is available). A trace already open is a WalletError.
   */
  admit(workspace: string, traceId: string, amount: bigint): void {
    checkTrace(traceId);
    if (this.open.has(traceId)) throw new WalletError('duplicate_trace', `trace ${traceId} already has a hold`);
    this.record(workspace, traceId, amount);
  }

  /**
   * `listener` is told every change of a workspace's balance − held this book makes from now on
   * (a hold, a settlement, a release, a credit seen by `refresh`, a batch the store refused), except
   * the holds of `admit` — so a copy of `available` kept elsewhere stays equal to the book's, less
   * the holds admitted there and not yet recorded here.
   */
  watchAvailable(listener: (workspace: string, delta: bigint) => void): void {
    this.onAvailable = listener;
  }

  private record(workspace: string, traceId: string, amount: bigint): void {
    this.account(workspace).held += amount;
    this.open.set(traceId, { workspace, amount });
    this.enqueue({ kind: 'hold', workspace, traceId, amount });
  }

  /**
   * Charges the final cost. Resolves once committed, to false when the trace was not open (a no-op).
   * `logRow`, when given, is committed with the settlement by a writer that keeps both.
   */
  settle(traceId: string, cost: bigint, details: LedgerDetails, logRow?: RequestLogRow): Promise<boolean> {
    checkTrace(traceId);
    if (typeof cost !== 'bigint' || cost < 0n)
      throw new RangeError('a cost must be a non-negative bigint amount of nano-USD');
    const h = this.open.get(traceId);
    if (!h) return Promise.resolve(false);
    this.open.delete(traceId);
    const a = this.account(h.workspace);
    a.balance -= cost;
    a.held -= h.amount;
    this.onAvailable?.(h.workspace, h.amount - cost);
    const op: LedgerOp = { kind: 'settle', workspace: h.workspace, traceId, amount: h.amount, cost, details };
    if (logRow) op.logRow = logRow;
    this.enqueue(op);
    return new Promise((resolve, reject) => this.waiters.push({ traceId, resolve: () => resolve(true), reject }));
  }

  /** Operations decided and not yet handed to the writer (they count against its queue bound). */
  pendingOps(): number {
    return this.queue.length;
  }

  /** The in-memory state admission uses (balance − held = available). */
  view(workspace: string): { balance: bigint; held: bigint; available: bigint } {
    const a = this.account(workspace);
    return { balance: a.balance, held: a.held, available: a.balance - a.held };
  }

  /** Closes a hold at zero cost; a trace not open is a no-op. */
  release(traceId: string): void {
    const h = this.open.get(traceId);
    if (!h) return;
    this.open.delete(traceId);
    this.account(h.workspace).held -= h.amount;
    this.onAvailable?.(h.workspace, h.amount);
    this.enqueue({ kind: 'release', workspace: h.workspace, traceId, amount: h.amount });
  }

  /** Writes what is pending and stops: later calls change nothing (call before closing the store). */
  close(): void {
    this.flush();
    this.closed = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  /** Writes everything pending, committed before it returns (shutdown, tests). Safe at any time. */
  flush(): void {
    this.scheduled = false;
    this.clearHoldTimer();
    if (this.closed) return;
    // Twice at most: a settlement the store refused queues the release of its hold, written next.
    for (let round = 0; round < 2; round++) {
      const batch = this.take(true);
      if (batch === null) return;
      let refused: readonly LedgerRefusal[] | undefined;
      try {
        refused = this.writer.commitNow(batch.ops);
      } catch (err) {
        this.failed(batch, err);
        return;
      }
      this.landed(batch, refused ?? []);
    }
  }

  /**
   * Another process changed the database (a credit): reload balances. On this thread's connection,
   * what is pending is written first; with a writer thread (never blocked on from the request path)
   * the reload waits until no batch is in flight and counts what is still queued.
   */
  refresh(): void | Promise<void> {
    if (this.inline) this.flush();
    if (this.inFlight !== null) {
      this.refreshWanted = true;
      // Resolves after the reload: that runs first, when the batch in flight lands (see pump).
      return this.inFlight.then(
        () => undefined,
        () => undefined,
      );
    }
    this.reload();
  }

  /** The scheduled write of this turn's batch: synchronous on the serving thread's connection, or
   *  sent to the writer thread, the next batch gathering until it is acknowledged. */
  private pump(): void {
    this.scheduled = false;
    this.clearHoldTimer();
    if (this.closed || this.inFlight !== null) return;
    const batch = this.take(false);
    if (batch === null) {
      if (this.refreshWanted) this.refresh();
      if (this.queue.length > 0) this.scheduleHolds();
      return;
    }
    let done: ReturnType<LedgerWriter['commit']>;
    try {
      done = this.writer.commit(batch.ops);
    } catch (err) {
      this.failed(batch, err);
      return;
    }
    if (!(done instanceof Promise)) {
      this.landed(batch, done ?? []);
      if (this.urgent) this.schedule();
      return;
    }
    this.inFlight = done.then(
      (refused) => this.landed(batch, refused ?? []),
      (err: unknown) => this.failed(batch, err),
    );
    void this.inFlight.finally(() => {
      this.inFlight = null;
      if (this.refreshWanted) {
        this.refreshWanted = false;
        this.reload();
      }
      // After a rolled-back batch what it owes waits for the retry timer, unless a new settlement or
      // release came meanwhile (its answer's last bytes wait for it): then it all goes now.
      if (this.failing && !this.urgent) return;
      if (this.urgent) this.schedule();
      else if (this.queue.length > 0) this.scheduleHolds();
    });
  }

  /** The next batch: everything queued (`all`), or all but the holds younger than holdDelayMs whose
   *  close is not queued yet (they wait for it); null when nothing is to go. */
  private take(all: boolean): Batch | null {
    if (this.queue.length === 0 && this.waiters.length === 0) return null;
    let ops = this.queue;
    const kept: LedgerOp[] = [];
    if (!all && this.heldAt.size > 0) {
      const closing = new Set<string>();
      for (const op of this.queue) if (op.kind !== 'hold') closing.add(op.traceId);
      const cutoff = performance.now() - this.holdDelayMs;
      ops = [];
      for (const op of this.queue) {
        const at = op.kind === 'hold' && !closing.has(op.traceId) ? this.heldAt.get(op) : undefined;
        if (at !== undefined && at > cutoff) kept.push(op);
        else ops.push(op);
      }
      if (ops.length === 0 && this.waiters.length === 0) return null;
    }
    for (const op of ops) if (op.kind === 'hold') this.heldAt.delete(op);
    const batch = { ops, waiters: this.waiters };
    this.queue = kept;
    this.waiters = [];
    this.urgent = false;
    return batch;
  }

  /**
   * The batch was committed, but for the operations the store refused one by one, which are undone
   * here alone: a refused hold never reached the database (that request is forgotten, as the holds of
   * a failed batch are); a refused settlement leaves its hold open in the database, so the hold is
   * released (charging nothing, its note says why) instead of staying open until the next start.
   * Each refusal is reported; its settlement's promise rejects (the answer was already produced and
   * stays uncharged: `ledger verify` names the answered request without a settlement).
   */
  private landed(batch: Batch, refused: readonly LedgerRefusal[]): void {
    this.failing = false;
    if (refused.length === 0) {
      for (const w of batch.waiters) w.resolve();
      return;
    }
    const lost = new Set<string>();
    const rejected = new Map<string, Error>();
    for (const r of refused) {
      const err = new Error(`the store refused the ${r.kind} of trace ${r.traceId}: ${r.error}`);
      this.onError(err);
      if (r.kind === 'hold') {
        this.open.delete(r.traceId);
        lost.add(r.traceId);
      } else if (r.kind === 'settle') {
        rejected.set(r.traceId, err);
        const op = batch.ops.find((o) => o.kind === 'settle' && o.traceId === r.traceId);
        if (op && !lost.has(r.traceId)) {
          this.queue.push(releaseInstead(op, `settlement refused by the store: ${r.error}`));
          this.urgent = true;
        }
      }
    }
    this.forget(lost, new Error('the hold of this trace was refused by the store'));
    this.rebuild();
    for (const w of batch.waiters) {
      const err = rejected.get(w.traceId);
      if (err) w.reject(err);
      else w.resolve();
    }
  }

  /**
   * The store rolled the whole batch back. Its holds never reached the database: forget them (those
   * requests then settle as no-ops, unbilled — reported through onError), drop the closes of those
   * holds still queued, and rebuild memory. The closes of holds an earlier batch wrote are still
   * owed, or those holds would stay open (their credit held) until the next start: they go back on
   * the queue, a settlement as the release of its hold (its waiter is rejected, so the answer stays
   * uncharged, as for a settlement the store refused), retried after RETRY_FAILED_MS.
   */
  private failed(batch: Batch, err: unknown): void {
    this.onError(err);
    const lost = new Set<string>();
    for (const op of batch.ops) {
      if (op.kind !== 'hold') continue;
      this.open.delete(op.traceId);
      lost.add(op.traceId);
    }
    const why = err instanceof Error ? err.message : String(err);
    for (const op of batch.ops) {
      if (op.kind === 'hold' || lost.has(op.traceId)) continue;
      this.queue.push(op.kind === 'settle' ? releaseInstead(op, `settlement not written: ${why}`) : op);
      this.failing = true;
    }
    this.forget(lost, err);
    this.rebuild();
    for (const w of batch.waiters) w.reject(err);
    if (this.failing) this.scheduleRetry();
  }

  /** What a rolled-back batch still owes goes again later, not in a loop against a failing disk. */
  private scheduleRetry(): void {
    if (this.retryTimer !== null || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.failing = false;
      this.schedule();
    }, RETRY_FAILED_MS);
    this.retryTimer.unref();
  }

  /** Holds that never reached the database: their closes still queued are dropped, their waiters rejected. */
  private forget(lost: ReadonlySet<string>, err: unknown): void {
    if (lost.size === 0 || this.queue.length === 0) return;
    this.queue = this.queue.filter((op) => op.kind === 'hold' || !lost.has(op.traceId));
    const orphaned = this.waiters.filter((w) => lost.has(w.traceId));
    this.waiters = this.waiters.filter((w) => !lost.has(w.traceId));
    for (const w of orphaned) w.reject(err);
  }

  /** Memory ← database + queue after a refusal; never throws (it runs from timers). */
  private rebuild(): void {
    try {
      this.reload();
    } catch (reloadErr) {
      // The store itself is unusable (closed, corrupt): keep memory, report, never throw from a timer.
      this.onError(reloadErr);
    }
  }

  /** Memory ← database, plus what is queued and not yet written. Never called while a batch is in
   *  flight (the database would then lack part of this book). */
  private reload(): void {
    const before = this.onAvailable === null ? null : this.availableNow();
    for (const [workspace, a] of this.accounts) {
      const v = this.wallets.show(workspace, 0);
      a.balance = v.balance;
      a.held = v.held;
    }
    for (const op of this.queue) {
      const a = this.accounts.get(op.workspace);
      if (!a) continue;
      if (op.kind === 'hold') a.held += op.amount;
      else {
        a.held -= op.amount;
        if (op.kind === 'settle') a.balance -= op.cost;
      }
    }
    if (before === null) return;
    for (const [workspace, a] of this.accounts) {
      const delta = a.balance - a.held - (before.get(workspace) ?? 0n);
      if (delta !== 0n) this.onAvailable?.(workspace, delta);
    }
  }

  private availableNow(): Map<string, bigint> {
    const m = new Map<string, bigint>();
    for (const [workspace, a] of this.accounts) m.set(workspace, a.balance - a.held);
    return m;
  }

  private account(workspace: string): Account {
    let a = this.accounts.get(workspace);
    if (!a) {
      const v = this.wallets.show(workspace, 0);
      a = { balance: v.balance, held: v.held };
      this.accounts.set(workspace, a);
    }
    return a;
  }

  private enqueue(op: LedgerOp): void {
    this.queue.push(op);
    if (op.kind === 'hold' && this.holdDelayMs > 0) this.heldAt.set(op, performance.now());
    if (op.kind !== 'hold' || this.holdDelayMs <= 0) {
      this.urgent = true;
      this.schedule();
    } else this.scheduleHolds();
  }

  private scheduleHolds(): void {
    if (this.scheduled || this.holdTimer !== null) return;
    // Due when the oldest queued hold is holdDelayMs old (map order is the order they were taken).
    let due = this.holdDelayMs;
    for (const at of this.heldAt.values()) {
      due = Math.max(0, at + this.holdDelayMs - performance.now());
      break;
    }
    this.holdTimer = setTimeout(() => {
      this.holdTimer = null;
      this.pump();
    }, due);
    this.holdTimer.unref();
  }

  private clearHoldTimer(): void {
    if (this.holdTimer === null) return;
    clearTimeout(this.holdTimer);
    this.holdTimer = null;
  }

  private schedule(): void {
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.pump());
    }
  }
}

/** A settlement that will not be written, as the release of its hold (charging nothing; `note` says why). */
function releaseInstead(op: LedgerOp, note: string): LedgerOp {
  return { kind: 'release', workspace: op.workspace, traceId: op.traceId, amount: op.amount, note };
}

function checkTrace(traceId: string): void {
  if (typeof traceId !== 'string' || traceId === '') throw new RangeError('trace id is required');
}
