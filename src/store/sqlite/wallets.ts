// Workspace wallets and their append-only ledger (nano-USD, bigint end to end).
//
// Tables: `ledger` is the journal (never updated or deleted, enforced by triggers); `wallets`
// (balance = credits − settlements, held = open holds) and `holds` (one row per open hold, with the
// process that owns it) are caches of it, always written in the same transaction as the ledger row.
// `verify()` recomputes them.
//
// Writes: `credit` (the CLI's top-up) and `apply`, the one implementation of hold, settle and
// release. Admission — whether a hold fits, which holds are open — is decided above the store, by
// the gateway's wallet book (src/admission/wallet-book.ts), which hands `apply` one batch of
// decided operations per event-loop turn; the startup clean-up (`releaseOrphanedHolds`) goes
// through `apply` too. One gateway process takes holds on a database file.
//
// Overdraft: a settlement may cost more than its hold (the provider ignored max_tokens, or the
// estimate was short). The balance may then go negative by at most Σ(cost − hold) over such
// requests; admission sizes holds to make that zero when the provider honours max_tokens.
//
// Column ranges: every amount is checked against what its INTEGER column holds before it is written
// (an amount 0 … 2^63 − 1 nano-USD; a balance −2^63 … 2^63 − 1; held 0 … 2^63 − 1), so a value out
// of range is refused with a WalletError naming the trace, never half-written or stored as REAL.
// `applyEach` writes a group commit's operations so that one refused operation leaves the others in.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock } from '../../clock.ts';
import { MAX_WALLET_NANO, nanoToDecimal } from '../../money.ts';
import { Statements, type SqliteDatabase } from './db.ts';
import { LEDGER_COLUMNS, type LedgerRow, ledgerEntry } from '../ledger-entry.ts';
import { writeEach } from './isolated-writes.ts';
import {
  type LedgerQueryName,
  ledgerProblems,
  ledgerQueries,
  type LedgerRows,
  type UnservedHold,
} from '../ledger-invariants.ts';
import type { CreditResult, LedgerEntry, LedgerOp, LedgerRefusal, UsageLine, WalletView } from '../types.ts';
import { WalletError } from '../errors.ts';
import { checkRepeat, creditTraceId, type EarlierCredit } from '../credit-id.ts';

const DAY_MS = 86_400_000;
/** The lowest value of SQLite's INTEGER: a balance overdrawn below it could not be stored. */
const MIN_INTEGER = -(2n ** 63n);
/** Open holds older than this are released at startup even when their process seems alive (pid reuse). */
export const DEFAULT_STALE_HOLD_MS = 6 * 3_600_000;

/** Recorded with each hold: pids are only meaningful on the host (or container) that took it. */
const HOST = hostname();
/** Store instances open in this process; holds they own are never orphans. */
const liveOwners = new Set<string>();

interface WalletRow {
  balance_nano: bigint;
  held_nano: bigint;
}

export class Wallets {
  private readonly db: SqliteDatabase;
  private readonly sql: Statements;
  private readonly clock: Clock;
  /** Identifies this store instance as the owner of the holds it takes. */
  private readonly owner = randomUUID();

  /** Reports credits made through this connection (the gateway's wallet book must reload them). */
  private readonly onCredit: () => void;

  constructor(db: SqliteDatabase, clock: Clock, onCredit: () => void = () => undefined) {
    this.db = db;
    this.sql = new Statements(db, true);
    this.clock = clock;
    this.onCredit = onCredit;
    liveOwners.add(this.owner);
  }

  /** Called by `Store.close()`: holds still open from here become orphans for the next startup. */
  close(): void {
    liveOwners.delete(this.owner);
  }

  /**
   * Adds `amountNano` to the wallet with one credit ledger row. With an idempotency key, a credit the
   * key already made is not applied again (`replayed`, the balance as it is now); the key reused for
   * a different credit is refused. Checked inside the write transaction, so two at once make one.
   */
  credit(workspace: string, amountNano: bigint, note: string, idempotencyKey?: string): CreditResult {
    checkWorkspace(workspace);
    if (typeof amountNano !== 'bigint' || amountNano <= 0n)
      throw new RangeError('a credit must be a positive bigint amount of nano-USD');
    const traceId = creditTraceId(workspace, idempotencyKey);
    let replayed = false;
    const run = this.db.transaction((): bigint => {
      const now = this.clock.now();
      if (idempotencyKey !== undefined) {
        const earlier = this.sql
          .get("SELECT workspace, amount_nano, note FROM ledger WHERE trace_id = ? AND kind = 'credit'")
          .get(traceId) as EarlierCredit | undefined;
        if (earlier !== undefined) {
          checkRepeat(earlier, workspace, amountNano, note);
          replayed = true;
          return (this.wallet(workspace) as WalletRow).balance_nano;
        }
      }
      this.ensureWallet(workspace, now);
      // Checked inside the transaction, against the balance it will add to (another credit may have
      // landed since the caller looked): SQLite would otherwise turn the sum into a REAL and refuse it.
      const before = (this.wallet(workspace) as WalletRow).balance_nano;
      if (amountNano > MAX_WALLET_NANO - before) {
        throw new WalletError(
          'balance_overflow',
          `crediting ${nanoToDecimal(amountNano)} USD to ${workspace} would take its balance from ${nanoToDecimal(before)} to ` +
            `${nanoToDecimal(before + amountNano)} USD, above the most a wallet can hold (${nanoToDecimal(MAX_WALLET_NANO)} USD); nothing was credited`,
        );
      }
      this.sql
        .get('UPDATE wallets SET balance_nano = balance_nano + ?, updated_at = ? WHERE workspace = ?')
        .run(amountNano, now, workspace);
      this.appendLedger(workspace, 'credit', amountNano, traceId, note === '' ? null : note, null, now);
      return (this.wallet(workspace) as WalletRow).balance_nano;
    });
    const balance = run.immediate();
    if (!replayed) this.onCredit();
    return { traceId, balance, replayed };
  }

  /**
   * Writes a batch of ledger operations admission already decided: each hold's ledger row, each close
   * (settle or release) of an open hold with its ledger row, and one wallet update per workspace —
   * the rows `verify()` checks against each other. The holds table keeps open holds only: a hold
   * closed later in the same batch writes no holds row (its ledger rows say all there is), a hold
   * left open gets one, and closing it deletes it. Must run inside a transaction (`Store.batch`, or
   * `releaseOrphanedHolds`'s own). A hold whose trace already has one, or a close of a hold that is
   * not open, is an inconsistency and throws, so the whole batch rolls back.
   */
  apply(ops: readonly LedgerOp[]): void {
    if (!this.db.inTransaction) throw new Error('Wallets.apply must run inside a transaction (Store.batch)');
    const now = this.clock.now();
    const delta = new Map<string, { balance: bigint; held: bigint }>();
    const of = (ws: string) => {
      let d = delta.get(ws);
      if (!d) {
        delta.set(ws, (d = { balance: 0n, held: 0n }));
        this.ensureWallet(ws, now);
      }
      return d;
    };
    const closedHere = holdsClosedInBatch(ops);
    /** Holds of this batch not written to the holds table (closed further on), until their close. */
    const pending = new Set<string>();
    const insertHold = this.sql.get(
      `INSERT INTO holds (trace_id, workspace, amount_nano, state, cost_nano, owner, owner_pid, owner_host, created_at, closed_at)
       VALUES (?, ?, ?, 'open', NULL, ?, ?, ?, ?, NULL)`,
    );
    const closeHold = this.sql.get("DELETE FROM holds WHERE trace_id = ? AND state = 'open'");
    for (const op of ops) {
      checkAmounts(op);
      const d = of(op.workspace);
      if (op.kind === 'hold') {
        // The ledger's index takes one hold per trace: a trace held twice fails here either way.
        this.appendLedger(op.workspace, 'hold', op.amount, op.traceId, null, null, now);
        if (closedHere.has(op)) pending.add(op.traceId);
        else insertHold.run(op.traceId, op.workspace, op.amount, this.owner, process.pid, HOST, now);
        d.held += op.amount;
        continue;
      }
      const open = pending.delete(op.traceId) || closeHold.run(op.traceId).changes === 1;
      if (!open) throw new WalletError('unknown_trace', `trace ${op.traceId} has no open hold to close`);
      if (op.kind === 'settle') {
        this.appendLedger(op.workspace, 'settle', op.cost, op.traceId, null, JSON.stringify(op.details), now);
        d.balance -= op.cost;
      } else {
        this.appendLedger(op.workspace, 'release', op.amount, op.traceId, op.note ?? null, null, now);
      }
      d.held -= op.amount;
    }
    const update = this.sql.get(
      'UPDATE wallets SET balance_nano = balance_nano + ?, held_nano = held_nano + ?, updated_at = ? WHERE workspace = ?',
    );
    for (const [ws, d] of delta) {
      this.checkWalletFits(ws, d);
      update.run(d.balance, d.held, now, ws);
    }
  }

  /**
   * `apply` for a group commit of several requests' operations, inside `transactIsolated`
   * (src/store/sqlite/isolated-writes.ts): all of them at once (`isolated` false), or — on the run after
   * something was refused — each in a savepoint of its own, so an operation the store refuses (an
   * amount out of its column's range, a trace held or closed twice) leaves every other operation of
   * the batch written. `alongside(op)` writes what must stand or fall with an operation (a
   * settlement's log row), in the same savepoint. Returns the refused operations (empty when all
   * were written).
   */
  applyEach(
    ops: readonly LedgerOp[],
    isolated: boolean,
    alongside: (op: LedgerOp) => void = () => undefined,
  ): LedgerRefusal[] {
    if (!isolated) {
      this.apply(ops);
      for (const op of ops) alongside(op);
      return [];
    }
    const refused = writeEach(this.db, ops, (op) => {
      this.apply([op]);
      alongside(op);
    });
    return refused.map(({ item, error }) => ({
      kind: item.kind,
      traceId: item.traceId,
      error: error instanceof Error ? error.message : String(error),
    }));
  }

  /** Refuses a wallet change its INTEGER columns could not hold (checked before the UPDATE). */
  private checkWalletFits(workspace: string, d: { balance: bigint; held: bigint }): void {
    const w = this.wallet(workspace);
    if (!w) return;
    const balance = w.balance_nano + d.balance;
    const held = w.held_nano + d.held;
    if (balance < MIN_INTEGER || balance > MAX_WALLET_NANO || held < 0n || held > MAX_WALLET_NANO) {
      throw new WalletError(
        'amount_out_of_range',
        `this batch would take the wallet of ${workspace} to balance ${nanoToDecimal(balance)} USD, held ${nanoToDecimal(held)} USD, outside what the ledger holds; nothing of it was written`,
      );
    }
  }

  /**
   * Startup clean-up: releases holds whose owning process is gone (a crash between hold and settle),
   * and any open hold older than `staleAfterMs`. Releasing charges nothing: a crashed request is
   * customer-favourable, never double-charged (no process settles these traces any more: a late
   * close would be refused by `apply`).
   * Holds of other live gateways on the same file are kept; holds taken on another host (e.g. another
   * container sharing the volume, whose pids this process cannot see) are released only when stale.
   */
  releaseOrphanedHolds(opts: { staleAfterMs?: number } = {}): number {
    const staleAfter = opts.staleAfterMs ?? DEFAULT_STALE_HOLD_MS;
    const run = this.db.transaction((): number => {
      const now = this.clock.now();
      const open = this.sql
        .get(
          "SELECT trace_id, workspace, amount_nano, owner, owner_pid, owner_host, created_at FROM holds WHERE state = 'open'",
        )
        .all() as {
        trace_id: string;
        workspace: string;
        amount_nano: bigint;
        owner: string;
        owner_pid: bigint;
        owner_host: string;
        created_at: bigint;
      }[];
      const releases: LedgerOp[] = [];
      for (const h of open) {
        const stale = now - Number(h.created_at) > staleAfter;
        if (!stale && ownerAlive(h.owner, Number(h.owner_pid), h.owner_host)) continue;
        const note = stale ? 'stale hold released at startup' : 'orphaned hold released at startup';
        releases.push({ kind: 'release', workspace: h.workspace, traceId: h.trace_id, amount: h.amount_nano, note });
      }
      this.apply(releases);
      return releases.length;
    });
    return run.immediate();
  }

  show(workspace: string, now: number): WalletView {
    const dayStart = now - (((now % DAY_MS) + DAY_MS) % DAY_MS);
    const read = this.db.transaction((): WalletView => {
      const w = this.wallet(workspace);
      const spend = this.sql
        .get(
          "SELECT COALESCE(SUM(amount_nano), 0) FROM ledger WHERE workspace = ? AND kind = 'settle' AND created_at >= ? AND created_at < ?",
        )
        .pluck()
        .get(workspace, dayStart, dayStart + DAY_MS) as bigint;
      const openHolds = this.sql
        .get("SELECT COUNT(*) FROM holds WHERE workspace = ? AND state = 'open'")
        .pluck()
        .get(workspace) as bigint;
      const balance = w?.balance_nano ?? 0n;
      const held = w?.held_nano ?? 0n;
      return { workspace, balance, held, available: balance - held, spendToday: spend, openHolds: Number(openHolds) };
    });
    return read();
  }

  /** Settled spend grouped by model and provider (from settle details), largest first. */
  usage(workspace: string, since = 0, until = Number.MAX_SAFE_INTEGER): UsageLine[] {
    const rows = this.sql
      .get(
        `SELECT COALESCE(json_extract(details, '$.model'), '') AS model,
                COALESCE(json_extract(details, '$.provider'), '') AS provider,
                COUNT(*) AS requests, SUM(amount_nano) AS cost
         FROM ledger WHERE workspace = ? AND kind = 'settle' AND created_at >= ? AND created_at < ?
         GROUP BY 1, 2 ORDER BY cost DESC, model, provider`,
      )
      .all(workspace, since, until) as { model: unknown; provider: unknown; requests: bigint; cost: bigint }[];
    return rows.map((r) => ({
      model: String(r.model),
      provider: String(r.provider),
      requests: Number(r.requests),
      costNano: r.cost,
    }));
  }

  /** A workspace's ledger rows, newest first: at most `limit` (1–1000), older than `beforeId` when given. */
  ledger(workspace: string, opts: { limit?: number; beforeId?: number } = {}): LedgerEntry[] {
    const limit = Math.min(Math.max(Math.trunc(opts.limit ?? 50), 1), 1000);
    const rows = (
      opts.beforeId === undefined
        ? this.sql
            .get(`SELECT ${LEDGER_COLUMNS} FROM ledger WHERE workspace = ? ORDER BY id DESC LIMIT ?`)
            .all(workspace, limit)
        : this.sql
            .get(`SELECT ${LEDGER_COLUMNS} FROM ledger WHERE workspace = ? AND id < ? ORDER BY id DESC LIMIT ?`)
            .all(workspace, opts.beforeId, limit)
    ) as LedgerRow[];
    return rows.map(ledgerEntry);
  }

  /** Every ledger row of one trace (its hold, then its settlement or release; or a credit), oldest first. */
  ledgerOf(traceId: string): LedgerEntry[] {
    const rows = this.sql
      .get(`SELECT ${LEDGER_COLUMNS} FROM ledger WHERE trace_id = ? ORDER BY id`)
      .all(traceId) as LedgerRow[];
    return rows.map(ledgerEntry);
  }

  /** Workspaces that have a wallet, sorted. */
  workspaces(): string[] {
    return this.sql.get('SELECT workspace FROM wallets ORDER BY workspace').pluck().all() as string[];
  }

  /**
   * Recomputes every wallet from the ledger and the holds table and lists each disagreement:
   * balance and held per wallet, hold/ledger agreement per trace, every settle/release preceded by a
   * hold of the same workspace, no trace closed twice, credits positive; and what the books agree on
   * but must not be: an open hold whose owning process is gone (the next start releases exactly
   * these), an answered request without its settlement (src/store/ledger-invariants.ts).
   * `unservedHolds: false` leaves the open holds out of it: for a caller that carries them on
   * (`migrate --from` gives them a lease of their own on PostgreSQL).
   */
  verify(opts: { unservedHolds?: boolean } = {}): { ok: boolean; problems: string[] } {
    const queries = ledgerQueries((expr) => `SUM(${expr})`, 'open');
    const read = this.db.transaction(() => {
      const rows: Partial<Record<LedgerQueryName, unknown[]>> = {};
      for (const [name, sql] of Object.entries(queries) as [LedgerQueryName, string][])
        rows[name] = this.sql.get(sql).all();
      return ledgerProblems(rows as LedgerRows, opts.unservedHolds === false ? [] : this.unservedHolds());
    });
    const problems = read();
    return { ok: problems.length === 0, problems };
  }

  /** Open holds whose owner is gone: the same rule as the startup release (`ownerAlive`). */
  private unservedHolds(): UnservedHold[] {
    const open = this.sql
      .get(
        "SELECT trace_id, workspace, owner, owner_pid, owner_host FROM holds WHERE state = 'open' ORDER BY created_at, trace_id",
      )
      .all() as {
      trace_id: string;
      workspace: string;
      owner: string;
      owner_pid: bigint;
      owner_host: string;
    }[];
    const unserved: UnservedHold[] = [];
    for (const h of open) {
      const pid = Number(h.owner_pid);
      if (ownerAlive(h.owner, pid, h.owner_host)) continue;
      const why =
        pid === process.pid ? 'its store in this process was closed' : `the process that took it (pid ${pid}) is gone`;
      unserved.push({ trace_id: h.trace_id, workspace: h.workspace, why: `${why}; the next start releases it` });
    }
    return unserved;
  }

  private wallet(workspace: string): WalletRow | undefined {
    return this.sql.get('SELECT balance_nano, held_nano FROM wallets WHERE workspace = ?').get(workspace) as
      | WalletRow
      | undefined;
  }

  private ensureWallet(workspace: string, now: number): void {
    this.sql
      .get('INSERT OR IGNORE INTO wallets (workspace, balance_nano, held_nano, updated_at) VALUES (?, 0, 0, ?)')
      .run(workspace, now);
  }

  private appendLedger(
    workspace: string,
    kind: 'credit' | 'hold' | 'settle' | 'release',
    amount: bigint,
    traceId: string,
    note: string | null,
    details: string | null,
    now: number,
  ): void {
    this.sql
      .get(
        'INSERT INTO ledger (workspace, kind, amount_nano, trace_id, note, details, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      )
      .run(workspace, kind, amount, traceId, note, details, now);
  }
}

/**
 * Alive = an open store in this process, or a process with that pid still running on this host.
 * Another host's processes cannot be checked, so they count as alive (only staleness releases them).
 */
function ownerAlive(owner: string, pid: number, host: string): boolean {
  if (liveOwners.has(owner)) return true;
  if (host !== '' && host !== HOST) return true;
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The holds of a batch that a later operation of the same batch closes (the first close of their
 * trace after them, in the same workspace): those need no holds row. A close of another workspace's
 * trace is left to fail as a close without an open hold.
 */
function holdsClosedInBatch(ops: readonly LedgerOp[]): Set<LedgerOp> {
  const closed = new Set<LedgerOp>();
  const held = new Map<string, LedgerOp>();
  for (const op of ops) {
    if (op.kind === 'hold') {
      if (!held.has(op.traceId)) held.set(op.traceId, op);
      continue;
    }
    const hold = held.get(op.traceId);
    if (hold === undefined) continue;
    held.delete(op.traceId);
    if (hold.workspace === op.workspace) closed.add(hold);
  }
  return closed;
}

/** Every amount of an operation within its column's range: 0 … 2^63 − 1 nano-USD. */
function checkAmounts(op: LedgerOp): void {
  checkAmount(op.amount, op.kind === 'hold' ? 'hold' : 'held amount', op.traceId);
  if (op.kind === 'settle') checkAmount(op.cost, 'cost', op.traceId);
}

function checkAmount(v: bigint, what: string, traceId: string): void {
  if (typeof v === 'bigint' && v >= 0n && v <= MAX_WALLET_NANO) return;
  throw new WalletError(
    'amount_out_of_range',
    `the ${what} of trace ${traceId} (${String(v)} nano-USD) is outside what the ledger holds (0 to ${MAX_WALLET_NANO} nano-USD); nothing of it was written`,
  );
}

function checkWorkspace(workspace: string): void {
  if (typeof workspace !== 'string' || workspace === '') throw new RangeError('workspace is required');
}
