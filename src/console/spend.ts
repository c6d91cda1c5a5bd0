// Spend for operators: GET /admin/spend (cost, tokens and requests by workspace, model, provider and
// UTC day over a time range, from the request log) and GET /admin/spend.csv (day × workspace × model
// × provider). Cost is the settled cost each request logged, exact in nano-USD, shown in USD.
// `requests` are billed requests, as `pi-gateway usage` counts them; `rejected` (refused before any
// upstream attempt) and `unbilled` (the rest) are apart (src/store/search-filters.ts).
import type { OperatorView } from '../admin/operator-view.ts';
import { nanoToDecimal } from '../money.ts';
import type { RequestLogFilter, SpendLine } from '../store/sqlite/store.ts';
import { badRequest, iso, parseTime } from './http.ts';

const DAY_MS = 86_400_000;
/** Without `from`, this many days back from the start of tomorrow (UTC). */
const DEFAULT_DAYS = 30;

/** The range and narrowing filters of a spend query: [from, to) in epoch ms. */
export function spendFilter(
  view: OperatorView,
  q: Map<string, string>,
): RequestLogFilter & { fromMs: number; toMs: number } {
  const now = view.now();
  const tomorrow = now - (now % DAY_MS) + DAY_MS;
  const toRaw = q.get('to');
  const fromRaw = q.get('from');
  const toMs = toRaw === undefined ? tomorrow : parseTime('to', toRaw);
  const fromMs = fromRaw === undefined ? toMs - DEFAULT_DAYS * DAY_MS : parseTime('from', fromRaw);
  if (fromMs >= toMs) throw badRequest('from must be before to');
  const f: RequestLogFilter & { fromMs: number; toMs: number } = { fromMs, toMs };
  const ws = q.get('workspace');
  if (ws !== undefined) f.workspace = ws;
  const model = q.get('model');
  if (model !== undefined) f.model = model;
  const provider = q.get('provider');
  if (provider !== undefined) f.provider = provider;
  return f;
}

const line = (l: SpendLine) => ({
  key: l.key,
  requests: l.requests,
  rejected: l.rejected,
  unbilled: l.unbilled,
  cost_usd: nanoToDecimal(l.costNano),
  prompt_tokens: l.promptTokens,
  completion_tokens: l.completionTokens,
});

/** GET /admin/spend. */
export async function spendReport(view: OperatorView, q: Map<string, string>): Promise<unknown> {
  const f = spendFilter(view, q);
  const log = view.store.requestLog;
  const [byDay, byWorkspace, byModel, byProvider] = await Promise.all([
    log.spend('day', f),
    log.spend('workspace', f),
    log.spend('model', f),
    log.spend('provider', f),
  ]);
  const total = byDay.reduce(
    (a: SpendLine, l) => ({
      key: a.key,
      requests: a.requests + l.requests,
      rejected: a.rejected + l.rejected,
      unbilled: a.unbilled + l.unbilled,
      costNano: a.costNano + l.costNano,
      promptTokens: a.promptTokens + l.promptTokens,
      completionTokens: a.completionTokens + l.completionTokens,
    }),
    { key: '', requests: 0, rejected: 0, unbilled: 0, costNano: 0n, promptTokens: 0, completionTokens: 0 },
  );
  const { key: _none, ...totalLine } = line(total);
  return {
    from: iso(f.fromMs),
    to: iso(f.toMs),
    total: totalLine,
    by_workspace: byWorkspace.map(line),
    by_model: byModel.map(line),
    by_provider: byProvider.map(line),
    by_day: byDay.map(line),
  };
}

/**
 * A CSV field: quoted when it holds a comma, quote or line break. A text field a spreadsheet would
 * run as a formula (a leading =, +, -, @, tab or carriage return: a model name is the client's own
 * text) gets a leading apostrophe, which spreadsheets show as text.
 */
function csvField(v: string | number): string {
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** GET /admin/spend.csv: one line per day, workspace, model and provider. */
export async function spendCsv(view: OperatorView, q: Map<string, string>): Promise<string> {
  const rows = await view.store.requestLog.spendDetail(spendFilter(view, q));
  const out = ['day,workspace,model,provider,requests,rejected,unbilled,prompt_tokens,completion_tokens,cost_usd'];
  for (const r of rows)
    out.push(
      [
        r.day,
        r.workspace,
        r.model,
        r.provider,
        r.requests,
        r.rejected,
        r.unbilled,
        r.promptTokens,
        r.completionTokens,
        nanoToDecimal(r.costNano),
      ]
        .map(csvField)
        .join(','),
    );
  return out.join('\r\n') + '\r\n';
}
