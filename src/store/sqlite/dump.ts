// An embedded database read whole, row for row, for `pi-gateway migrate --from FILE --to postgres://…`:
// sealed secrets as their sealed bytes, API keys with their hashes, wallets, the ledger (ids kept),
// the holds, the request log, operator accounts (their password hashes) and the audit trail. Read in
// one read transaction, so the copy is one consistent
// snapshot. Nothing here decrypts anything.
import type {
  Dump,
  DumpAuditRow,
  DumpHold,
  DumpKey,
  DumpLedgerRow,
  DumpLogRow,
  DumpOperator,
  DumpSecret,
  DumpWallet,
} from '../dump-format.ts';
import { openDatabase, type SqliteDatabase } from './db.ts';

/**
 * Every hold: the open ones from the holds table, the closed ones from their ledger rows (the holds
 * table keeps open holds only; PostgreSQL keeps a row per hold). A closed hold's owning process
 * no longer matters: its owner is ''.
 */
const HOLDS = `SELECT trace_id, workspace, amount_nano, state, cost_nano, owner, created_at, closed_at FROM holds
  UNION ALL
  SELECT h.trace_id, h.workspace, h.amount_nano, CASE c.kind WHEN 'settle' THEN 'settled' ELSE 'released' END,
         CASE c.kind WHEN 'settle' THEN c.amount_nano END, '', h.created_at, c.created_at
  FROM ledger h JOIN ledger c ON c.trace_id = h.trace_id AND c.kind IN ('settle', 'release')
  WHERE h.kind = 'hold'
  ORDER BY 7, 1`;

function* pages<T>(db: SqliteDatabase, sql: string, batch: number): Iterable<T[]> {
  let after = -1n;
  const stmt = db.prepare(sql).safeIntegers(true);
  for (;;) {
    const rows = stmt.all(after, batch) as (T & { id: bigint })[];
    if (rows.length === 0) return;
    yield rows;
    after = (rows[rows.length - 1] as { id: bigint }).id;
  }
}

/** Opens `file` read-only (it must exist and be fully migrated) inside one read transaction. */
export function openDump(file: string): Dump {
  const db = openDatabase(file, { readonly: true });
  db.exec('BEGIN');
  const all = <T>(sql: string): T[] => db.prepare(sql).safeIntegers(true).all() as T[];
  const count = (table: string) => Number(db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get());
  return {
    secrets: all<DumpSecret>(
      'SELECT name, nonce, ciphertext, tag, key_id, created_at, updated_at FROM secrets ORDER BY name',
    ),
    keys: all<DumpKey>(
      'SELECT id, prefix, hash, workspace, name, rpm, expires_at, created_at, revoked_at FROM api_keys ORDER BY created_at, id',
    ),
    wallets: all<DumpWallet>('SELECT workspace, balance_nano, held_nano, updated_at FROM wallets ORDER BY workspace'),
    holds: all<DumpHold>(HOLDS),
    operators: all<DumpOperator>('SELECT name, role, password_hash, created_at FROM operators ORDER BY name'),
    audit: (batch) =>
      pages<DumpAuditRow>(
        db,
        'SELECT id, at, actor, action, target, client, outcome, detail FROM audit_log WHERE id > ? ORDER BY id LIMIT ?',
        batch,
      ),
    ledger: (batch) =>
      pages<DumpLedgerRow>(
        db,
        'SELECT id, workspace, kind, amount_nano, trace_id, note, details, created_at FROM ledger WHERE id > ? ORDER BY id LIMIT ?',
        batch,
      ),
    requestLog: (batch) => pages<DumpLogRow>(db, 'SELECT * FROM request_log WHERE id > ? ORDER BY id LIMIT ?', batch),
    counts: { ledger: count('ledger'), requestLog: count('request_log') },
    close() {
      db.exec('COMMIT');
      db.close();
    },
  };
}
