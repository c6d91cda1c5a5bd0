// A ledger row as both stores read it (SQLite in src/store/sqlite/wallets.ts, PostgreSQL in src/store/postgres/ledger-read.ts) and
// the `LedgerEntry` it becomes.
import type { LedgerDetails, LedgerEntry, LedgerKind } from './types.ts';

export const LEDGER_COLUMNS = 'id, workspace, kind, amount_nano, trace_id, note, details, created_at';

export interface LedgerRow {
  id: bigint;
  workspace: string;
  kind: LedgerKind;
  amount_nano: bigint;
  trace_id: string;
  note: string | null;
  details: string | null;
  created_at: bigint;
}

export function ledgerEntry(r: LedgerRow): LedgerEntry {
  return {
    id: Number(r.id),
    workspace: r.workspace,
    kind: r.kind,
    amount: r.amount_nano,
    traceId: r.trace_id,
    note: r.note,
    details: r.details === null ? null : (JSON.parse(r.details) as LedgerDetails),
    createdAt: Number(r.created_at),
  };
}
