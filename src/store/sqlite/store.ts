// The store facade: one SQLite connection and the four stores on it. The rest of the gateway imports
// this file (and the contract, src/store/*.ts), never better-sqlite3.
import type { Clock } from '../../clock.ts';
import { systemClock } from '../../clock.ts';
import { ApiKeys } from './api-keys.ts';
import { openDatabase, type SqliteDatabase } from './db.ts';
import { transactIsolated } from './isolated-writes.ts';
import { AuditLog, Operators } from './operators.ts';
import { RequestLog } from './request-log.ts';
import { Secrets } from './secrets.ts';
import type { RequestLogOptions } from '../types.ts';
import { Wallets } from './wallets.ts';

export { ApiKeys } from './api-keys.ts';
export {
  isWellFormedKey,
  KEY_PREFIX,
  keyNameProblem,
  keyState,
  MAX_KEY_NAME_CHARS,
  pastExpiryProblem,
} from '../key-format.ts';
export { StoreError, WalletError } from '../errors.ts';
export { acquireOwnerLock, OwnerLockError, ownerLockFile, ownerLockHeld, type OwnerLock } from './owner-lock.ts';
export { createPrivateFile, PRIVATE_MODE, writePrivateFile } from './private-file.ts';
export { RequestLog, type RequestLogStats } from './request-log.ts';
export type { RequestLogFilter, SpendDetail, SpendGroup, SpendLine } from '../search-filters.ts';
export {
  ThreadWriter,
  WriterError,
  DEFAULT_WRITER_CAPACITY,
  WRITER_BATCH_WAIT_MS,
  type WriterStats,
} from './thread-writer.ts';
export { AuditLog, Operators } from './operators.ts';
export {
  type AuditEntry,
  type AuditPage,
  type NewAuditEntry,
  type OperatorAccount,
  OPERATOR_NAME,
  type OperatorRole,
} from '../operator-types.ts';
export { Secrets, SecretError, type RotationResult, type SecretInfo } from './secrets.ts';
export { Wallets, DEFAULT_STALE_HOLD_MS } from './wallets.ts';
export type * from '../types.ts';

export interface StoreOptions {
  clock?: Clock;
  /** 32 bytes as base64 or hex. Default: `process.env.PI_MASTER_KEY`. Only needed for secrets. */
  masterKey?: string | undefined;
  /** Read-only connection: the file must exist and be migrated; `requestLog.append` throws. */
  readonly?: boolean;
  requestLog?: RequestLogOptions;
  /** Where request-log write failures go; default one line on stderr. */
  onLogError?: (err: unknown) => void;
}

export interface Store {
  readonly secrets: Secrets;
  readonly apiKeys: ApiKeys;
  readonly wallets: Wallets;
  readonly requestLog: RequestLog;
  readonly operators: Operators;
  readonly audit: AuditLog;
  /**
   * True when another connection/process committed since the last call (PRAGMA data_version), or
   * when this store itself changed an API key or a secret — lets the server refresh its caches after
   * `secret set` or `key revoke` from the CLI, and after the same changes made in-process.
   */
  changedSinceLastCheck(): boolean;
  /**
   * Like `changedSinceLastCheck`, but blind to ledger and request-log commits: true only when an API
   * key, a secret or a credit changed (the `store_changes` counter, read only after data_version
   * moved), or this store changed one itself. What a gateway whose ledger another connection writes
   * (the writer thread) checks per request; never waits on a writer (WAL readers do not block).
   */
  cachedDataChangedSinceLastCheck(): boolean;
  /**
   * Runs `fn` in one IMMEDIATE transaction (store calls inside nest as savepoints): the group commit
   * the gateway's wallet book writes its ledger operations with (`wallets.apply`).
   */
  batch<T>(fn: () => T): T;
  /**
   * `batch` for several requests' writes: `fn(false)` in one IMMEDIATE transaction, and when
   * something in it is refused, `fn(true)` in another, where each request's writes go in a savepoint
   * of their own (src/store/sqlite/isolated-writes.ts; `Wallets.applyEach`).
   */
  batchEach<T>(fn: (isolated: boolean) => T): T;
  /** Flushes the request log and closes the connection. Idempotent. */
  close(): void;
}

export function openStore(file: string, opts: StoreOptions = {}): Store {
  const clock = opts.clock ?? systemClock;
  const readonly = opts.readonly ?? false;
  const db = openDatabase(file, { clock, readonly });
  const masterKey = 'masterKey' in opts ? opts.masterKey : process.env.PI_MASTER_KEY;
  return new SqliteStore(db, clock, masterKey, readonly, opts);
}

class SqliteStore implements Store {
  readonly secrets: Secrets;
  readonly apiKeys: ApiKeys;
  readonly wallets: Wallets;
  readonly requestLog: RequestLog;
  readonly operators: Operators;
  readonly audit: AuditLog;
  private readonly db: SqliteDatabase;
  private dataVersion: number;
  /** Set by this connection's own key and secret writes, which data_version does not report. */
  private localChange = false;
  private closed = false;

  constructor(db: SqliteDatabase, clock: Clock, masterKey: string | undefined, readonly: boolean, opts: StoreOptions) {
    this.db = db;
    const changed = () => {
      this.localChange = true;
    };
    this.secrets = new Secrets(db, clock, masterKey, changed);
    this.apiKeys = new ApiKeys(db, clock, changed);
    this.wallets = new Wallets(db, clock, changed);
    this.operators = new Operators(db, clock);
    this.audit = new AuditLog(db);
    const logOpts: ConstructorParameters<typeof RequestLog>[1] = { ...opts.requestLog, readonly };
    if (opts.onLogError) logOpts.onError = opts.onLogError;
    this.requestLog = new RequestLog(db, logOpts);
    this.dataVersion = this.readDataVersion();
    this.changesSeen = this.readChanges();
  }

  batch<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  batchEach<T>(fn: (isolated: boolean) => T): T {
    return transactIsolated((f) => this.batch(f), fn);
  }

  changedSinceLastCheck(): boolean {
    // data_version moves only when another connection commits, so our own writes never trigger it:
    // holds, settlements and request-log writes (every request) must not flush caches, but an
    // in-process key revocation, secret change or credit must, hence the local flag set by those.
    const v = this.readDataVersion();
    const changed = v !== this.dataVersion || this.localChange;
    this.dataVersion = v;
    this.localChange = false;
    return changed;
  }

  private changesStmt: { get(): unknown } | null = null;
  private changesSeen = 0;

  cachedDataChangedSinceLastCheck(): boolean {
    const v = this.readDataVersion();
    const local = this.localChange;
    this.localChange = false;
    if (v === this.dataVersion) return local;
    this.dataVersion = v;
    const n = this.readChanges();
    const changed = n !== this.changesSeen;
    this.changesSeen = n;
    return changed || local;
  }

  private readChanges(): number {
    this.changesStmt ??= this.db.prepare('SELECT n FROM store_changes WHERE id = 1').pluck();
    return Number(this.changesStmt.get() ?? 0);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.requestLog.close();
    } finally {
      this.wallets.close();
      this.db.close();
    }
  }

  /** Prepared once: db.pragma() re-parses its statement on every call, and this runs per request. */
  private dataVersionStmt: { get(): unknown } | null = null;

  private readDataVersion(): number {
    this.dataVersionStmt ??= this.db.prepare('PRAGMA data_version').pluck();
    return Number(this.dataVersionStmt.get());
  }
}
