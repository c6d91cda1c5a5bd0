// Reading the request log for operators (the console and its admin JSON endpoints): filtered pages,
// newest first, with an id cursor for paging back and a `sinceId` for a live tail; and spend totals
// grouped by workspace, model, provider or UTC day. Read-only SQL over the request_log table.
import type { Statements } from './db.ts';

/** Filters of a request-log page; every one optional. Times are epoch ms, [fromMs, toMs). */
export interface RequestLogFilter {
  workspace?: string;
  keyId?: string;
  /** Any of these keys (the keys a name or prefix search found); an empty list matches no row. */
  keyIds?: readonly string[];
  /** The model served, or the one requested when none served. */
  model?: string;
  /** Platform id that answered. */
  provider?: string;
  /** An exact status (`429`), a class (`5xx`), or `error` (any status ≥ 400). */
  status?: string;
  /** How the request ended (src/observe/request-end.ts). */
  ended?: string;
  traceId?: string;
  fromMs?: number;
  toMs?: number;
  /** Rows older than this id (the next page of a newest-first listing). */
  beforeId?: number;
  /** Rows newer than this id (a live tail). */
  sinceId?: number;
  /** Rows newer than this id, the nearest first: the page just above a newest-first page (paging
   *  forward). `search` then reads upwards from it and still answers newest first. */
  afterId?: number;
}

export type SpendGroup = 'workspace' | 'model' | 'provider' | 'day';

export interface SpendLine {
  /** The group's value: workspace id, model slug, platform id or `YYYY-MM-DD` (UTC); '' when none. */
  key: string;
  requests: number;
  costNano: bigint;
  promptTokens: number;
  completionTokens: number;
}

/** One CSV-grained line: a day, workspace, model and provider. */
export interface SpendDetail extends Omit<SpendLine, 'key'> {
  day: string;
  workspace: string;
  model: string;
  provider: string;
}

const STATUS_CLASS = /^([1-5])xx$/;

/** The WHERE clause and its parameters; throws RangeError on a status it cannot read. */
export function whereOf(f: RequestLogFilter): { sql: string; params: (string | number)[] } {
  const where: string[] = [];
  const params: (string | number)[] = [];
  const eq = (column: string, v: string | undefined): void => {
    if (v === undefined) return;
    where.push(`${column} = ?`);
    params.push(v);
  };
  eq('workspace', f.workspace);
  eq('key_id', f.keyId);
  eq('provider', f.provider);
  eq('ended', f.ended);
  eq('trace_id', f.traceId);
  if (f.keyIds !== undefined) {
    if (f.keyIds.length === 0) where.push('1 = 0');
    else {
      where.push(`key_id IN (${f.keyIds.map(() => '?').join(', ')})`);
      params.push(...f.keyIds);
    }
  }
  if (f.model !== undefined) {
    where.push('COALESCE(model_served, model_requested) = ?');
    params.push(f.model);
  }
  if (f.status !== undefined) {
    const cls = STATUS_CLASS.exec(f.status);
    if (cls) {
      where.push('status >= ? AND status < ?');
      params.push(Number(cls[1]) * 100, Number(cls[1]) * 100 + 100);
    } else if (f.status === 'error') {
      where.push('status >= 400');
    } else if (/^[1-5]\d\d$/.test(f.status)) {
      where.push('status = ?');
      params.push(Number(f.status));
    } else {
      throw new RangeError(`status must be a code (429), a class (5xx) or "error", got "${f.status}"`);
    }
  }
  const num = (cond: string, v: number | undefined): void => {
    if (v === undefined) return;
    where.push(cond);
    params.push(v);
  };
  num('ts >= ?', f.fromMs);
  num('ts < ?', f.toMs);
  num('id < ?', f.beforeId);
  num('id > ?', f.sinceId);
  num('id > ?', f.afterId);
  return { sql: where.length ? `WHERE ${where.join(' AND ')}` : '', params };
}

const GROUP_EXPR: Record<SpendGroup, string> = {
  workspace: "COALESCE(workspace, '')",
  model: "COALESCE(model_served, model_requested, '')",
  provider: "COALESCE(provider, '')",
  day: "strftime('%Y-%m-%d', ts / 1000, 'unixepoch')",
};

const TOTALS =
  'COUNT(*) AS requests, COALESCE(SUM(cost_nano), 0) AS cost, COALESCE(SUM(prompt_tokens), 0) AS prompt, COALESCE(SUM(completion_tokens), 0) AS completion';

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

/** Spend of the rows the filter selects, grouped; largest cost first (days: oldest first). */
export function spendBy(sql: Statements, group: SpendGroup, f: RequestLogFilter): SpendLine[] {
  const w = whereOf(f);
  const order = group === 'day' ? 'key ASC' : 'cost DESC, key ASC';
  const rows = sql
    .get(`SELECT ${GROUP_EXPR[group]} AS key, ${TOTALS} FROM request_log ${w.sql} GROUP BY 1 ORDER BY ${order}`)
    .all(...w.params) as (TotalsRow & { key: string })[];
  return rows.map((r) => ({ key: String(r.key), ...totals(r) }));
}

/** Spend by day, workspace, model and provider (the CSV export's grain), oldest day first. */
export function spendDetail(sql: Statements, f: RequestLogFilter): SpendDetail[] {
  const w = whereOf(f);
  const keys = (['day', 'workspace', 'model', 'provider'] as const).map((g) => `${GROUP_EXPR[g]} AS ${g}`).join(', ');
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
