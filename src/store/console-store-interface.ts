// The store as the operator console reads it (src/console/, through src/admin/operator-view.ts): one
// asynchronous interface over either backend — the embedded SQLite file (src/store/sqlite/console-store.ts;
// its calls are synchronous underneath) or PostgreSQL (src/store/postgres/console-store.ts). The console's
// handlers await it and never ask which backend answers, so the request log, spend, wallets, the ledger
// and keys read the same on a single process and on a fleet node.
import type { CreateKeyInput } from './key-format.ts';
import type { RequestLogFilter, SpendDetail, SpendGroup, SpendLine } from './search-filters.ts';
import type { SeriesGroup, SeriesInterval, SeriesPoint } from './spend-series-sql.ts';
import type { AuditEntry, AuditPage, NewAuditEntry, OperatorAccount, OperatorRole } from './operator-types.ts';
import type { ApiKeyRecord, CreatedApiKey, CreditResult, LedgerEntry, RequestLogEntry, WalletView } from './types.ts';

export interface ConsoleRequestLog {
  /** The rows a filter selects, newest first, at most `limit` (1–1000); `more`: older rows match too
   *  (with `afterId`: newer rows do). */
  search(filter: RequestLogFilter, limit?: number): Promise<{ rows: RequestLogEntry[]; more: boolean }>;
  /** Cost, tokens and requests by one dimension; largest cost first (days: oldest first). */
  spend(group: SpendGroup, filter: RequestLogFilter): Promise<SpendLine[]>;
  /** The same by day × workspace × model × provider (the CSV export), oldest day first. */
  spendDetail(filter: RequestLogFilter): Promise<SpendDetail[]>;
  /** Requests, errors, latency p50/p95 and cost per hour or day and per group; buckets with rows only. */
  series(interval: SeriesInterval, by: SeriesGroup, filter: RequestLogFilter): Promise<SeriesPoint[]>;
  /** Key id → the time of its latest logged request (any outcome, any time), of one workspace if given. */
  lastUse(workspace?: string): Promise<Map<string, number>>;
}

export interface ConsoleWallets {
  show(workspace: string, now: number): Promise<WalletView>;
  /** Workspaces that have a wallet, sorted. */
  workspaces(): Promise<string[]>;
  /** A workspace's ledger rows, newest first. */
  ledger(workspace: string, opts?: { limit?: number; beforeId?: number }): Promise<LedgerEntry[]>;
  /** Every ledger row of one trace, oldest first. */
  ledgerOf(traceId: string): Promise<LedgerEntry[]>;
  /** One credit ledger row with the operator's note. */
  /** With an idempotency key, a credit the key already made is not applied again (see `CreditResult`). */
  credit(workspace: string, amountNano: bigint, note: string, idempotencyKey?: string): Promise<CreditResult>;
}

export interface ConsoleKeys {
  create(input: CreateKeyInput): Promise<CreatedApiKey>;
  get(id: string): Promise<ApiKeyRecord | null>;
  /** Oldest first. */
  list(workspace?: string): Promise<ApiKeyRecord[]>;
  revoke(id: string): Promise<boolean>;
  /** Sets (or with null clears) a key's expiry; true when the key exists and is not revoked. */
  setExpiry(id: string, expiresAt: number | null): Promise<boolean>;
}

/** Operator accounts (src/store/operator-types.ts); the CLI adds and removes them, the console reads them. */
export interface OperatorAccounts {
  /** False when the name is taken. */
  add(name: string, role: OperatorRole, passwordHash: string): Promise<boolean>;
  get(name: string): Promise<OperatorAccount | null>;
  /** By name. */
  list(): Promise<OperatorAccount[]>;
  remove(name: string): Promise<boolean>;
}

/** The append-only audit trail. */
export interface AuditTrail {
  append(entry: NewAuditEntry): Promise<void>;
  /** Newest first. */
  list(page: AuditPage): Promise<AuditEntry[]>;
}

export interface ConsoleStore {
  /** 'sqlite' (a file) or 'postgres' (a URL): for messages only. */
  readonly kind: 'sqlite' | 'postgres';
  readonly requestLog: ConsoleRequestLog;
  readonly wallets: ConsoleWallets;
  readonly apiKeys: ConsoleKeys;
  readonly operators: OperatorAccounts;
  readonly audit: AuditTrail;
}
