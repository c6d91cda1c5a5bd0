// Series over time from the request log, for operators: per hour or UTC day and per workspace, model,
// provider (or one total), the billed requests, the rejected and unbilled ones, errors, latency p50
// and p95 and the settled cost. One SQL text for both stores (SQLite and PostgreSQL share every
// construct it uses: integer division, window functions, CTEs), so both compute the same numbers.
//
// Percentiles are exact nearest-rank over the bucket: the latencies sorted ascending, the value at
// rank ceil(p × n / 100) (1-based), written (p × n + 99) / 100 in integer division, which both
// databases truncate alike. No interpolation, no sketch: a p95 is a latency some request had.
import {
  GROUP_EXPR,
  REJECTED,
  type SpendLine,
  type SumDialect,
  totals,
  type TotalsRow,
  totalsSql,
} from './search-filters.ts';

export type SeriesInterval = 'hour' | 'day';
/** What one series stands for; `total`: every row the filter selects, as one series. */
export type SeriesGroup = 'workspace' | 'model' | 'provider' | 'total';

export const INTERVAL_MS: Record<SeriesInterval, number> = { hour: 3_600_000, day: 86_400_000 };

/** One bucket of one series. */
export interface SeriesPoint extends Omit<SpendLine, 'key'> {
  /** The bucket's start, epoch ms (UTC hour or day). */
  bucket: number;
  /** The series' group value ('' for `total`, or when the row has none). */
  key: string;
  /** Requests that were not rejected and answered with a status of 400 or more. */
  errors: number;
  /** Latency percentiles (ms, arrival to the end of the answer) of the bucket's requests that were
   *  not rejected; null when it has none. */
  p50Ms: number | null;
  p95Ms: number | null;
}

/**
 * The series query over `where` (a `whereOf` clause, its placeholders already in the dialect's
 * form). `sum` and `tokens` sum as in `totalsSql`; `collate` is appended to the ordering of keys
 * (PostgreSQL orders by bytes, as SQLite does, with COLLATE "C").
 */
export function seriesSql(
  interval: SeriesInterval,
  by: SeriesGroup,
  where: string,
  dialect: SumDialect & { collate: string },
): string {
  const ms = INTERVAL_MS[interval];
  const key = by === 'total' ? "''" : GROUP_EXPR[by];
  const rank = (p: number) => `rn = (n * ${p} + 99) / 100`;
  return `WITH r AS (
  SELECT (ts / ${ms}) * ${ms} AS bucket, ${key} AS key, ts, status, ended, latency_ms, cost_nano, prompt_tokens, completion_tokens
  FROM request_log ${where}
), t AS (
  SELECT bucket, key, ${totalsSql(dialect)},
         ${dialect.sum(`CASE WHEN status >= 400 AND NOT ${REJECTED} THEN 1 ELSE 0 END`)} AS errors
  FROM r GROUP BY bucket, key
), ranked AS (
  SELECT bucket, key, latency_ms,
         ROW_NUMBER() OVER (PARTITION BY bucket, key ORDER BY latency_ms) AS rn,
         COUNT(*) OVER (PARTITION BY bucket, key) AS n
  FROM r WHERE latency_ms IS NOT NULL AND NOT ${REJECTED}
), p AS (
  SELECT bucket, key,
         MAX(CASE WHEN ${rank(50)} THEN latency_ms END) AS p50,
         MAX(CASE WHEN ${rank(95)} THEN latency_ms END) AS p95
  FROM ranked GROUP BY bucket, key
)
SELECT t.*, p.p50, p.p95 FROM t LEFT JOIN p ON p.bucket = t.bucket AND p.key = t.key
ORDER BY t.bucket, t.key ${dialect.collate}`;
}

export interface SeriesRow extends TotalsRow {
  bucket: bigint | string | number;
  key: string;
  errors: bigint | string | number;
  p50: bigint | string | number | null;
  p95: bigint | string | number | null;
}

export const seriesPoint = (r: SeriesRow): SeriesPoint => ({
  bucket: Number(r.bucket),
  key: String(r.key),
  ...totals(r),
  errors: Number(r.errors),
  p50Ms: r.p50 === null ? null : Number(r.p50),
  p95Ms: r.p95 === null ? null : Number(r.p95),
});

/** The last time each key was presented — a request of any outcome, at any time — by key id, of
 *  one workspace when given (`?` placeholder). */
export function lastUseSql(workspace: string | undefined): { sql: string; params: string[] } {
  const where = workspace === undefined ? '' : ' AND workspace = ?';
  return {
    sql: `SELECT key_id AS key, MAX(ts) AS last FROM request_log WHERE key_id IS NOT NULL${where} GROUP BY key_id`,
    params: workspace === undefined ? [] : [workspace],
  };
}
