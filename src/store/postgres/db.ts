// The PostgreSQL connection pool: the only place `pg` is configured. int8 columns come back as
// bigint (money is bigint nano-USD end to end), connections fail fast when the server is down
// (admission fails closed instead of queueing requests behind a dead server), an error on an
// idle connection never crashes the process, and text parameters are ones PostgreSQL can hold.
import pg from 'pg';
import { StoreError } from '../errors.ts';
import { storableText } from '../log-bounds.ts';
export { redactUrl } from '../redact-url.ts';

export type PgPool = pg.Pool;
export type PgClient = pg.PoolClient;

const INT8_OID = 20;

/** Fails with a clear error rather than hanging when PostgreSQL does not answer. */
const CONNECT_TIMEOUT_MS = 2_000;
/** Every statement here is a single-row or small batch statement; anything slower is an outage. */
const STATEMENT_TIMEOUT_MS = 10_000;

export interface PoolOptions {
  /** Connections per process. Default 10. */
  max?: number;
  /** Errors of idle connections (the server restarted); default: ignored, the next query reconnects. */
  onIdleError?: (err: Error) => void;
}

/** A text parameter (or a text[] parameter's elements) as PostgreSQL can hold it (storableText). */
function storableParam(v: unknown): unknown {
  if (typeof v === 'string') return storableText(v);
  if (Array.isArray(v) && v.some((x) => typeof x === 'string' && x.includes('\u0000'))) return v.map(storableParam);
  return v;
}

/**
 * A connection whose statements' text parameters never carry U+0000: PostgreSQL refuses that one
 * character in text ("invalid byte sequence"), and a client or an operator can send it — in a JSON
 * string, a query parameter, a note. Refused, it would fail the statement: a request's log row, a
 * console page (a 500), an audit row. Stored as U+FFFD instead, what it names is kept and found
 * (the request log's filters map their text the same way, on either store).
 */
class StorableTextClient extends pg.Client {}
const baseQuery = pg.Client.prototype.query;
StorableTextClient.prototype.query = function (this: pg.Client, ...args: unknown[]): unknown {
  const [first, values] = args;
  if (Array.isArray(values)) args[1] = values.map(storableParam);
  else if (
    first !== null &&
    typeof first === 'object' &&
    Array.isArray((first as pg.QueryConfig).values) &&
    typeof (first as { submit?: unknown }).submit !== 'function'
  ) {
    const config = first as pg.QueryConfig;
    args[0] = { ...config, values: config.values?.map(storableParam) };
  }
  return (baseQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof baseQuery;

export function createPool(url: string, opts: PoolOptions = {}): PgPool {
  const pool = new pg.Pool({
    Client: StorableTextClient,
    connectionString: url,
    max: opts.max ?? 10,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: STATEMENT_TIMEOUT_MS + 1_000,
    application_name: 'pi-gateway',
    // Every write here is written for READ COMMITTED, PostgreSQL's default: a wallet row locked
    // FOR UPDATE, then a fresh snapshot per statement (a credit's repeat sees the first one's row
    // once it waited for its lock). A server or role whose default is REPEATABLE READ or SERIALIZABLE
    // would turn those waits into serialization failures, so each session says its own level. The
    // read-only reports that need one snapshot ask for REPEATABLE READ themselves. An `options`
    // parameter in the URL replaces this one.
    options: '-c default_transaction_isolation=read\\ committed',
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID
          ? (v: string) => BigInt(v)
          : format === 'binary'
            ? pg.types.getTypeParser(oid, 'binary')
            : pg.types.getTypeParser(oid, 'text')) as typeof pg.types.getTypeParser,
    },
  });
  pool.on('error', (err) => opts.onIdleError?.(err));
  return pool;
}

/**
 * PostgreSQL did not answer or went away (refused, reset, timed out, shutting down, starting up):
 * the operation may not have happened. Everything else (a constraint, a bad statement) is a real
 * answer and keeps its own error.
 */
export class StoreUnavailableError extends StoreError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message);
    this.name = 'StoreUnavailableError';
    if (options) this.cause = options.cause;
  }
}

const NODE_NET = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
]);

export function isUnavailable(err: unknown): boolean {
  if (err instanceof StoreUnavailableError) return true;
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NODE_NET.has(code)) return true;
    // 08: connection exception; 57P01-03: admin/crash shutdown, cannot connect now; 53300: too many connections.
    if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300')
      return true;
  }
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|not queryable/i.test(
    err.message,
  );
}

/**
 * PostgreSQL refused the data itself (SQLSTATE class 22, a data exception, or 23, a constraint): the
 * same write would be refused again, so a batch is retried one item at a time to find which. Any
 * other error (a lock or statement timeout, a deadlock, a read-only standby, a full disk) may pass:
 * the write is kept and retried as for an outage.
 */
export function isDataRefusal(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

/**
 * Two transactions got in each other's way (a deadlock, a serialization failure): the same write
 * alone, or again a moment later, passes.
 */
export function isConflict(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

/**
 * The write did not happen for a passing reason, and the same write a moment later may pass: an
 * outage, a conflict, or a statement or lock wait that ran out (57014, 55P03; the statement was
 * rolled back). A settlement meeting one is retried, never given up as refused.
 */
export function isTransient(err: unknown): boolean {
  if (isUnavailable(err) || isConflict(err)) return true;
  const code = (err as { code?: unknown } | null)?.code;
  return code === '57014' || code === '55P03';
}

/** Rethrows connection-level failures as StoreUnavailableError naming what was being done. */
export function unavailable(err: unknown, doing: string): unknown {
  if (!isUnavailable(err) || err instanceof StoreUnavailableError) return err;
  return new StoreUnavailableError(
    `PostgreSQL is unreachable (${doing}): ${err instanceof Error ? err.message : String(err)}`,
    { cause: err },
  );
}

/** Runs `fn` in one transaction on one connection (rolled back when it throws; a connection that
 *  failed is destroyed, not returned to the pool). */
export async function inTransaction<T>(pool: PgPool, fn: (c: PgClient) => Promise<T>, mode = 'BEGIN'): Promise<T> {
  const c = await pool.connect();
  let broken: Error | undefined;
  try {
    await c.query(mode);
    const out = await fn(c);
    await c.query('COMMIT');
    return out;
  } catch (err) {
    if (isUnavailable(err)) broken = err instanceof Error ? err : new Error(String(err));
    else await c.query('ROLLBACK').catch((e: unknown) => (broken = e instanceof Error ? e : new Error(String(e))));
    throw err;
  } finally {
    c.release(broken);
  }
}
