// The request log writer: rows queue in memory and are written in batches, one transaction per
// batch (every `flushIntervalMs`, or at once when `maxBatch` rows are queued), never one per request.
// Rows still queued when the process dies are lost; `Store.close()` flushes them on shutdown.
import { isRequestEnd, type RequestEnd } from '../../observe/request-end.ts';
import { logLine } from '../../observe/log-line.ts';
import type { SqliteDatabase } from './db.ts';
import { Statements } from './db.ts';
import { writeEach } from './isolated-writes.ts';
import { boundedRow } from '../log-bounds.ts';
import { storedCost, unstorableCosts } from '../log-cost.ts';
import {
  type RequestLogFilter,
  type SpendDetail,
  type SpendGroup,
  type SpendLine,
  whereOf,
} from '../search-filters.ts';
import { spendBy, spendDetail } from './request-log-search.ts';
import type { SeriesGroup, SeriesInterval, SeriesPoint } from '../spend-series-sql.ts';
import { lastUse, spendSeries } from './spend-series.ts';
import type { AttemptLogEntry, RequestLogEntry, RequestLogOptions, RequestLogQuery, RequestLogRow } from '../types.ts';

const DEFAULT_FLUSH_MS = 200;
const DEFAULT_MAX_BATCH = 1000;
const MAX_QUERY_LIMIT = 10_000;
/** While the database refuses writes, rows are kept up to this many batches, then the oldest dropped. */
const BACKLOG_BATCHES = 10;

const COLUMNS = [
  'trace_id',
  'ts',
  'workspace',
  'key_id',
  'endpoint',
  'model_requested',
  'model_served',
  'provider',
  'deployment',
  'attempts',
  'attempts_json',
  'stream',
  'status',
  'error_code',
  'latency_ms',
  'ttfb_ms',
  'prompt_tokens',
  'completion_tokens',
  'reasoning_tokens',
  'cached_tokens',
  'cost_nano',
  'app_title',
  'app_origin',
  'session_id',
  'ended',
] as const;

type DbRow = Record<(typeof COLUMNS)[number], string | number | bigint | null> & { id: bigint };

export interface RequestLogStats {
  queued: number;
  /** Write transactions so far. */
  transactions: number;
  written: number;
  /** Rows dropped because the database kept refusing writes. */
  dropped: number;
}

export class RequestLog {
  private readonly db: SqliteDatabase;
  private readonly sql: Statements;
  private readonly flushMs: number;
  private readonly maxBatch: number;
  private readonly readonly: boolean;
  private readonly onError: (err: unknown) => void;
  private queue: RequestLogRow[] = [];
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private counts = { transactions: 0, written: 0, dropped: 0 };

  constructor(
    db: SqliteDatabase,
    opts: RequestLogOptions & { readonly?: boolean; onError?: (err: unknown) => void } = {},
  ) {
    this.db = db;
    this.sql = new Statements(db, true);
    this.flushMs = opts.flushIntervalMs ?? DEFAULT_FLUSH_MS;
    this.maxBatch = opts.maxBatch ?? DEFAULT_MAX_BATCH;
    if (!(this.flushMs >= 0) || !(Number.isInteger(this.maxBatch) && this.maxBatch > 0)) {
      throw new RangeError('requestLog.flushIntervalMs must be >= 0 and maxBatch a positive integer');
    }
    this.readonly = opts.readonly ?? false;
    this.onError =
      opts.onError ??
      ((err) =>
        process.stderr.write(
          logLine('request_log_write_failed', { error: err instanceof Error ? err.message : String(err), retry: true }),
        ));
  }

  /** Queues one row; cheap and synchronous on the request path. */
  append(row: RequestLogRow): void {
    if (this.readonly) throw new Error('the store was opened read-only');
    if (this.closed) throw new Error('the store is closed');
    this.queue.push(row);
    if (this.queue.length >= this.maxBatch) {
      this.flush();
    } else if (this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.flush();
      }, this.flushMs);
      // A pending log write must not keep an otherwise finished process alive.
      this.timer.unref();
    }
  }

  /** Writes everything queued, in transactions of at most `maxBatch` rows. */
  flush(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        this.write(batch);
      } catch (err) {
        this.queue.unshift(...batch);
        const limit = this.maxBatch * BACKLOG_BATCHES;
        if (this.queue.length > limit) this.counts.dropped += this.queue.splice(0, this.queue.length - limit).length;
        this.onError(err);
        if (!this.closed && this.timer === null) {
          this.timer = setTimeout(
            () => {
              this.timer = null;
              this.flush();
            },
            Math.max(this.flushMs, 1000),
          );
          this.timer.unref();
        }
        return;
      }
    }
  }

  /** Flushes and stops accepting rows. */
  close(): void {
    if (this.closed) return;
    if (!this.readonly) this.flush();
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  stats(): RequestLogStats {
    return { queued: this.queue.length, ...this.counts };
  }

  /** See `RequestLogQuery`: always oldest first; without `afterId`, the newest `limit` rows. */
  query(q: RequestLogQuery = {}): RequestLogEntry[] {
    const limit = Math.min(Math.max(Math.trunc(q.limit ?? 100), 1), MAX_QUERY_LIMIT);
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (q.workspace !== undefined) {
      where.push('workspace = ?');
      params.push(q.workspace);
    }
    if (q.afterId !== undefined) {
      where.push('id > ?');
      params.push(q.afterId);
    }
    const cond = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const sql =
      q.afterId !== undefined
        ? `SELECT id, ${COLUMNS.join(', ')} FROM request_log ${cond} ORDER BY id ASC LIMIT ?`
        : `SELECT * FROM (SELECT id, ${COLUMNS.join(', ')} FROM request_log ${cond} ORDER BY id DESC LIMIT ?) ORDER BY id ASC`;
    const rows = this.sql.get(sql).all(...params, limit) as DbRow[];
    return rows.map(fromDb);
  }

  /**
   * The rows a filter selects, newest first, at most `limit` (1–1000); `more` says whether older rows
   * match too (page on with `beforeId` = the last row's id) — or, with `afterId`, newer ones (the
   * rows just above the cursor). Queued rows are written first, so a request that finished is listed.
   */
  search(filter: RequestLogFilter, limit = 50): { rows: RequestLogEntry[]; more: boolean } {
    if (!this.readonly) this.flush();
    const n = Math.min(Math.max(Math.trunc(limit), 1), 1000);
    const w = whereOf(filter);
    // Paging forward (afterId) reads upwards from the cursor; `more` then says newer rows match too.
    const order = filter.afterId === undefined ? 'DESC' : 'ASC';
    const rows = this.sql
      .get(`SELECT id, ${COLUMNS.join(', ')} FROM request_log ${w.sql} ORDER BY id ${order} LIMIT ?`)
      .all(...w.params, n + 1) as DbRow[];
    const page = rows.slice(0, n).map(fromDb);
    return { rows: order === 'ASC' ? page.reverse() : page, more: rows.length > n };
  }

  /** Cost, tokens and requests of the rows a filter selects, by one dimension. */
  spend(group: SpendGroup, filter: RequestLogFilter): SpendLine[] {
    if (!this.readonly) this.flush();
    return spendBy(this.sql, group, filter);
  }

  /** The same by day × workspace × model × provider (the CSV export). */
  spendDetail(filter: RequestLogFilter): SpendDetail[] {
    if (!this.readonly) this.flush();
    return spendDetail(this.sql, filter);
  }

  /** Series per hour or day and per group (src/store/sqlite/spend-series.ts): buckets with rows only. */
  series(interval: SeriesInterval, by: SeriesGroup, filter: RequestLogFilter): SeriesPoint[] {
    if (!this.readonly) this.flush();
    return spendSeries(this.sql, interval, by, filter);
  }

  /** Key id → the time of its latest logged request (any outcome, any time). */
  lastUse(workspace?: string): Map<string, number> {
    if (!this.readonly) this.flush();
    return lastUse(this.sql, workspace);
  }

  private write(batch: RequestLogRow[]): void {
    const insert = this.sql.get(INSERT_ROW);
    const tx = this.db.transaction((rows: RequestLogRow[]) => {
      for (const r of rows) insert.run(...toDb(r));
    });
    tx.immediate(batch);
    this.counts.transactions++;
    this.counts.written += batch.length;
    for (const problem of unstorableCosts(batch)) this.onError(new RangeError(problem));
  }
}

/**
 * Where the writer put settlements' provisional rows (trace id → rowid), so that each final row finds
 * its row by rowid — a seek near the table's end, in pages the last commits wrote — instead of through
 * the trace index, whose random trace ids put every lookup on another page. Bounded: a final row that
 * never comes (dropped under overload) leaves an entry the oldest-first trim removes; a row not found
 * here is looked up by trace id, and a remembered rowid counts only while its row still has that trace
 * (a rolled-back insert's rowid can be reused by another trace's row).
 */
export class ProvisionalRows {
  private readonly ids = new Map<string, number | bigint>();
  private readonly max: number;
  constructor(max = 100_000) {
    this.max = max;
  }

  remember(traceId: string, rowid: number | bigint): void {
    this.ids.set(traceId, rowid);
    if (this.ids.size > this.max) {
      for (const oldest of this.ids.keys()) {
        this.ids.delete(oldest);
        if (this.ids.size <= this.max / 2) break;
      }
    }
  }

  /** The rowid remembered for `traceId`, forgotten as it is taken (a trace has one final row). */
  take(traceId: string): number | bigint | undefined {
    const id = this.ids.get(traceId);
    if (id !== undefined) this.ids.delete(traceId);
    return id;
  }

  get size(): number {
    return this.ids.size;
  }
}

/**
 * Writes each row as the one row of its trace: an update of the row already written for the trace
 * (the provisional row committed with a settlement; by its rowid when `places` remembers it), else an
 * insert. Must run inside a transaction. The writer thread's path: a request's final row replaces
 * what its settlement wrote.
 */
export function upsertRequestLogRows(
  sql: Statements,
  rows: readonly LogRowValues[],
  places: ProvisionalRows | null = null,
): void {
  const update = sql.get(UPDATE_BY_TRACE);
  const insert = sql.get(INSERT_ROW);
  for (const r of rows) {
    const values = boundValues(r);
    const traceId = traceOf(r);
    const updated = UPDATED.map((i) => values[i]);
    const id = places?.take(traceId);
    if (id !== undefined && sql.get(UPDATE_BY_ID).run(...updated, id, traceId).changes === 1) continue;
    if (update.run(...updated, traceId).changes === 0) insert.run(...values);
  }
}

/**
 * `upsertRequestLogRows` inside `transactIsolated` (src/store/sqlite/isolated-writes.ts): all at once, or
 * on the run after something was refused each row in a savepoint of its own — finished requests'
 * rows share a transaction, and one bad row must not lose the others. Returns why each row was
 * refused, and each row whose cost the column could not hold.
 */
export function upsertRequestLogRowsEach(
  db: SqliteDatabase,
  sql: Statements,
  rows: readonly LogRowValues[],
  isolated: boolean,
  places: ProvisionalRows | null = null,
): string[] {
  if (!isolated) {
    upsertRequestLogRows(sql, rows, places);
    return unstorableValueCosts(rows);
  }
  const refused = writeEach(db, rows, (r) => upsertRequestLogRows(sql, [r], places)).map(
    (r) =>
      `request-log row of trace ${traceOf(r.item)}: ${r.error instanceof Error ? r.error.message : String(r.error)}`,
  );
  return [...refused, ...unstorableValueCosts(rows)];
}

/**
 * Writes the log row a settlement carries — unless its trace already has a row. The settlement's row
 * is provisional (what was known when the answer was charged); a row already there can only be the
 * request's final row (a trace settles once), and the final row has the last word however the two
 * commits were ordered: a settlement held up behind a busy writer may commit after its request ended.
 */
export function insertSettledRequestLogRow(
  sql: Statements,
  row: LogRowValues,
  places: ProvisionalRows | null = null,
): void {
  const traceId = traceOf(row);
  const done = sql.get(INSERT_IF_ABSENT).run(...boundValues(row), traceId);
  if (done.changes === 1) places?.remember(traceId, done.lastInsertRowid);
}

/**
 * The columns an upsert updates: all but `trace_id` (what it looks up by) and `workspace` (a trace's
 * workspace never changes). SQLite rewrites the entries of every index whose column is named in the
 * SET list, changed or not, so naming these two cost both indexes a delete and an insert per row.
 */
const UPDATED = COLUMNS.flatMap((c, i) => (c === 'trace_id' || c === 'workspace' ? [] : [i]));
const UPDATE_BY_TRACE = `UPDATE request_log SET ${UPDATED.map((i) => `${COLUMNS[i]} = ?`).join(', ')} WHERE trace_id = ?`;
const UPDATE_BY_ID = `UPDATE request_log SET ${UPDATED.map((i) => `${COLUMNS[i]} = ?`).join(', ')} WHERE id = ? AND trace_id = ?`;
const INSERT_ROW = `INSERT INTO request_log (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`;
const INSERT_IF_ABSENT = `INSERT INTO request_log (${COLUMNS.join(', ')}) SELECT ${COLUMNS.map(() => '?').join(', ')} WHERE NOT EXISTS (SELECT 1 FROM request_log WHERE trace_id = ?)`;

/**
 * A request-log row as it crosses to the writer thread: its values in COLUMNS order as they are bound
 * (client-chosen texts within their bounds, the attempts as JSON, `stream` as 0/1), but the cost as
 * the request charged it (the writer checks it against its column and reports a cost it cannot hold).
 * An array of primitives: a MessagePort copies it for about a third of what the row object costs.
 */
export type LogRowValues = (string | number | bigint | null)[];

const TRACE_AT = COLUMNS.indexOf('trace_id');
const COST_AT = COLUMNS.indexOf('cost_nano');
const traceOf = (values: LogRowValues): string => String(values[TRACE_AT]);

export function logRowValues(row: RequestLogRow): LogRowValues {
  const r = boundedRow(row);
  return [
    r.trace_id,
    r.ts,
    r.workspace,
    r.key_id,
    r.endpoint,
    r.model_requested,
    r.model_served,
    r.provider,
    r.deployment,
    r.attempts,
    JSON.stringify(r.attempts_json),
    r.stream ? 1 : 0,
    r.status,
    r.error_code,
    r.latency_ms,
    r.ttfb_ms,
    r.prompt_tokens,
    r.completion_tokens,
    r.reasoning_tokens,
    r.cached_tokens,
    r.cost_nano,
    r.app_title,
    r.app_origin,
    r.session_id,
    r.ended,
  ];
}

/** The values as bound: the cost within its column (see log-cost.ts). */
function boundValues(values: LogRowValues): LogRowValues {
  const cost = values[COST_AT];
  if (typeof cost !== 'bigint' || storedCost(cost) === cost) return values;
  const out = [...values];
  out[COST_AT] = storedCost(cost);
  return out;
}

/** `unstorableCosts` of rows in their wire form. */
function unstorableValueCosts(rows: readonly LogRowValues[]): string[] {
  const problems: string[] = [];
  for (const r of rows) {
    const cost = r[COST_AT];
    if (typeof cost === 'bigint' && storedCost(cost) === null)
      problems.push(...unstorableCosts([{ trace_id: traceOf(r), cost_nano: cost }]));
  }
  return problems;
}

function toDb(row: RequestLogRow): (string | number | bigint | null)[] {
  return boundValues(logRowValues(row));
}

const endOf = (v: unknown): RequestEnd | null => (typeof v === 'string' && isRequestEnd(v) ? v : null);
const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const text = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

function fromDb(r: DbRow): RequestLogEntry {
  return {
    id: Number(r.id),
    trace_id: String(r.trace_id),
    ts: Number(r.ts),
    workspace: text(r.workspace),
    key_id: text(r.key_id),
    endpoint: String(r.endpoint),
    model_requested: text(r.model_requested),
    model_served: text(r.model_served),
    provider: text(r.provider),
    deployment: text(r.deployment),
    attempts: Number(r.attempts),
    attempts_json: JSON.parse(String(r.attempts_json)) as AttemptLogEntry[],
    stream: Number(r.stream) === 1,
    status: Number(r.status),
    error_code: text(r.error_code),
    latency_ms: num(r.latency_ms),
    ttfb_ms: num(r.ttfb_ms),
    prompt_tokens: num(r.prompt_tokens),
    completion_tokens: num(r.completion_tokens),
    reasoning_tokens: num(r.reasoning_tokens),
    cached_tokens: num(r.cached_tokens),
    cost_nano: r.cost_nano === null ? null : BigInt(r.cost_nano),
    app_title: text(r.app_title),
    app_origin: text(r.app_origin),
    session_id: text(r.session_id),
    ended: endOf(r.ended),
  };
}
