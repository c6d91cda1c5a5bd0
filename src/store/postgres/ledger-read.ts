// Reading ledger rows in PostgreSQL for operators: a workspace's rows newest first (paged by id) and
// one trace's rows oldest first — the embedded store's `Wallets.ledger` and `ledgerOf`
// (src/store/sqlite/wallets.ts), same limits, order and row shape.
import { LEDGER_COLUMNS as COLUMNS, type LedgerRow, ledgerEntry } from '../ledger-entry.ts';
import type { LedgerEntry } from '../types.ts';
import type { PgPool } from './db.ts';

/** A workspace's ledger rows, newest first: at most `limit` (1–1000), older than `beforeId` when given. */
export async function ledgerPage(
  pool: PgPool,
  workspace: string,
  opts: { limit?: number; beforeId?: number } = {},
): Promise<LedgerEntry[]> {
  const limit = Math.min(Math.max(Math.trunc(opts.limit ?? 50), 1), 1000);
  const r =
    opts.beforeId === undefined
      ? await pool.query<LedgerRow>(`SELECT ${COLUMNS} FROM ledger WHERE workspace = $1 ORDER BY id DESC LIMIT $2`, [
          workspace,
          limit,
        ])
      : await pool.query<LedgerRow>(
          `SELECT ${COLUMNS} FROM ledger WHERE workspace = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
          [workspace, opts.beforeId, limit],
        );
  return r.rows.map(ledgerEntry);
}

/** Every ledger row of one trace (its hold, then its settlement or release; or a credit), oldest first. */
export async function ledgerOfTrace(pool: PgPool, traceId: string): Promise<LedgerEntry[]> {
  const r = await pool.query<LedgerRow>(`SELECT ${COLUMNS} FROM ledger WHERE trace_id = $1 ORDER BY id`, [traceId]);
  return r.rows.map(ledgerEntry);
}
