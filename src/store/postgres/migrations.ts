// The PostgreSQL schema as ordered migrations, run by `pi-gateway migrate --db postgres://…` and
// checked (never run) by `serve`, so that a fleet of nodes never races to change its schema at start.
// Append new migrations; never edit one that has shipped (`schema_migrations` records what ran).
//
// The tables mirror the embedded store's (src/store/sqlite/migrations.ts) so `ledger verify` checks the
// same invariants and `migrate --from FILE` copies rows as they are. Differences: holds carry a lease
// (`lease_until`, epoch ms) instead of an owner pid, since a hold's owner may be on another machine;
// `store_changes` counts writes to keys and secrets, and `store_change_log` says which key or secret
// each was, so every node applies a CLI change to its caches.
import { type PgPool, inTransaction } from './db.ts';

export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    name: 'init',
    sql: `
CREATE TABLE secrets (
  name        TEXT PRIMARY KEY,
  nonce       BYTEA NOT NULL,
  ciphertext  BYTEA NOT NULL,
  tag         BYTEA NOT NULL,
  key_id      TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
  updated_at  BIGINT NOT NULL
);

CREATE TABLE api_keys (
  id          TEXT PRIMARY KEY,
  prefix      TEXT NOT NULL,
  hash        BYTEA NOT NULL,
  workspace   TEXT NOT NULL,
  name        TEXT,
  rpm         BIGINT,
  expires_at  BIGINT,
  created_at  BIGINT NOT NULL,
  revoked_at  BIGINT
);
CREATE INDEX api_keys_prefix ON api_keys(prefix);
CREATE INDEX api_keys_workspace ON api_keys(workspace, created_at);

CREATE TABLE wallets (
  workspace     TEXT PRIMARY KEY,
  balance_nano  BIGINT NOT NULL DEFAULT 0,
  held_nano     BIGINT NOT NULL DEFAULT 0 CHECK (held_nano >= 0),
  updated_at    BIGINT NOT NULL
);

CREATE TABLE ledger (
  id           BIGSERIAL PRIMARY KEY,
  workspace    TEXT NOT NULL REFERENCES wallets(workspace),
  kind         TEXT NOT NULL CHECK (kind IN ('credit', 'hold', 'settle', 'release')),
  amount_nano  BIGINT NOT NULL CHECK (amount_nano >= 0),
  trace_id     TEXT NOT NULL,
  note         TEXT,
  details      TEXT,
  created_at   BIGINT NOT NULL
);
CREATE INDEX ledger_workspace ON ledger(workspace, created_at);
CREATE INDEX ledger_trace ON ledger(trace_id);
CREATE UNIQUE INDEX ledger_credit_once ON ledger(trace_id) WHERE kind = 'credit';
CREATE UNIQUE INDEX ledger_hold_once ON ledger(trace_id) WHERE kind = 'hold';
CREATE UNIQUE INDEX ledger_close_once ON ledger(trace_id) WHERE kind IN ('settle', 'release');
CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'ledger is append-only'; END $$;
CREATE TRIGGER ledger_no_update BEFORE UPDATE OR DELETE ON ledger FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ledger FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();

-- One row per admission hold. A node renews lease_until of the holds it still serves; any node
-- releases an open hold whose lease lapsed (its node died or lost the database).
CREATE TABLE holds (
  trace_id     TEXT PRIMARY KEY,
  workspace    TEXT NOT NULL REFERENCES wallets(workspace),
  amount_nano  BIGINT NOT NULL CHECK (amount_nano >= 0),
  state        TEXT NOT NULL CHECK (state IN ('open', 'settled', 'released')),
  cost_nano    BIGINT,
  node         TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  lease_until  BIGINT NOT NULL,
  closed_at    BIGINT
);
CREATE INDEX holds_open ON holds(workspace) WHERE state = 'open';
CREATE INDEX holds_lease ON holds(lease_until) WHERE state = 'open';

CREATE TABLE request_log (
  id                 BIGSERIAL PRIMARY KEY,
  trace_id           TEXT NOT NULL,
  ts                 BIGINT NOT NULL,
  workspace          TEXT,
  key_id             TEXT,
  endpoint           TEXT NOT NULL,
  model_requested    TEXT,
  model_served       TEXT,
  provider           TEXT,
  deployment         TEXT,
  attempts           INTEGER NOT NULL,
  attempts_json      TEXT NOT NULL,
  stream             BOOLEAN NOT NULL,
  status             INTEGER NOT NULL,
  error_code         TEXT,
  latency_ms         BIGINT,
  ttfb_ms            BIGINT,
  prompt_tokens      BIGINT,
  completion_tokens  BIGINT,
  reasoning_tokens   BIGINT,
  cached_tokens      BIGINT,
  cost_nano          BIGINT,
  app_title          TEXT,
  app_origin         TEXT,
  session_id         TEXT,
  ended              TEXT
);
CREATE INDEX request_log_workspace ON request_log(workspace, id);
CREATE INDEX request_log_trace ON request_log(trace_id);

-- Bumped by every write to keys and secrets: nodes poll it and drop their caches when it moves.
CREATE TABLE store_changes (id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL);
INSERT INTO store_changes VALUES (1, 0);
CREATE FUNCTION bump_store_changes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE store_changes SET version = version + 1 WHERE id = 1; RETURN NULL; END $$;
CREATE TRIGGER api_keys_changed AFTER INSERT OR UPDATE OR DELETE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION bump_store_changes();
CREATE TRIGGER secrets_changed AFTER INSERT OR UPDATE OR DELETE ON secrets FOR EACH STATEMENT EXECUTE FUNCTION bump_store_changes();
`,
  },
  {
    version: 2,
    name: 'operators-audit',
    // Named operator accounts and the append-only audit trail (src/store/postgres/operators.ts), as the
    // embedded store's migration 5.
    sql: `
CREATE TABLE operators (
  name           TEXT PRIMARY KEY,
  role           TEXT NOT NULL CHECK (role IN ('admin', 'viewer')),
  password_hash  TEXT NOT NULL,
  created_at     BIGINT NOT NULL
);
CREATE TABLE audit_log (
  id       BIGSERIAL PRIMARY KEY,
  at       BIGINT NOT NULL,
  actor    TEXT NOT NULL,
  action   TEXT NOT NULL,
  target   TEXT,
  client   TEXT,
  outcome  TEXT NOT NULL,
  detail   TEXT
);
CREATE INDEX audit_log_at ON audit_log(at);
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$;
CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
`,
  },
  {
    version: 3,
    name: 'wallet-slices',
    // Escrow (src/store/postgres/slices.ts): a node reserves a slice of a wallet's available balance,
    // counted in the wallet's held amount and leased like a hold, and admits against it in memory.
    // A settlement out of a slice is a ledger settle row naming its slice (no hold row of its own).
    sql: `
CREATE TABLE slices (
  id           TEXT PRIMARY KEY,
  workspace    TEXT NOT NULL REFERENCES wallets(workspace),
  amount_nano  BIGINT NOT NULL CHECK (amount_nano >= 0),
  spent_nano   BIGINT NOT NULL DEFAULT 0 CHECK (spent_nano >= 0),
  state        TEXT NOT NULL CHECK (state IN ('open', 'returned', 'lapsed')),
  node         TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  lease_until  BIGINT NOT NULL,
  closed_at    BIGINT
);
CREATE INDEX slices_open ON slices(workspace) WHERE state = 'open';
CREATE INDEX slices_lease ON slices(lease_until) WHERE state = 'open';
ALTER TABLE ledger ADD COLUMN slice_id TEXT;
CREATE INDEX ledger_slice ON ledger(slice_id) WHERE slice_id IS NOT NULL;
`,
  },
  {
    version: 4,
    name: 'store-change-log',
    // Which key or secret each write changed, so that a node applies only that change
    // (src/fleet/pg-store-view.ts) instead of reloading every key digest and credential and
    // dropping its verified keys. A statement that changes n keys (or secrets) moves
    // `store_changes` by n and logs each under one of those versions; it holds the counter's row
    // lock until commit, so versions commit in order and without gaps (a rolled-back write takes
    // its versions back), and a node that read version V can read every change up to V. One
    // counter update per statement, not per row, so a bulk import stays linear. The last 10,000
    // changes are kept; a node further behind reloads everything, as every node did on any
    // change before this log.
    sql: `
CREATE TABLE store_change_log (
  version  BIGINT PRIMARY KEY,
  kind     TEXT NOT NULL CHECK (kind IN ('key', 'secret')),
  ref      TEXT NOT NULL
);
DROP TRIGGER api_keys_changed ON api_keys;
DROP TRIGGER secrets_changed ON secrets;
-- TG_ARGV: the kind, and the column naming a row (a key's id, a secret's name). An update names
-- the row before and after (the same one, unless that column changed).
CREATE FUNCTION log_store_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  refs TEXT[];
  n INTEGER;
  v BIGINT;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(DISTINCT to_jsonb(r) ->> TG_ARGV[1]) INTO refs FROM new_rows r;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(DISTINCT to_jsonb(r) ->> TG_ARGV[1]) INTO refs FROM old_rows r;
  ELSE
    SELECT array_agg(DISTINCT ref) INTO refs FROM (
      SELECT to_jsonb(o) ->> TG_ARGV[1] AS ref FROM old_rows o
      UNION SELECT to_jsonb(w) ->> TG_ARGV[1] FROM new_rows w
    ) AS changed;
  END IF;
  n := coalesce(array_length(refs, 1), 0);
  IF n = 0 THEN RETURN NULL; END IF;
  UPDATE store_changes SET version = version + n WHERE id = 1 RETURNING version INTO v;
  INSERT INTO store_change_log (version, kind, ref)
    SELECT v - n + ord, TG_ARGV[0], ref FROM unnest(refs) WITH ORDINALITY AS u(ref, ord);
  DELETE FROM store_change_log WHERE version <= v - 10000;
  RETURN NULL;
END $$;
CREATE TRIGGER api_keys_inserted AFTER INSERT ON api_keys REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION log_store_changes('key', 'id');
CREATE TRIGGER api_keys_updated AFTER UPDATE ON api_keys REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION log_store_changes('key', 'id');
CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION log_store_changes('key', 'id');
CREATE TRIGGER secrets_inserted AFTER INSERT ON secrets REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION log_store_changes('secret', 'name');
CREATE TRIGGER secrets_updated AFTER UPDATE ON secrets REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION log_store_changes('secret', 'name');
CREATE TRIGGER secrets_deleted AFTER DELETE ON secrets REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION log_store_changes('secret', 'name');
`,
  },
];

/** Arbitrary constant for pg_advisory_xact_lock: two `migrate` runs at once serialise on it. */
const MIGRATION_LOCK = 7_311_045_201;

export function latestPgVersion(migrations: readonly PgMigration[] = PG_MIGRATIONS): number {
  return migrations.reduce((max, m) => Math.max(max, m.version), 0);
}

/** The schema version the database is at (0: never migrated). */
export async function pgSchemaVersion(pool: PgPool): Promise<number> {
  const t = await pool.query<{ exists: boolean }>(
    "SELECT to_regclass('public.schema_migrations') IS NOT NULL AS exists",
  );
  if (!t.rows[0]?.exists) return 0;
  const r = await pool.query<{ v: number | null }>('SELECT MAX(version)::int AS v FROM schema_migrations');
  return r.rows[0]?.v ?? 0;
}

/** Runs every migration the database lacks, in one transaction. Returns the versions applied. */
export async function migratePg(
  pool: PgPool,
  now: number,
  migrations: readonly PgMigration[] = PG_MIGRATIONS,
): Promise<number[]> {
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  return inTransaction(pool, async (c) => {
    await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await c.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
    );
    const r = await c.query<{ v: number | null }>('SELECT MAX(version)::int AS v FROM schema_migrations');
    const current = r.rows[0]?.v ?? 0;
    const latest = latestPgVersion(sorted);
    if (current > latest)
      throw new Error(`database schema version ${current} is newer than this build (${latest}); upgrade pi-gateway`);
    const applied: number[] = [];
    for (const m of sorted) {
      if (m.version <= current) continue;
      await c.query(m.sql);
      await c.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
        m.version,
        m.name,
        now,
      ]);
      applied.push(m.version);
    }
    return applied;
  });
}
