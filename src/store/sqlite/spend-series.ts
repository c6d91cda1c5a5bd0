// The embedded store's series over time and last uses of keys: the shared SQL of
// src/store/spend-series-sql.ts run on the SQLite connection.
import type { Statements } from './db.ts';
import { whereOf, type RequestLogFilter } from '../search-filters.ts';
import { SQLITE_SUMS } from './request-log-search.ts';
import {
  lastUseSql,
  type SeriesGroup,
  type SeriesInterval,
  type SeriesPoint,
  type SeriesRow,
  seriesPoint,
  seriesSql,
} from '../spend-series-sql.ts';

/** The embedded store's series: points with at least one row, by bucket then key. */
export function spendSeries(
  sql: Statements,
  interval: SeriesInterval,
  by: SeriesGroup,
  f: RequestLogFilter,
): SeriesPoint[] {
  const w = whereOf(f);
  const text = seriesSql(interval, by, w.sql, { ...SQLITE_SUMS, collate: '' });
  return (sql.get(text).all(...w.params) as SeriesRow[]).map(seriesPoint);
}

/** The embedded store's last uses: key id → epoch ms. */
export function lastUse(sql: Statements, workspace: string | undefined): Map<string, number> {
  const q = lastUseSql(workspace);
  const rows = sql.get(q.sql).all(...q.params) as { key: string; last: bigint }[];
  return new Map(rows.map((r) => [String(r.key), Number(r.last)]));
}
