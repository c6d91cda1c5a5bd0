// The gateway's wallet book: admission decided in memory, the ledger written by group commit.
//
// A per-request IMMEDIATE transaction for the hold and another for the settlement cost about as much
// CPU as the whole proxy path (each touches ~8 B-tree pages and the WAL checkpoints every few hundred
// commits). The gateway is the only process that takes holds on its database, so it can keep each
// wallet's balance and held amount in memory, admit against that, and persist every hold, settlement
// and release of one event-loop turn in a single transaction (`Wallets.apply`, the store's one
// implementation of those writes), so the ledger, its invariants and `ledger verify` are unchanged.
//
// Durability: a settlement's promise resolves only once its transaction committed, and the request
// path sends the answer's last bytes after that (AttemptInput.beforeComplete). A crash can lose
// holds not yet written — which the restart would have released anyway — but never a charge for an
// answer the client holds complete.
//
// Other processes: the CLI only adds money (`wallet credit`); `refresh()` — called when another
// connection committed — writes what is pending, then reloads balances. Two gateways taking holds on
// one database file is not supported (each would admit against its own memory).
import { type LedgerDetails, type LedgerOp, type Store, WalletError } from '../store/store.ts';
import type { HoldResult, WalletAdmission } from './admission.ts';

interface Account {
  balance: bigint;
  held: bigint;
}

export class WalletBook implements WalletAdmission {
  private readonly accounts = new Map<string, Account>();
  private readonly open = new Map<string, { workspace: string; amount: bigint }>();
  private queue: LedgerOp[] = [];
  private waiters: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  private scheduled = false;
  private closed = false;

  private readonly wallets: Store['wallets'];

  constructor(
    private readonly store: Store,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    this.wallets = store.wallets;
  }

  /**
   * Admits when balance − held covers `amount` (in memory); the hold row follows in this turn's batch.
   * A trace already open here is a WalletError (a reused trace id that was closed earlier fails its
   * batch instead: the ledger takes one hold per trace).
   */
  hold(workspace: string, traceId: string, amount: bigint): HoldResult {
    if (typeof workspace !== 'string' || workspace === '') throw new RangeError('workspace is required');
    checkTrace(traceId);
    if (typeof amount !== 'bigint' || amount < 0n) throw new RangeError('a hold must be a non-negative bigint amount of nano-USD');
    if (this.open.has(traceId)) throw new WalletError('duplicate_trace', `trace ${traceId} already has a hold`);
    const a = this.account(workspace);
    const available = a.balance - a.held;
    if (available < amount) return { ok: false, available };
    a.held += amount;
    this.open.set(traceId, { workspace, amount });
    this.enqueue({ kind: 'hold', workspace, traceId, amount });
    return { ok: true };
  }

  /** Charges the final cost. Resolves once committed, to false when the trace was not open (a no-op). */
  settle(traceId: string, cost: bigint, details: LedgerDetails): Promise<boolean> {
    checkTrace(traceId);
    if (typeof cost !== 'bigint' || cost < 0n) throw new RangeError('a cost must be a non-negative bigint amount of nano-USD');
    const h = this.open.get(traceId);
    if (!h) return Promise.resolve(false);
    this.open.delete(traceId);
    const a = this.account(h.workspace);
    a.balance -= cost;
    a.held -= h.amount;
    this.enqueue({ kind: 'settle', workspace: h.workspace, traceId, amount: h.amount, cost, details });
    return new Promise((resolve, reject) => this.waiters.push({ resolve: () => resolve(true), reject }));
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
    this.enqueue({ kind: 'release', workspace: h.workspace, traceId, amount: h.amount });
  }

  /** Writes what is pending and stops: later calls change nothing (call before closing the store). */
  close(): void {
    this.flush();
    this.closed = true;
  }

  /** Writes everything pending in one transaction. Safe to call at any time (shutdown, tests). */
  flush(): void {
    this.scheduled = false;
    if (this.closed) return;
    const ops = this.queue;
    const waiters = this.waiters;
    if (ops.length === 0 && waiters.length === 0) return;
    this.queue = [];
    this.waiters = [];
    try {
      this.store.batch(() => {
        this.wallets.apply(ops);
      });
    } catch (err) {
      // SQLite rolled the whole batch back. Its holds never reached the database: forget them (those
      // requests then settle as no-ops, unbilled — reported through onError) and rebuild memory.
      this.onError(err);
      for (const op of ops) if (op.kind === 'hold') this.open.delete(op.traceId);
      try {
        this.reload();
      } catch (reloadErr) {
        // The store itself is unusable (closed, corrupt): keep memory, report, never throw from a timer.
        this.onError(reloadErr);
      }
      for (const w of waiters) w.reject(err);
      return;
    }
    for (const w of waiters) w.resolve();
  }

  /** Another process changed the database (a credit): write what is pending, then reload balances. */
  refresh(): void {
    this.flush();
    this.reload();
  }

  /** Memory ← database. Only called right after a flush, when the database holds all of this book. */
  private reload(): void {
    for (const [workspace, a] of this.accounts) {
      const v = this.wallets.show(workspace, 0);
      a.balance = v.balance;
      a.held = v.held;
    }
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
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }
}

function checkTrace(traceId: string): void {
  if (typeof traceId !== 'string' || traceId === '') throw new RangeError('trace id is required');
}
