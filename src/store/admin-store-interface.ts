// The store as the CLI sees it: one asynchronous interface over either backend — the embedded SQLite
// file (src/store/sqlite/admin-store.ts; its calls are synchronous underneath) or PostgreSQL
// (src/store/postgres/store.ts). Commands stay thin over it and never ask which backend they talk to,
// so `key`, `wallet`, `ledger verify`, `usage`, `logs` and `secret` mean the same on both.
import type { AuditTrail, OperatorAccounts } from './console-store-interface.ts';
import type { CreateKeyInput } from './key-format.ts';
import type { RotationResult, SecretInfo } from './secret-rules.ts';
import type {
  ApiKeyRecord,
  CreatedApiKey,
  CreditResult,
  RequestLogEntry,
  RequestLogQuery,
  UsageLine,
  WalletView,
} from './types.ts';

export interface AdminKeys {
  create(input: CreateKeyInput): Promise<CreatedApiKey>;
  get(id: string): Promise<ApiKeyRecord | null>;
  /** Oldest first. */
  list(workspace?: string): Promise<ApiKeyRecord[]>;
  revoke(id: string): Promise<boolean>;
}

export interface AdminWallets {
  /** With an idempotency key, a credit the key already made is not applied again (see `CreditResult`). */
  credit(workspace: string, amountNano: bigint, note: string, idempotencyKey?: string): Promise<CreditResult>;
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

/** `postgres://…` or `postgresql://…`: the distributed store; anything else is a SQLite file path. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//i.test(db);
}
