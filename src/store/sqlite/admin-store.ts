// The store as the CLI sees it: one asynchronous interface over either backend — the embedded SQLite
// file (wrapped here; its calls are synchronous underneath) or PostgreSQL (src/store-pg/). Commands
// stay thin over it and never ask which backend they talk to, so `key`, `wallet`, `ledger verify`,
// `usage`, `logs` and `secret` mean the same on both.
import type { CreateKeyInput } from './api-keys.ts';
import type { RotationResult, SecretInfo } from './secrets.ts';
import { type AuditTrail, type OperatorAccounts, sqliteAudit, sqliteOperators } from './console-store.ts';
import type { Store } from './store.ts';
import type { ApiKeyRecord, CreatedApiKey, RequestLogEntry, RequestLogQuery, UsageLine, WalletView } from '../types.ts';
import { syncCall } from './sync-call.ts';

export interface AdminKeys {
  create(input: CreateKeyInput): Promise<CreatedApiKey>;
  get(id: string): Promise<ApiKeyRecord | null>;
  /** Oldest first. */
  list(workspace?: string): Promise<ApiKeyRecord[]>;
  revoke(id: string): Promise<boolean>;
}

export interface AdminWallets {
  credit(workspace: string, amountNano: bigint, note: string): Promise<{ traceId: string; balance: bigint }>;
  show(workspace: string, now: number): Promise<WalletView>;
  /** Settlements of [since, until) (epoch ms of the ledger rows) by model and provider. */
  usage(workspace: string, since?: number, until?: number): Promise<UsageLine[]>;
  workspaces(): Promise<string[]>;
  verify(): Promise<{ ok: boolean; problems: string[] }>;
}

export interface AdminSecrets {
  set(name: string, plaintext: string): Promise<void>;
  list(): Promise<SecretInfo[]>;
  remove(name: string): Promise<boolean>;
  assertUsable(): Promise<void>;
  rotateMaster(newKey: string): Promise<RotationResult>;
}

export interface AdminStore {
  /** 'sqlite' (a file) or 'postgres' (a URL): for messages only. */
  readonly kind: 'sqlite' | 'postgres';
  readonly apiKeys: AdminKeys;
  readonly wallets: AdminWallets;
  readonly secrets: AdminSecrets;
  readonly requestLog: { query(q?: RequestLogQuery): Promise<RequestLogEntry[]> };
  readonly operators: OperatorAccounts;
  readonly audit: AuditTrail;
  close(): Promise<void>;
}

/** The embedded store behind the asynchronous interface (each call runs at once, synchronously). */
export function sqliteAdmin(store: Store): AdminStore {
  const run = syncCall;
  return {
    kind: 'sqlite',
    apiKeys: {
      create: (input) => run(() => store.apiKeys.create(input)),
      get: (id) => run(() => store.apiKeys.get(id)),
      list: (workspace) => run(() => store.apiKeys.list(workspace)),
      revoke: (id) => run(() => store.apiKeys.revoke(id)),
    },
    wallets: {
      credit: (ws, amount, note) => run(() => store.wallets.credit(ws, amount, note)),
      show: (ws, now) => run(() => store.wallets.show(ws, now)),
      usage: (ws, since, until) => run(() => store.wallets.usage(ws, since, until)),
      workspaces: () => run(() => store.wallets.workspaces()),
      verify: () => run(() => store.wallets.verify()),
    },
    secrets: {
      set: (name, value) => run(() => store.secrets.set(name, value)),
      list: () => run(() => store.secrets.list()),
      remove: (name) => run(() => store.secrets.remove(name)),
      assertUsable: () => run(() => store.secrets.assertUsable()),
      rotateMaster: (key) => run(() => store.secrets.rotateMaster(key)),
    },
    requestLog: { query: (q) => run(() => store.requestLog.query(q)) },
    operators: sqliteOperators(store),
    audit: sqliteAudit(store),
    close: () => run(() => store.close()),
  };
}

/** `postgres://…` or `postgresql://…`: the distributed store; anything else is a SQLite file path. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}
