// Spend over time and per key, for operators:
//   GET /admin/spend/series?interval=hour|day&by=workspace|model|provider|total&from&to&workspace&model&provider
//     billed requests, rejected, unbilled, errors, latency p50/p95 (exact nearest-rank) and cost per
//     bucket, one series per group, every bucket of the range present (zeros where nothing ran);
//   GET /admin/spend/keys?from&to&workspace&…
//     every API key with its billed requests, rejected, unbilled, tokens and cost over the range and
//     its last use (the latest request it made, any outcome, any time).
// The same counts as GET /admin/spend and `pi-gateway usage` (src/store/search-filters.ts).
import type { OperatorView } from '../admin/operator-view.ts';
import { keyState } from '../store/sqlite/store.ts';
import { nanoToDecimal } from '../money.ts';
import type { SpendLine } from '../store/search-filters.ts';
import { INTERVAL_MS, type SeriesGroup, type SeriesInterval, type SeriesPoint } from '../store/spend-series-sql.ts';
import { badRequest, iso } from './http.ts';
import { spendFilter } from './spend.ts';

/** At most this many buckets in one answer (an hourly series of 41 days). */
const MAX_BUCKETS = 1000;
const GROUPS: readonly SeriesGroup[] = ['total', 'workspace', 'model', 'provider'];

function intervalOf(q: Map<string, string>, fromMs: number, toMs: number): SeriesInterval {
  const v = q.get('interval');
  if (v === undefined) return toMs - fromMs <= 2 * INTERVAL_MS.day ? 'hour' : 'day';
  if (v !== 'hour' && v !== 'day') throw badRequest(`interval must be "hour" or "day", got "${v}"`);
  return v;
}

function groupOf(q: Map<string, string>): SeriesGroup {
  const v = q.get('by') ?? 'total';
  const g = GROUPS.find((x) => x === v);
  if (g === undefined) throw badRequest(`by must be one of ${GROUPS.join(', ')}, got "${v}"`);
  return g;
}

interface Columns {
  key: string;
  costNano: bigint;
  requests: number[];
  rejected: number[];
  unbilled: number[];
  errors: number[];
  p50_ms: (number | null)[];
  p95_ms: (number | null)[];
  cost: bigint[];
}

function emptyColumns(key: string, n: number): Columns {
  const zeros = () => new Array<number>(n).fill(0);
  return {
    key,
    costNano: 0n,
    requests: zeros(),
    rejected: zeros(),
    unbilled: zeros(),
    errors: zeros(),
    p50_ms: new Array<number | null>(n).fill(null),
    p95_ms: new Array<number | null>(n).fill(null),
    cost: new Array<bigint>(n).fill(0n),
  };
}

function place(c: Columns, i: number, p: SeriesPoint): void {
  c.requests[i] = p.requests;
  c.rejected[i] = p.rejected;
  c.unbilled[i] = p.unbilled;
  c.errors[i] = p.errors;
  c.p50_ms[i] = p.p50Ms;
  c.p95_ms[i] = p.p95Ms;
  c.cost[i] = p.costNano;
  c.costNano += p.costNano;
}

/** GET /admin/spend/series. */
export async function spendSeriesReport(view: OperatorView, q: Map<string, string>): Promise<unknown> {
  const f = spendFilter(view, q);
  const interval = intervalOf(q, f.fromMs, f.toMs);
  const by = groupOf(q);
  const step = INTERVAL_MS[interval];
  const first = Math.floor(f.fromMs / step) * step;
  const n = Math.ceil((f.toMs - first) / step);
  if (n > MAX_BUCKETS)
    throw badRequest(
      `that is ${n} ${interval}s; ask for at most ${MAX_BUCKETS} (a shorter range${interval === 'hour' ? ', or interval=day' : ''})`,
    );
  const points = await view.store.requestLog.series(interval, by, f);
  const series = new Map<string, Columns>();
  // The total series is there even over an empty range: a chart of zeros, not a missing chart.
  if (by === 'total') series.set('', emptyColumns('', n));
  for (const p of points) {
    let c = series.get(p.key);
    if (!c) series.set(p.key, (c = emptyColumns(p.key, n)));
    place(c, (p.bucket - first) / step, p);
  }
  const ordered = [...series.values()].sort((a, b) =>
    a.costNano === b.costNano ? (a.key < b.key ? -1 : 1) : a.costNano > b.costNano ? -1 : 1,
  );
  return {
    from: iso(f.fromMs),
    to: iso(f.toMs),
    interval,
    by,
    percentiles: 'nearest-rank',
    buckets: Array.from({ length: n }, (_, i) => iso(first + i * step)),
    series: ordered.map(({ costNano, cost, ...c }) => ({
      ...c,
      cost_usd: cost.map(nanoToDecimal),
      total_cost_usd: nanoToDecimal(costNano),
    })),
  };
}

const NO_SPEND: Omit<SpendLine, 'key'> = {
  requests: 0,
  rejected: 0,
  unbilled: 0,
  costNano: 0n,
  promptTokens: 0,
  completionTokens: 0,
};

/** GET /admin/spend/keys: every key (of the workspace, when asked), its spend over the range and its last use. */
export async function keySpendReport(view: OperatorView, q: Map<string, string>): Promise<unknown> {
  const f = spendFilter(view, q);
  const now = view.now();
  const [keys, lines, lastUse] = await Promise.all([
    view.store.apiKeys.list(f.workspace),
    view.store.requestLog.spend('key', f),
    view.store.requestLog.lastUse(f.workspace),
  ]);
  const spendOf = new Map(lines.map((l) => [l.key, l]));
  const known = new Set(keys.map((k) => k.id));
  const rows = [
    ...keys.map((k) => ({
      id: k.id,
      prefix: k.prefix as string | null,
      name: k.name,
      workspace: k.workspace as string | null,
      state: keyState(k, now) as string | null,
      expires_at: iso(k.expiresAt),
      line: spendOf.get(k.id) ?? { key: k.id, ...NO_SPEND },
    })),
    // Requests logged against a key the store no longer lists (none today: keys are never deleted).
    ...lines
      .filter((l) => l.key !== '' && !known.has(l.key))
      .map((l) => ({ id: l.key, prefix: null, name: null, workspace: null, state: null, expires_at: null, line: l })),
  ];
  rows.sort((a, b) =>
    a.line.costNano !== b.line.costNano
      ? a.line.costNano > b.line.costNano
        ? -1
        : 1
      : b.line.requests - a.line.requests || (a.id < b.id ? -1 : 1),
  );
  return {
    from: iso(f.fromMs),
    to: iso(f.toMs),
    keys: rows.map(({ line: l, ...k }) => ({
      ...k,
      requests: l.requests,
      rejected: l.rejected,
      unbilled: l.unbilled,
      cost_usd: nanoToDecimal(l.costNano),
      prompt_tokens: l.promptTokens,
      completion_tokens: l.completionTokens,
      last_used_at: iso(lastUse.get(k.id) ?? null),
    })),
  };
}
