// A whole store read row for row, as `pi-gateway migrate --from FILE --to postgres://…` moves it: the
// embedded store produces it (src/store/sqlite/dump.ts) and PostgreSQL imports it
// (src/store/postgres/import-sqlite.ts), so neither backend imports the other. Sealed secrets travel
// as their sealed bytes, API keys with their hashes, operators with their password hashes; integers
// as bigint, as stored.

export interface DumpSecret {
  name: string;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
  key_id: string;
  created_at: bigint;
  updated_at: bigint;
}

export interface DumpKey {
  id: string;
  prefix: string;
  hash: Buffer;
  workspace: string;
  name: string | null;
  rpm: bigint | null;
  expires_at: bigint | null;
  created_at: bigint;
  revoked_at: bigint | null;
}

export interface DumpWallet {
  workspace: string;
  balance_nano: bigint;
  held_nano: bigint;
  updated_at: bigint;
}

export interface DumpLedgerRow {
  id: bigint;
  workspace: string;
  kind: string;
  amount_nano: bigint;
  trace_id: string;
  note: string | null;
  details: string | null;
  created_at: bigint;
}

export interface DumpHold {
  trace_id: string;
  workspace: string;
  amount_nano: bigint;
  state: string;
  cost_nano: bigint | null;
  owner: string;
  created_at: bigint;
  closed_at: bigint | null;
}

export interface DumpOperator {
  name: string;
  role: string;
  password_hash: string;
  created_at: bigint;
}

export interface DumpAuditRow {
  id: bigint;
  at: bigint;
  actor: string;
  action: string;
  target: string | null;
  client: string | null;
  outcome: string;
  detail: string | null;
}

/** A request-log row as stored (attempts_json still JSON text, stream 0/1). */
export type DumpLogRow = Record<string, string | number | bigint | null | Buffer>;

export interface Dump {
  secrets: DumpSecret[];
  keys: DumpKey[];
  wallets: DumpWallet[];
  holds: DumpHold[];
  operators: DumpOperator[];
  /** Audit rows in id order, `batch` at a time. */
  audit(batch: number): Iterable<DumpAuditRow[]>;
  /** Ledger rows in id order, `batch` at a time. */
  ledger(batch: number): Iterable<DumpLedgerRow[]>;
  /** Request-log rows in id order, `batch` at a time. */
  requestLog(batch: number): Iterable<DumpLogRow[]>;
  counts: { ledger: number; requestLog: number };
  close(): void;
}
