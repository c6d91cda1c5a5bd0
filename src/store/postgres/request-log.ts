// The request log in PostgreSQL: rows queue in memory and go out as one multi-row INSERT per batch
// (every `flushIntervalMs`, or at once at `maxBatch` rows), never one statement per request. While
// the server does not answer, rows are kept up to a bounded backlog and retried; `close()` flushes.
// A batch the server refuses (an answer, not an outage) is written again one row per statement, so
// a row it cannot store is reported and left out alone, never holding back every other row.
import { isRequestEnd, type RequestEnd } from '../../observe/request-end.ts';
import { logLine } from '../../observe/log-line.ts';
import { boundedRow } from '../log-bounds.ts';
import { storedCost, unstorableCosts } from '../log-cost.ts';
import type { RequestLogFilter } from '../search-filters.ts';
import type { AttemptLogEntry, RequestLogEntry, RequestLogOptions, RequestLogQuery, RequestLogRow } from '../types.ts';
import { pgWhereOf } from './request-log-search.ts';
import { isDataRefusal, type PgPool } from './db.ts';
import { setBounded } from '../../bounded-map.ts';

/** The columns a row is written with, and their types (src/store/postgres/migrations.ts). */
const COLUMN_TYPES = {
  trace_id: 'text',
  ts: 'bigint',
  workspace: 'text',
  key_id: 'text',
  endpoint: 'text',
  model_requested: 'text',
  model_served: 'text',
  provider: 'text',
  deployment: 'text',
  attempts: 'integer',
  attempts_json: 'text',
  stream: 'boolean',
  status: 'integer',
  error_code: 'text',
  latency_ms: 'bigint',
  ttfb_ms: 'bigint',
  prompt_tokens: 'bigint',
  completion_tokens: 'bigint',
  reasoning_tokens: 'bigint',
  cached_tokens: 'bigint',
  cost_nano: 'bigint',
  app_title: 'text',
  app_origin: 'text',
  session_id: 'text',
  ended: 'text',
} as const;
type Column = keyof typeof COLUMN_TYPES;
const COLUMNS = Object.keys(COLUMN_TYPES) as Column[];
const MAX_QUERY_LIMIT = 10_000;
const BACKLOG_BATCHES = 10;
/** Traces whose settlement wrote their row, remembered until their final row comes. Bounded: a
 *  trace forgotten (over 100,000 requests between a settlement and its request's end) gets its final
 *  row as a second row. */
const MAX_CARRIED = 100_000;

type Value = string | number | bigint | boolean | null;

export function requestLogValues(row: RequestLogRow): Value[] {
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
    r.stream,
    r.status,
    r.error_code,
    r.latency_ms,
    r.ttfb_ms,
    r.prompt_tokens,
    r.completion_tokens,
    r.reasoning_tokens,
    r.cached_tokens,
    storedCost(r.cost_nano),
    r.app_title,
    r.app_origin,
    r.session_id,
    r.ended,
  ];
}

/** `INSERT … VALUES ($1…$25), ($26…)` for `rows` rows of the request log (ids assigned by the sequence
 *  unless `withId`, when each row's first value is its id). */
export function requestLogInsert(rows: number, withId = false): string {
  const cols = withId ? ['id', ...COLUMNS] : [...COLUMNS];
  const groups: string[] = [];
  for (let i = 0; i < rows; i++) groups.push(`(${cols.map((_, j) => `$${i * cols.length + j + 1}`).join(', ')})`);
  return `INSERT INTO request_log (${cols.join(', ')}) VALUES ${groups.join(', ')}`;
}

/**
 * The final rows of requests whose settlement wrote their row (src/store/postgres/slices.ts and
 * holds.ts): each replaces it — every column but `trace_id` and `workspace`, as the embedded store
 * does —; a row not found is inserted. Each row is found through the trace index by a subquery with
 * `LIMIT 1`, then updated by primary key: plans PostgreSQL keeps on index scans however stale the
 * table's statistics are (a join on `trace_id` was planned as a scan of the whole table). One array
 * per column, so the statement has the same text and 25 parameters whatever the number of rows.
 */
const UPDATED = COLUMNS.filter((c) => c !== 'trace_id' && c !== 'workspace');
export const REQUEST_LOG_REPLACE = `WITH v AS (
  SELECT * FROM unnest(${COLUMNS.map((c, i) => `$${i + 1}::${COLUMN_TYPES[c]}[]`).join(', ')}) AS v(${COLUMNS.join(', ')})
), t AS (
  SELECT v.*, (SELECT r.id FROM request_log r WHERE r.trace_id = v.trace_id LIMIT 1) AS rid FROM v
), u AS (
  UPDATE request_log SET ${UPDATED.map((c) => `${c} = t.${c}`).join(', ')}
  FROM t WHERE request_log.id = t.rid AND request_log.id = ANY(ARRAY(SELECT rid FROM t WHERE rid IS NOT NULL))
  RETURNING request_log.trace_id
)
INSERT INTO request_log (${COLUMNS.join(', ')})
SELECT ${COLUMNS.map((c) => `t.${c}`).join(', ')} FROM t WHERE t.rid IS NULL`;

/** `rows` as REQUEST_LOG_REPLACE takes them: one array of values per column. */
export function columnArrays(rows: readonly RequestLogRow[]): Value[][] {
  const columns: Value[][] = COLUMNS.map(() => []);
  for (const row of rows) {
    const values = requestLogValues(row);
    for (let i = 0; i < values.length; i++) (columns[i] as Value[]).push(values[i] as Value);
  }
  return columns;
}

/** Whether a number is one its column takes: an integer within the column's range. */
function fits(column: Column, v: number): boolean {
  const type = COLUMN_TYPES[column];
  if (type === 'bigint') return Number.isSafeInteger(v);
  return type !== 'integer' || (Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31);
}

/**
 * A settlement's log row as the settlement statement takes it (one JSON object, read there with
 * `json_populate_record`). Nothing in it may fail that statement — a charge never depends on its log
 * row —, so every value is one its column takes: client text within its bound and without U+0000
 * (boundedRow), a cost the column cannot hold left out, any other figure its column does not take
 * (not an integer, or beyond the column's range) stored as null (`attempts` and `status` as 0: they
 * may not be null).
 */
export function settledLogJson(row: RequestLogRow): string {
  const values = requestLogValues(row);
  const out: Record<string, string | number | boolean | null> = {};
  for (let i = 0; i < COLUMNS.length; i++) {
    const column = COLUMNS[i] as Column;
    const v = values[i] as Value;
    if (typeof v === 'bigint') out[column] = v.toString();
    else if (typeof v === 'number' && !fits(column, v))
      out[column] = column === 'attempts' || column === 'status' ? 0 : null;
    else out[column] = v;
  }
  return JSON.stringify(out);
}

/** The columns of a settlement's log row, as the settlement statements insert them from
 *  `json_populate_record(NULL::request_log, …)` aliased `p`. */
export const SETTLED_LOG_COLUMNS = COLUMNS.join(', ');
export const SETTLED_LOG_VALUES = COLUMNS.map((c) => `p.${c}`).join(', ');

export class PgRequestLog {
  private queue: QueuedRow[] = [];
  /** Traces whose settlement carries their row, with the settlement (see `carried`). */
  private readonly carriedRows = new Map<string, Promise<unknown>>();
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private closed = false;
  private readonly flushMs: number;
  private readonly maxBatch: number;
  /** `dropped`: rows let go while the server did not answer (beyond the backlog); `refused`: rows
   *  the server would not store (each reported). */
  private counts = { transactions: 0, written: 0, dropped: 0, refused: 0 };

  private readonly pool: PgPool;
  private readonly onError: (err: unknown) => void;
  constructor(
    pool: PgPool,
    opts: RequestLogOptions = {},
    onError: (err: unknown) => void = (err) =>
      process.stderr.write(
        logLine('request_log_write_failed', {
          error: err instanceof Error ? err.message : String(err),
          // A RangeError is a row left out or stored without its cost; anything else kept its rows.
          retry: !(err instanceof RangeError),
        }),
      ),
  ) {
    this.pool = pool;
    this.onError = onError;
    this.flushMs = opts.flushIntervalMs ?? 200;
    // A statement takes at most 65 535 parameters: 25 columns a row.
    this.maxBatch = Math.min(opts.maxBatch ?? 1000, 2000);
  }

  /**
   * The trace's settlement carries its log row (in the settlement's statement; `settled` resolves or
   * rejects once that statement is over): the request's final row, when it is appended, replaces
   * that row instead of being a second one, and is written only after `settled` — two statements
   * that each found no row yet would otherwise both insert one (nothing unique stops them).
   */
  carried(traceId: string, settled: Promise<unknown>): void {
    setBounded(this.carriedRows, traceId, settled, MAX_CARRIED);
  }

  append(row: RequestLogRow): void {
    if (this.closed) throw new Error('the store is closed');
    const settled = this.carriedRows.get(row.trace_id);
    if (settled) this.carriedRows.delete(row.trace_id);
    this.queue.push({ row, replaces: settled ?? null });
    if (this.queue.length >= this.maxBatch) void this.flush();
    else this.schedule(this.flushMs);
  }

  /** Writes everything queued; resolves when done (or when the server did not take them: rows kept
   *  for the retry). */
  flush(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.writing ??= this.drain().finally(() => (this.writing = null));
    return this.writing;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    if (this.writing) await this.writing;
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
  }

  stats() {
    return { queued: this.queue.length, ...this.counts };
  }

  async query(q: RequestLogQuery = {}): Promise<RequestLogEntry[]> {
    const limit = Math.min(Math.max(Math.trunc(q.limit ?? 100), 1), MAX_QUERY_LIMIT);
    const where: string[] = [];
    const params: Value[] = [];
    if (q.workspace !== undefined) where.push(`workspace = $${params.push(q.workspace)}`);
    if (q.afterId !== undefined) where.push(`id > $${params.push(q.afterId)}`);
    const cond = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const lim = `$${params.push(limit)}`;
    const sql =
      q.afterId !== undefined
        ? `SELECT id, ${COLUMNS.join(', ')} FROM request_log ${cond} ORDER BY id ASC LIMIT ${lim}`
        : `SELECT * FROM (SELECT id, ${COLUMNS.join(', ')} FROM request_log ${cond} ORDER BY id DESC LIMIT ${lim}) t ORDER BY id ASC`;
    const r = await this.pool.query<Record<string, Value>>(sql, params);
    return r.rows.map(fromDb);
  }

  /**
   * The rows a filter selects, newest first, at most `limit` (1–1000); `more` says whether older rows
   * match too — the embedded store's `search` (src/store/sqlite/request-log.ts), same filters and order.
   * This node's queued rows are written first, so a request it finished is listed.
   */
  async search(filter: RequestLogFilter, limit = 50): Promise<{ rows: RequestLogEntry[]; more: boolean }> {
    if (!this.closed) await this.flush();
    const n = Math.min(Math.max(Math.trunc(limit), 1), 1000);
    const w = pgWhereOf(filter);
    const order = filter.afterId === undefined ? 'DESC' : 'ASC';
    const r = await this.pool.query<Record<string, Value>>(
      `SELECT id, ${COLUMNS.join(', ')} FROM request_log ${w.sql} ORDER BY id ${order} LIMIT $${w.params.length + 1}`,
      [...w.params, n + 1],
    );
    const page = r.rows.slice(0, n).map(fromDb);
    return { rows: order === 'ASC' ? page.reverse() : page, more: r.rows.length > n };
  }

  private schedule(ms: number): void {
    if (this.timer !== null || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, ms);
    this.timer.unref();
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      // New rows and final rows replacing their settlement's go in a statement each.
      const groups = [batch.filter((q) => q.replaces === null), batch.filter((q) => q.replaces !== null)];
      for (let g = 0; g < groups.length; g++) {
        const group = groups[g] as QueuedRow[];
        if (group.length === 0) continue;
        try {
          await this.insert(group);
        } catch (err) {
          let outage: unknown = err;
          if (isDataRefusal(err)) {
            // The server refused the data: each row goes alone, and only a row it refuses by
            // itself is left out.
            outage = await this.insertEach(group);
            if (outage === null) continue;
          } else this.queue.unshift(...group);
          // What this batch had not written yet waits for the retry too.
          this.queue.push(...groups.slice(g + 1).flat());
          const limit = this.maxBatch * BACKLOG_BATCHES;
          if (this.queue.length > limit) this.counts.dropped += this.queue.splice(0, this.queue.length - limit).length;
          this.onError(outage);
          this.schedule(Math.max(this.flushMs, 1000));
          return;
        }
      }
    }
  }

  /** Rows of one kind: new ones in one multi-row INSERT, final rows replacing their settlement's in
   *  one REQUEST_LOG_REPLACE. */
  private async insert(rows: QueuedRow[]): Promise<void> {
    const plain = rows.map((q) => q.row);
    const replacing = rows.some((q) => q.replaces !== null);
    // Each replaced row's settlement statement is over first (committed or not).
    if (replacing) await Promise.allSettled(rows.map((q) => q.replaces));
    if (replacing) await this.pool.query(REQUEST_LOG_REPLACE, columnArrays(plain));
    else await this.pool.query(requestLogInsert(plain.length), plain.flatMap(requestLogValues));
    this.counts.transactions++;
    this.counts.written += rows.length;
    for (const problem of unstorableCosts(plain)) this.onError(new RangeError(problem));
  }

  /** One statement per row; a row the server refuses is reported and dropped. When the server stops
   *  answering, that row and those after it go back to the queue and the error is returned. */
  private async insertEach(rows: QueuedRow[]): Promise<unknown> {
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as QueuedRow;
      try {
        await this.insert([row]);
      } catch (err) {
        if (!isDataRefusal(err)) {
          this.queue.unshift(...rows.slice(i));
          return err;
        }
        this.counts.refused++;
        const why = err instanceof Error ? err.message : String(err);
        this.onError(new RangeError(`request-log row of trace ${row.row.trace_id} refused by the database: ${why}`));
      }
    }
    return null;
  }
}

/** A row waiting for its batch; `replaces`: the settlement that writes the row it replaces. */
interface QueuedRow {
  row: RequestLogRow;
  replaces: Promise<unknown> | null;
}

const num = (v: Value): number | null => (v === null ? null : Number(v));
const text = (v: Value): string | null => (v === null ? null : String(v));
const endOf = (v: Value): RequestEnd | null => (typeof v === 'string' && isRequestEnd(v) ? v : null);

function fromDb(r: Record<string, Value>): RequestLogEntry {
  const g = (k: string): Value => r[k] ?? null;
  return {
    id: Number(g('id')),
    trace_id: String(g('trace_id')),
    ts: Number(g('ts')),
    workspace: text(g('workspace')),
    key_id: text(g('key_id')),
    endpoint: String(g('endpoint')),
    model_requested: text(g('model_requested')),
    model_served: text(g('model_served')),
    provider: text(g('provider')),
    deployment: text(g('deployment')),
    attempts: Number(g('attempts')),
    attempts_json: JSON.parse(String(g('attempts_json'))) as AttemptLogEntry[],
    stream: g('stream') === true,
    status: Number(g('status')),
    error_code: text(g('error_code')),
    latency_ms: num(g('latency_ms')),
    ttfb_ms: num(g('ttfb_ms')),
    prompt_tokens: num(g('prompt_tokens')),
    completion_tokens: num(g('completion_tokens')),
    reasoning_tokens: num(g('reasoning_tokens')),
    cached_tokens: num(g('cached_tokens')),
    cost_nano: g('cost_nano') === null ? null : BigInt(g('cost_nano') as bigint),
    app_title: text(g('app_title')),
    app_origin: text(g('app_origin')),
    session_id: text(g('session_id')),
    ended: endOf(g('ended')),
  };
}
