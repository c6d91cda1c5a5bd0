// Reading the request log for operators (the console and its admin JSON endpoints): filtered pages,
// newest first, with an id cursor for paging back and a `sinceId` for a live tail; and spend totals
// grouped by workspace, model, provider, API key or UTC day. Read-only SQL over the request_log table.
//
// What the totals count (the same on both stores; docs/console.md): `requests` are the billed
// requests — those with a settlement, a $0 one included —, exactly what `pi-gateway usage` counts
// from the ledger's settlements; `rejected` are the requests the gateway refused before any upstream
// attempt (a bad key, a rate limit, an empty wallet, an unknown model: never billed); `unbilled` are
// the rest of the logged requests (every attempt failed, the client left before an answer, token
// counting). requests + rejected + unbilled = every logged request.
import type { Statements } from './db.ts';
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

const SQLITE_GROUP_EXPR: Record<SpendGroup, string> = {
  ...GROUP_EXPR,
  day: "strftime('%Y-%m-%d', ts / 1000, 'unixepoch')",
};

/** SQLite's SUM of integers fails past 2^63 ("integer overflow"); TOTAL, a float, never does. */
export const SQLITE_SUMS: SumDialect = { sum: (e) => `COALESCE(SUM(${e}), 0)`, tokens: (e) => `TOTAL(${e})` };
const TOTALS = totalsSql(SQLITE_SUMS);

/** Spend of the rows the filter selects, grouped; largest cost first (days: oldest first). */
export function spendBy(sql: Statements, group: SpendGroup, f: RequestLogFilter): SpendLine[] {
  const w = whereOf(f);
  const order = group === 'day' ? 'key ASC' : 'cost DESC, key ASC';
  const rows = sql
    .get(`SELECT ${SQLITE_GROUP_EXPR[group]} AS key, ${TOTALS} FROM request_log ${w.sql} GROUP BY 1 ORDER BY ${order}`)
    .all(...w.params) as (TotalsRow & { key: string })[];
  return rows.map((r) => ({ key: String(r.key), ...totals(r) }));
}

/** Spend by day, workspace, model and provider (the CSV export's grain), oldest day first. */
export function spendDetail(sql: Statements, f: RequestLogFilter): SpendDetail[] {
  const w = whereOf(f);
  const keys = (['day', 'workspace', 'model', 'provider'] as const)
    .map((g) => `${SQLITE_GROUP_EXPR[g]} AS ${g}`)
    .join(', ');
  const rows = sql
    .get(`SELECT ${keys}, ${TOTALS} FROM request_log ${w.sql} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`)
    .all(...w.params) as (TotalsRow & {
    day: string;
    workspace: string;
    model: string;
    provider: string;
  })[];
  return rows.map((r) => ({
    day: String(r.day),
    workspace: String(r.workspace),
    model: String(r.model),
    provider: String(r.provider),
    ...totals(r),
  }));
}
