// Reading the PostgreSQL request log for operators: the embedded store's filters
// (src/store/request-log-search.ts `whereOf`, its `?` placeholders numbered for PostgreSQL) and its
// spend totals — grouped by workspace, model, provider or UTC day, with the same order (binary string
// order, as SQLite compares) and exact bigint sums, so both stores give the console the same numbers.
import {
  type RequestLogFilter,
  type SpendDetail,
  type SpendGroup,
  type SpendLine,
  whereOf,
} from '../store/request-log-search.ts';
import type { PgPool } from './connection.ts';

/** The WHERE clause of a filter with `$1…$n` placeholders; throws RangeError as `whereOf` does. */
export function pgWhereOf(f: RequestLogFilter): { sql: string; params: (string | number)[] } {
  const w = whereOf(f);
  let n = 0;
  // The clause's only question marks are its placeholders (column names and operators have none).
  return { sql: w.sql.replace(/\?/g, () => `$${++n}`), params: w.params };
}

const GROUP_EXPR: Record<SpendGroup, string> = {
  workspace: "COALESCE(workspace, '')",
  model: "COALESCE(model_served, model_requested, '')",
  provider: "COALESCE(provider, '')",
  // SQLite's strftime('%Y-%m-%d', ts / 1000, 'unixepoch'): whole seconds, UTC.
  day: "to_char(to_timestamp(ts / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
};

const TOTALS =
  'COUNT(*) AS requests, COALESCE(SUM(cost_nano), 0)::bigint AS cost, COALESCE(SUM(prompt_tokens), 0)::bigint AS prompt, COALESCE(SUM(completion_tokens), 0)::bigint AS completion';

interface TotalsRow {
  requests: bigint;
  cost: bigint;
  prompt: bigint;
  completion: bigint;
}

const totals = (r: TotalsRow) => ({
  requests: Number(r.requests),
  costNano: BigInt(r.cost),
  promptTokens: Number(r.prompt),
  completionTokens: Number(r.completion),
});
const C = 'COLLATE "C"';

/** Spend of the rows the filter selects, grouped; largest cost first (days: oldest first). */
export async function pgSpendBy(pool: PgPool, group: SpendGroup, f: RequestLogFilter): Promise<SpendLine[]> {
  const w = pgWhereOf(f);
  const order = group === 'day' ? `key ${C} ASC` : `cost DESC, key ${C} ASC`;
  const r = await pool.query<TotalsRow & { key: string }>(
    `SELECT * FROM (SELECT ${GROUP_EXPR[group]} AS key, ${TOTALS} FROM request_log ${w.sql} GROUP BY 1) s ORDER BY ${order}`,
    w.params,
  );
  return r.rows.map((x) => ({ key: String(x.key), ...totals(x) }));
}

/** Spend by day, workspace, model and provider (the CSV export's grain), oldest day first. */
export async function pgSpendDetail(pool: PgPool, f: RequestLogFilter): Promise<SpendDetail[]> {
  const w = pgWhereOf(f);
  const dims = ['day', 'workspace', 'model', 'provider'] as const;
  const keys = dims.map((g) => `${GROUP_EXPR[g]} AS ${g}`).join(', ');
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
