// The request-log filters and spend totals both store backends answer the console with: the filter
// of a page, the spend lines, the WHERE clause of a filter (with `?` placeholders; PostgreSQL numbers
// them) and the totals' SELECT list, so both stores count the same rows the same way (docs/console.md).
import { storableText } from './log-bounds.ts';

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

export type SpendGroup = 'workspace' | 'model' | 'provider' | 'key' | 'day';

export interface SpendLine {
  /** The group's value: workspace id, model slug, platform id, key id or `YYYY-MM-DD` (UTC); '' when none. */
  key: string;
  /** Billed requests (a settlement, $0 included): what `pi-gateway usage` counts. */
  requests: number;
  /** Refused by the gateway before any upstream attempt. */
  rejected: number;
  /** Neither billed nor rejected: every attempt failed, the client left first, token counting. */
  unbilled: number;
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
    params.push(storableText(v));
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
      params.push(...f.keyIds.map(storableText));
    }
  }
  if (f.model !== undefined) {
    where.push('COALESCE(model_served, model_requested) = ?');
    params.push(storableText(f.model));
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

export const GROUP_EXPR: Record<Exclude<SpendGroup, 'day'>, string> = {
  workspace: "COALESCE(workspace, '')",
  model: "COALESCE(model_served, model_requested, '')",
  provider: "COALESCE(provider, '')",
  key: "COALESCE(key_id, '')",
};
/** A billed request: it has a settlement (its cost, $0 included), as the ledger's `settle` row. */
export const BILLED = 'cost_nano IS NOT NULL';
/** Refused before any upstream attempt; never NULL (a row from before `ended` existed is not). */
export const REJECTED = "(cost_nano IS NULL AND COALESCE(ended, '') = 'rejected')";

/**
 * How a store sums a column. `sum`: exactly, in a 64-bit integer (counts of rows, nano-USD).
 * `tokens`: token counts, which are the provider's word — up to 2^53 − 1 a row (the usage reader's
 * bound) — so about a thousand rows of a provider reporting the most could pass 2^63: their sum is
 * one no row can make fail (PostgreSQL's numeric, SQLite's TOTAL), read as a number like the rows.
 */
export interface SumDialect {
  sum: (expr: string) => string;
  tokens: (expr: string) => string;
}

/** The totals' SELECT list in the store's dialect. */
export function totalsSql(d: SumDialect): string {
  return [
    `${d.sum(`CASE WHEN ${BILLED} THEN 1 ELSE 0 END`)} AS requests`,
    `${d.sum(`CASE WHEN ${REJECTED} THEN 1 ELSE 0 END`)} AS rejected`,
    'COUNT(*) AS logged',
    `${d.sum('cost_nano')} AS cost`,
    `${d.tokens('prompt_tokens')} AS prompt`,
    `${d.tokens('completion_tokens')} AS completion`,
  ].join(', ');
}

export interface TotalsRow {
  requests: bigint | string | number;
  rejected: bigint | string | number;
  logged: bigint | string | number;
  cost: bigint | string | number;
  prompt: bigint | string | number;
  completion: bigint | string | number;
}

/** A totals row as numbers (counts, tokens) and exact nano-USD; PostgreSQL's int8 arrives as text. */
export const totals = (r: TotalsRow): Omit<SpendLine, 'key'> => {
  const requests = Number(r.requests);
  const rejected = Number(r.rejected);
  return {
    requests,
    rejected,
    unbilled: Number(r.logged) - requests - rejected,
    costNano: BigInt(r.cost),
    promptTokens: Number(r.prompt),
    completionTokens: Number(r.completion),
  };
};
