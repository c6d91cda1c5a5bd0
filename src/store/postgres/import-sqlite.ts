// `pi-gateway migrate --from FILE --to postgres://…`: an embedded database moved into an empty,
// migrated PostgreSQL database in ONE transaction — keys (hashes), sealed secrets (the sealed bytes:
// the same PI_MASTER_KEY opens them), wallets, the ledger with its ids, the holds, the request
// log, operator accounts and the audit trail (ids kept). Nothing is decrypted. Open holds arrive with a fresh lease: the embedded server that took them
// is stopped, so unless a node settles them they are released when it lapses, as after a crash.
import type { Dump } from '../dump-format.ts';
import { inTransaction, type PgClient, type PgPool } from './db.ts';
import { HOLD_LEASE_MS } from './holds.ts';
import { requestLogInsert } from './request-log.ts';

export interface ImportCounts {
  secrets: number;
  keys: number;
  wallets: number;
  ledger: number;
  holds: number;
  requestLog: number;
  operators: number;
  audit: number;
}

const BATCH = 500;

/** True when the target holds no row of any table a migration fills. */
export async function pgIsEmpty(pool: PgPool): Promise<{ empty: boolean; tables: string[] }> {
  const tables: string[] = [];
  for (const t of ['secrets', 'api_keys', 'wallets', 'ledger', 'holds', 'request_log', 'operators', 'audit_log']) {
    const r = await pool.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${t}) AS any`);
    if (r.rows[0]?.any) tables.push(t);
  }
  return { empty: tables.length === 0, tables };
}

async function insertRows(
  c: PgClient,
  table: string,
  cols: readonly string[],
  rows: readonly (readonly unknown[])[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH) {
    const part = rows.slice(i, i + BATCH);
    const groups = part.map((_, r) => `(${cols.map((_, j) => `$${r * cols.length + j + 1}`).join(', ')})`);
    await c.query(`INSERT INTO ${table} (${cols.join(', ')}) VALUES ${groups.join(', ')}`, part.flat());
  }
}

const LOG_COLUMNS = [
  'trace_id',
  'ts',
  'workspace',
  'key_id',
  'endpoint',
  'model_requested',
  'model_served',
  'provider',
  'deployment',
  'attempts',
  'attempts_json',
  'stream',
  'status',
  'error_code',
  'latency_ms',
  'ttfb_ms',
  'prompt_tokens',
  'completion_tokens',
  'reasoning_tokens',
  'cached_tokens',
  'cost_nano',
  'app_title',
  'app_origin',
  'session_id',
  'ended',
] as const;

export async function importDump(pool: PgPool, dump: Dump, now: number): Promise<ImportCounts> {
  return inTransaction(pool, async (c) => {
    // Nobody writes while the copy runs (a node started too early waits, then sees it all).
    await c.query(
      'LOCK TABLE secrets, api_keys, wallets, ledger, holds, request_log, operators, audit_log IN EXCLUSIVE MODE',
    );
    await insertRows(
      c,
      'secrets',
      ['name', 'nonce', 'ciphertext', 'tag', 'key_id', 'created_at', 'updated_at'],
      dump.secrets.map((s) => [s.name, s.nonce, s.ciphertext, s.tag, s.key_id, s.created_at, s.updated_at]),
    );
    await insertRows(
      c,
      'api_keys',
      ['id', 'prefix', 'hash', 'workspace', 'name', 'rpm', 'expires_at', 'created_at', 'revoked_at'],
      dump.keys.map((k) => [
        k.id,
        k.prefix,
        k.hash,
        k.workspace,
        k.name,
        k.rpm,
        k.expires_at,
        k.created_at,
        k.revoked_at,
      ]),
    );
    await insertRows(
      c,
      'wallets',
      ['workspace', 'balance_nano', 'held_nano', 'updated_at'],
      dump.wallets.map((w) => [w.workspace, w.balance_nano, w.held_nano, w.updated_at]),
    );
    let ledger = 0;
    for (const rows of dump.ledger(BATCH)) {
      await insertRows(
        c,
        'ledger',
        ['id', 'workspace', 'kind', 'amount_nano', 'trace_id', 'note', 'details', 'created_at'],
        rows.map((l) => [l.id, l.workspace, l.kind, l.amount_nano, l.trace_id, l.note, l.details, l.created_at]),
      );
      ledger += rows.length;
    }
    await c.query(
      "SELECT setval('ledger_id_seq', GREATEST((SELECT COALESCE(MAX(id), 0) FROM ledger), 1), (SELECT COUNT(*) > 0 FROM ledger))",
    );
    await insertRows(
      c,
      'holds',
      ['trace_id', 'workspace', 'amount_nano', 'state', 'cost_nano', 'node', 'created_at', 'lease_until', 'closed_at'],
      dump.holds.map((h) => [
        h.trace_id,
        h.workspace,
        h.amount_nano,
        h.state,
        h.cost_nano,
        `embedded:${h.owner}`,
        h.created_at,
        now + HOLD_LEASE_MS,
        h.closed_at,
      ]),
    );
    let requestLog = 0;
    for (const rows of dump.requestLog(BATCH)) {
      const values = rows.map((r) => [
        r.id,
        ...LOG_COLUMNS.map((col) => (col === 'stream' ? Number(r[col]) === 1 : (r[col] ?? null))),
      ]);
      await c.query(requestLogInsert(rows.length, true), values.flat());
      requestLog += rows.length;
    }
    await c.query(
      "SELECT setval('request_log_id_seq', GREATEST((SELECT COALESCE(MAX(id), 0) FROM request_log), 1), (SELECT COUNT(*) > 0 FROM request_log))",
    );
    const { operators, audit } = await importOperators(c, dump);
    return {
      operators,
      audit,
      secrets: dump.secrets.length,
      keys: dump.keys.length,
      wallets: dump.wallets.length,
      ledger,
      holds: dump.holds.length,
      requestLog,
    };
  });
}

/** Operator accounts (their hashes as they are) and the audit trail with its ids. */
async function importOperators(c: PgClient, dump: Dump): Promise<{ operators: number; audit: number }> {
  await insertRows(
    c,
    'operators',
    ['name', 'role', 'password_hash', 'created_at'],
    dump.operators.map((o) => [o.name, o.role, o.password_hash, o.created_at]),
  );
  let audit = 0;
  for (const rows of dump.audit(BATCH)) {
    await insertRows(
      c,
      'audit_log',
      ['id', 'at', 'actor', 'action', 'target', 'client', 'outcome', 'detail'],
      rows.map((a) => [a.id, a.at, a.actor, a.action, a.target, a.client, a.outcome, a.detail]),
    );
    audit += rows.length;
  }
  await c.query(
    "SELECT setval('audit_log_id_seq', GREATEST((SELECT COALESCE(MAX(id), 0) FROM audit_log), 1), (SELECT COUNT(*) > 0 FROM audit_log))",
  );
  return { operators: dump.operators.length, audit };
}
