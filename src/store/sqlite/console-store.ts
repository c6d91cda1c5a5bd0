// The store as the operator console reads it (src/console/, through src/admin/operator-view.ts): one
// asynchronous interface over either backend — the embedded SQLite file (wrapped here; its calls are
// synchronous underneath) or PostgreSQL (src/store-pg/console-store.ts). The console's handlers await
// it and never ask which backend answers, so the request log, spend, wallets, the ledger and keys
// read the same on a single process and on a fleet node.
import type { CreateKeyInput } from './api-keys.ts';
import type { RequestLogFilter, SpendDetail, SpendGroup, SpendLine } from './request-log-search.ts';
import type { SeriesGroup, SeriesInterval, SeriesPoint } from './spend-series.ts';
import type { AuditEntry, AuditPage, NewAuditEntry, OperatorAccount, OperatorRole } from './operators.ts';
import type { Store } from './store.ts';
import type { ApiKeyRecord, CreatedApiKey, LedgerEntry, RequestLogEntry, WalletView } from '../types.ts';
import { syncCall } from './sync-call.ts';

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
  credit(workspace: string, amountNano: bigint, note: string): Promise<{ traceId: string; balance: bigint }>;
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

/** Operator accounts (src/store/operators.ts); the CLI adds and removes them, the console reads them. */
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

/** The embedded store behind the console's interface (each call runs at once, synchronously). */
export function sqliteConsole(store: Store): ConsoleStore {
  const run = syncCall;
  return {
    kind: 'sqlite',
    requestLog: {
      search: (filter, limit) => run(() => store.requestLog.search(filter, limit)),
      spend: (group, filter) => run(() => store.requestLog.spend(group, filter)),
      spendDetail: (filter) => run(() => store.requestLog.spendDetail(filter)),
      series: (interval, by, filter) => run(() => store.requestLog.series(interval, by, filter)),
      lastUse: (workspace) => run(() => store.requestLog.lastUse(workspace)),
    },
    wallets: {
      show: (ws, now) => run(() => store.wallets.show(ws, now)),
      workspaces: () => run(() => store.wallets.workspaces()),
      ledger: (ws, opts) => run(() => store.wallets.ledger(ws, opts)),
      ledgerOf: (traceId) => run(() => store.wallets.ledgerOf(traceId)),
      credit: (ws, amount, note) => run(() => store.wallets.credit(ws, amount, note)),
    },
    apiKeys: {
      create: (input) => run(() => store.apiKeys.create(input)),
      get: (id) => run(() => store.apiKeys.get(id)),
      list: (workspace) => run(() => store.apiKeys.list(workspace)),
      revoke: (id) => run(() => store.apiKeys.revoke(id)),
      setExpiry: (id, at) => run(() => store.apiKeys.setExpiry(id, at)),
    },
    operators: sqliteOperators(store),
    audit: sqliteAudit(store),
  };
}

export function sqliteOperators(store: Store): OperatorAccounts {
  return {
    add: (name, role, hash) => syncCall(() => store.operators.add(name, role, hash)),
    get: (name) => syncCall(() => store.operators.get(name)),
    list: () => syncCall(() => store.operators.list()),
    remove: (name) => syncCall(() => store.operators.remove(name)),
  };
}

export function sqliteAudit(store: Store): AuditTrail {
  return {
    append: (entry) => syncCall(() => store.audit.append(entry)),
    list: (page) => syncCall(() => store.audit.list(page)),
  };
}
