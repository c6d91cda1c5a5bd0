// Reading the PostgreSQL request log for operators: the embedded store's filters
// (src/store/search-filters.ts `whereOf`, its `?` placeholders numbered for PostgreSQL) and its
// spend totals — grouped by workspace, model, provider or UTC day, with the same order (binary string
// order, as SQLite compares) and exact bigint sums, so both stores give the console the same numbers.
import {
  GROUP_EXPR,
  type RequestLogFilter,
  type SpendDetail,
  type SpendGroup,
  type SpendLine,
  type SumDialect,
  totals,
  type TotalsRow,
  totalsSql,
  whereOf,
} from '../search-filters.ts';
import {
  lastUseSql,
  type SeriesGroup,
  type SeriesInterval,
  type SeriesPoint,
  type SeriesRow,
  seriesPoint,
  seriesSql,
} from '../spend-series-sql.ts';
import type { PgPool } from './db.ts';

/** The WHERE clause of a filter with `$1…$n` placeholders; throws RangeError as `whereOf` does. */
export function pgWhereOf(f: RequestLogFilter): { sql: string; params: (string | number)[] } {
  const w = whereOf(f);
  let n = 0;
  // The clause's only question marks are its placeholders (column names and operators have none).
  return { sql: w.sql.replace(/\?/g, () => `$${++n}`), params: w.params };
}

const PG_GROUP_EXPR: Record<SpendGroup, string> = {
  ...GROUP_EXPR,
  // SQLite's strftime('%Y-%m-%d', ts / 1000, 'unixepoch'): whole seconds, UTC.
  day: "to_char(to_timestamp(ts / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
};

// PostgreSQL's SUM of an integer is numeric: cast back to bigint, as SQLite's integers are, except
// token sums, which may pass what a bigint holds (they arrive as text, read as numbers).
const SUMS: SumDialect = {
  sum: (e) => `COALESCE(SUM(${e}), 0)::bigint`,
  tokens: (e) => `COALESCE(SUM(${e}), 0)`,
};
const TOTALS = totalsSql(SUMS);
const C = 'COLLATE "C"';

/** Spend of the rows the filter selects, grouped; largest cost first (days: oldest first). */
export async function pgSpendBy(pool: PgPool, group: SpendGroup, f: RequestLogFilter): Promise<SpendLine[]> {
  const w = pgWhereOf(f);
  const order = group === 'day' ? `key ${C} ASC` : `cost DESC, key ${C} ASC`;
  const r = await pool.query<TotalsRow & { key: string }>(
    `SELECT * FROM (SELECT ${PG_GROUP_EXPR[group]} AS key, ${TOTALS} FROM request_log ${w.sql} GROUP BY 1) s ORDER BY ${order}`,
    w.params,
  );
  return r.rows.map((x) => ({ key: String(x.key), ...totals(x) }));
}

/** Spend by day, workspace, model and provider (the CSV export's grain), oldest day first. */
export async function pgSpendDetail(pool: PgPool, f: RequestLogFilter): Promise<SpendDetail[]> {
  const w = pgWhereOf(f);
  const dims = ['day', 'workspace', 'model', 'provider'] as const;
  const keys = dims.map((g) => `${PG_GROUP_EXPR[g]} AS ${g}`).join(', ');
  const r = await pool.query<TotalsRow & { day: string; workspace: string; model: string; provider: string }>(
    `SELECT * FROM (SELECT ${keys}, ${TOTALS} FROM request_log ${w.sql} GROUP BY 1, 2, 3, 4) s ORDER BY ${dims.map((d) => `${d} ${C}`).join(', ')}`,
    w.params,
  );
  return r.rows.map((x) => ({
    day: String(x.day),
    workspace: String(x.workspace),
    model: String(x.model),
    provider: String(x.provider),
    ...totals(x),
  }));
}

/** The series of src/store/spend-series-sql.ts on PostgreSQL: the same SQL text, bigint sums, byte order. */
export async function pgSpendSeries(
  pool: PgPool,
  interval: SeriesInterval,
  by: SeriesGroup,
  f: RequestLogFilter,
): Promise<SeriesPoint[]> {
  const w = pgWhereOf(f);
  const text = seriesSql(interval, by, w.sql, { ...SUMS, collate: C });
  return (await pool.query<SeriesRow>(text, w.params)).rows.map(seriesPoint);
}

/** Key id → the time of its latest logged request, as the embedded store's `lastUse`. */
export async function pgLastUse(pool: PgPool, workspace: string | undefined): Promise<Map<string, number>> {
  const q = lastUseSql(workspace);
  let n = 0;
  const r = await pool.query<{ key: string; last: string }>(
    q.sql.replace(/\?/g, () => `$${++n}`),
    q.params,
  );
  return new Map(r.rows.map((x) => [String(x.key), Number(x.last)]));
}
