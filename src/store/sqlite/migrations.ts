// The schema, as an ordered list of migrations. Append new ones; never edit one that has shipped,
// because `schema_migrations` records which versions a database already ran.
// Kept as TS strings rather than .sql files so `tsc` output carries them without a copy step.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'init',
    sql: `
-- Sealed upstream credentials (AES-256-GCM, the name as additional authenticated data).
CREATE TABLE secrets (
  name        TEXT PRIMARY KEY,
  nonce       BLOB NOT NULL,
  ciphertext  BLOB NOT NULL,
  tag         BLOB NOT NULL,
  key_id      TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
) STRICT;

-- API keys: only sha256(key) and a short non-secret prefix are kept.
CREATE TABLE api_keys (
  id          TEXT PRIMARY KEY,
  prefix      TEXT NOT NULL,
  hash        BLOB NOT NULL,
  workspace   TEXT NOT NULL,
  name        TEXT,
  rpm         INTEGER,
  expires_at  INTEGER,
  created_at  INTEGER NOT NULL,
  revoked_at  INTEGER
) STRICT;
CREATE INDEX api_keys_prefix ON api_keys(prefix);
CREATE INDEX api_keys_workspace ON api_keys(workspace, created_at);

-- One wallet per workspace. balance = credits − settlements; held = open holds. Both are caches
-- of the ledger + holds, changed in the same transaction as the ledger row; ledger verify recomputes them.
CREATE TABLE wallets (
  workspace     TEXT PRIMARY KEY,
  balance_nano  INTEGER NOT NULL DEFAULT 0,
  held_nano     INTEGER NOT NULL DEFAULT 0 CHECK (held_nano >= 0),
  updated_at    INTEGER NOT NULL
) STRICT;

-- Append-only money journal. Every row names the trace it belongs to.
CREATE TABLE ledger (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  workspace    TEXT NOT NULL REFERENCES wallets(workspace),
  kind         TEXT NOT NULL CHECK (kind IN ('credit', 'hold', 'settle', 'release')),
  amount_nano  INTEGER NOT NULL CHECK (amount_nano >= 0),
  trace_id     TEXT NOT NULL,
  note         TEXT,
  details      TEXT,
  created_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX ledger_workspace ON ledger(workspace, created_at);
-- A trace is credited once, held once, and closed (settled or released) once.
CREATE UNIQUE INDEX ledger_credit_once ON ledger(trace_id) WHERE kind = 'credit';
CREATE UNIQUE INDEX ledger_hold_once ON ledger(trace_id) WHERE kind = 'hold';
CREATE UNIQUE INDEX ledger_close_once ON ledger(trace_id) WHERE kind IN ('settle', 'release');
CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger
  BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;
CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger
  BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END;

-- Admission holds. owner/owner_pid name the store instance that took the hold, so a restart
-- releases only holds whose process is gone.
CREATE TABLE holds (
  trace_id     TEXT PRIMARY KEY,
  workspace    TEXT NOT NULL REFERENCES wallets(workspace),
  amount_nano  INTEGER NOT NULL CHECK (amount_nano >= 0),
  state        TEXT NOT NULL CHECK (state IN ('open', 'settled', 'released')),
  cost_nano    INTEGER,
  owner        TEXT NOT NULL,
  owner_pid    INTEGER NOT NULL,
  created_at   INTEGER NOT NULL,
  closed_at    INTEGER
) STRICT;
CREATE INDEX holds_open ON holds(workspace) WHERE state = 'open';

-- Request log: routing outcome, timings, tokens, cost, attribution. No keys, credentials or prompts.
CREATE TABLE request_log (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT,
  trace_id           TEXT NOT NULL,
  ts                 INTEGER NOT NULL,
  workspace          TEXT,
  key_id             TEXT,
  endpoint           TEXT NOT NULL,
  model_requested    TEXT,
  model_served       TEXT,
  provider           TEXT,
  deployment         TEXT,
  attempts           INTEGER NOT NULL,
  attempts_json      TEXT NOT NULL,
  stream             INTEGER NOT NULL,
  status             INTEGER NOT NULL,
  error_code         TEXT,
  latency_ms         INTEGER,
  ttfb_ms            INTEGER,
  prompt_tokens      INTEGER,
  completion_tokens  INTEGER,
  reasoning_tokens   INTEGER,
  cached_tokens      INTEGER,
  cost_nano          INTEGER,
  app_title          TEXT,
  app_origin         TEXT,
  session_id         TEXT
) STRICT;
CREATE INDEX request_log_workspace ON request_log(workspace, id);
CREATE INDEX request_log_trace ON request_log(trace_id);
`,
  },
  {
    version: 2,
    name: 'hold-owner-host',
    // Pids are only meaningful on the host (or container) that took the hold. '' = recorded before
    // this column existed, when every process was assumed to share one host.
    sql: `ALTER TABLE holds ADD COLUMN owner_host TEXT NOT NULL DEFAULT '';`,
  },
  {
    version: 3,
    name: 'request-end',
    // How each request ended (src/observe/request-end.ts). NULL for rows written before this column.
    sql: `ALTER TABLE request_log ADD COLUMN ended TEXT;`,
  },
  {
    version: 4,
    name: 'store-changes',
    // A counter bumped by every change a serving gateway caches (API keys, secrets, credits) and by
    // nothing it writes itself (holds, settlements, releases, request-log rows): with the ledger
    // written by another connection (the writer thread), PRAGMA data_version alone cannot tell the
    // CLI's commits from the gateway's own.
    sql: `
CREATE TABLE store_changes (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL) STRICT;
INSERT INTO store_changes (id, n) VALUES (1, 0);
CREATE TRIGGER api_keys_insert_changes AFTER INSERT ON api_keys BEGIN UPDATE store_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER api_keys_update_changes AFTER UPDATE ON api_keys BEGIN UPDATE store_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER api_keys_delete_changes AFTER DELETE ON api_keys BEGIN UPDATE store_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER secrets_insert_changes AFTER INSERT ON secrets BEGIN UPDATE store_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER secrets_update_changes AFTER UPDATE ON secrets BEGIN UPDATE store_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER secrets_delete_changes AFTER DELETE ON secrets BEGIN UPDATE store_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER ledger_credit_changes AFTER INSERT ON ledger WHEN NEW.kind = 'credit' BEGIN UPDATE store_changes SET n = n + 1 WHERE id = 1; END;
`,
  },
  {
    version: 5,
    name: 'lean-ledger-writes',
    // What each commit of the writer rewrites: the last page of every b-tree it touches. The holds
    // table keeps only open holds (a closed hold is its ledger rows, which `ledger verify` reads), so
    // a hold settled in the same commit that took it writes no holds row, and its index on open holds
    // per workspace (a scan of a table of open holds is as cheap) goes. The three "once per trace"
    // indexes become one, with a trace's hold and close side by side in it: one b-tree per commit,
    // not two, the same guarantees (a trace credited once, held once, closed once).
    sql: `
DELETE FROM holds WHERE state <> 'open';
DROP INDEX holds_open;
DROP INDEX ledger_credit_once;
DROP INDEX ledger_hold_once;
DROP INDEX ledger_close_once;
CREATE UNIQUE INDEX ledger_once ON ledger(trace_id, (CASE kind WHEN 'credit' THEN 0 WHEN 'hold' THEN 1 ELSE 2 END));
`,
  },
  {
    version: 6,
    name: 'operators-audit',
    // Named operator accounts for the console and the append-only audit trail of every admin write
    // and sign-in (src/store/sqlite/operators.ts); triggers keep the trail append-only.
    sql: `
CREATE TABLE operators (
  name           TEXT PRIMARY KEY,
  role           TEXT NOT NULL CHECK (role IN ('admin', 'viewer')),
  password_hash  TEXT NOT NULL,
  created_at     INTEGER NOT NULL
) STRICT;
CREATE TABLE audit_log (
  id       INTEGER PRIMARY KEY AUTOINCREMENT,
  at       INTEGER NOT NULL,
  actor    TEXT NOT NULL,
  action   TEXT NOT NULL,
  target   TEXT,
  client   TEXT,
  outcome  TEXT NOT NULL,
  detail   TEXT
) STRICT;
CREATE INDEX audit_log_at ON audit_log(at);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
`,
  },
];
