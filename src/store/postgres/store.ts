// The PostgreSQL store facade: one pool and the stores on it — keys, sealed secrets, wallets and the
// ledger, admission holds, the request log. The rest of the gateway imports this folder, never `pg`.
// It serves the CLI (the AdminStore interface every `--db` command uses) and the gateway nodes.
import { PgAuditLog, PgOperators } from './operators.ts';
import type { Clock } from '../../clock.ts';
import { systemClock } from '../../clock.ts';
import type { AdminStore } from '../admin-store-interface.ts';
import { StoreError } from '../errors.ts';
import type { RequestLogOptions } from '../types.ts';
import { createPool, type PgPool, redactUrl, unavailable } from './db.ts';
import { PgHolds } from './holds.ts';
import { PgApiKeys } from './api-keys.ts';
import { latestPgVersion, migratePg, pgSchemaVersion } from './migrations.ts';
import { PgRequestLog } from './request-log.ts';
import { PgSecrets } from './secrets.ts';
import { PgSlices } from './slices.ts';
import { PgWallets } from './wallets.ts';

export { HOLD_LEASE_MS, LEASE_RENEW_MS, PgHolds, type PgHoldResult } from './holds.ts';
export { PgSlices, type SliceSettle, type SliceTake } from './slices.ts';
export {
  isConflict,
  isDataRefusal,
  isTransient,
  isUnavailable,
  redactUrl,
  StoreUnavailableError,
} from './db.ts';
export { latestPgVersion, PG_MIGRATIONS } from './migrations.ts';
export { importDump, pgIsEmpty, type ImportCounts } from './import-sqlite.ts';

/** One changed row of `api_keys` (its id) or `secrets` (its name). */
export interface StoreChange {
  kind: 'key' | 'secret';
  ref: string;
}

export interface PgStoreOptions {
  clock?: Clock;
  /** Default `process.env.PI_MASTER_KEY`. */
  masterKey?: string | undefined;
  requestLog?: RequestLogOptions;
  onLogError?: (err: unknown) => void;
  /** Connections of this process. Default 10. */
  poolMax?: number;
  /** Check that the schema is at this build's version (default true; `migrate` opens without). */
  checkSchema?: boolean;
  onIdleError?: (err: Error) => void;
}

export class PgStore implements AdminStore {
  readonly kind = 'postgres' as const;
  readonly apiKeys: PgApiKeys;
  readonly wallets: PgWallets;
  readonly secrets: PgSecrets;
  readonly holds: PgHolds;
  readonly slices: PgSlices;
  readonly requestLog: PgRequestLog;
  readonly operators: PgOperators;
  readonly audit: PgAuditLog;
  private closed: Promise<void> | null = null;

  readonly pool: PgPool;
  readonly location: string;
  readonly clock: Clock;
  constructor(
    pool: PgPool,
    /** The URL without its password. */
    location: string,
    clock: Clock,
    opts: PgStoreOptions,
  ) {
    this.pool = pool;
    this.location = location;
    this.clock = clock;
    const masterKey = 'masterKey' in opts ? opts.masterKey : process.env.PI_MASTER_KEY;
    this.apiKeys = new PgApiKeys(pool, clock);
    this.wallets = new PgWallets(pool, clock);
    this.secrets = new PgSecrets(pool, clock, masterKey);
    this.holds = new PgHolds(pool);
    this.slices = new PgSlices(pool);
    this.operators = new PgOperators(pool, clock);
    this.audit = new PgAuditLog(pool);
    this.requestLog = new PgRequestLog(pool, opts.requestLog, opts.onLogError);
  }

  /** Moves whenever a key or a secret was written by anyone (a trigger counts): caches compare it. */
  async changeVersion(): Promise<bigint> {
    const r = await this.pool.query<{ version: bigint }>('SELECT version FROM store_changes WHERE id = 1');
    return r.rows[0]?.version ?? 0n;
  }

  /** The keys (by id) and secrets (by name) changed after version `after` up to `upTo`, in order;
   *  fewer rows than versions in between means the log no longer holds them all. */
  async changesBetween(after: bigint, upTo: bigint): Promise<StoreChange[]> {
    const r = await this.pool.query<StoreChange>(
      'SELECT kind, ref FROM store_change_log WHERE version > $1 AND version <= $2 ORDER BY version',
      [after, upTo],
    );
    return r.rows;
  }

  /** Runs the migrations this database lacks; returns the versions applied. */
  migrate(): Promise<number[]> {
    return migratePg(this.pool, this.clock.now());
  }

  async schemaVersion(): Promise<{ current: number; latest: number }> {
    return { current: await pgSchemaVersion(this.pool), latest: latestPgVersion() };
  }

  close(): Promise<void> {
    return (this.closed ??= (async () => {
      try {
        await this.requestLog.close();
      } finally {
        await this.pool.end();
      }
    })());
  }
}

/**
 * Connects to `url` and (unless `checkSchema: false`) refuses a database that is not migrated to
 * this build's schema, naming the command that migrates it. A server that does not answer is a
 * StoreError naming the URL (without its password).
 */
export async function openPgStore(url: string, opts: PgStoreOptions = {}): Promise<PgStore> {
  const location = redactUrl(url);
  const poolOpts: { max?: number; onIdleError?: (err: Error) => void } = {};
  if (opts.poolMax !== undefined) poolOpts.max = opts.poolMax;
  if (opts.onIdleError) poolOpts.onIdleError = opts.onIdleError;
  const pool = createPool(url, poolOpts);
  const store = new PgStore(pool, location, opts.clock ?? systemClock, opts);
  try {
    const { current, latest } = await store.schemaVersion();
    if ((opts.checkSchema ?? true) && current !== latest) {
      throw new StoreError(
        current === 0
          ? `the PostgreSQL database ${location} has no pi-gateway schema; run \`pi-gateway migrate --db URL\` first`
          : current > latest
            ? `the PostgreSQL database ${location} is at schema version ${current}, newer than this build (${latest}); upgrade pi-gateway`
            : `the PostgreSQL database ${location} is at schema version ${current}, this build expects ${latest}; run \`pi-gateway migrate --db URL\``,
      );
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    const e = unavailable(err, `connecting to ${location}`);
    throw e;
  }
  return store;
}
