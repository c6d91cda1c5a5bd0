// The request log for operators: GET /admin/requests (filters, newest first, `before` cursor,
// `since` for a live tail) and GET /admin/requests/:trace (one request: every attempt, tokens, cost,
// its ledger rows, the key's name). Rows carry no prompt, key or credential: the log never had them.
import type { OperatorView } from '../admin/operator-view.ts';
import { nanoToDecimal } from '../money.ts';
import { isRequestEnd } from '../observe/request-end.ts';
import type { RequestLogEntry, RequestLogFilter } from '../store/store.ts';
import { badRequest, intField, iso, notFound, parseTime } from './http.ts';

/** One request-log row as the admin endpoints show it. */
export function requestJson(r: RequestLogEntry): Record<string, unknown> {
  return {
    id: r.id,
    trace_id: r.trace_id,
    time: iso(r.ts),
    workspace: r.workspace,
    key_id: r.key_id,
    endpoint: r.endpoint,
    model_requested: r.model_requested,
    model_served: r.model_served,
    provider: r.provider,
    deployment: r.deployment,
    attempts: r.attempts,
    stream: r.stream,
    status: r.status,
    error_code: r.error_code,
    ended: r.ended,
    latency_ms: r.latency_ms,
    ttfb_ms: r.ttfb_ms,
    prompt_tokens: r.prompt_tokens,
    completion_tokens: r.completion_tokens,
    reasoning_tokens: r.reasoning_tokens,
    cached_tokens: r.cached_tokens,
    cost_usd: r.cost_nano === null ? null : nanoToDecimal(r.cost_nano),
    app_title: r.app_title,
    app_origin: r.app_origin,
    session_id: r.session_id,
  };
}

/** The filter of a query string (see RequestLogFilter); 400 on a value it cannot read. */
export function filterOf(q: Map<string, string>): RequestLogFilter {
  const f: RequestLogFilter = {};
  const text = (name: string, set: (v: string) => void): void => {
    const v = q.get(name);
    if (v !== undefined) set(v);
  };
  text('workspace', (v) => (f.workspace = v));
  text('key', (v) => (f.keyId = v));
  text('model', (v) => (f.model = v));
  text('provider', (v) => (f.provider = v));
  text('status', (v) => {
    if (!/^([1-5]\d\d|[1-5]xx|error)$/.test(v))
      throw badRequest(`status must be a code (429), a class (5xx) or "error", got "${v}"`);
    f.status = v;
  });
  text('ended', (v) => {
    if (!isRequestEnd(v))
      throw badRequest(
        `ended must be one of completed, client_abort, upstream_cut, idle_timeout, write_stall, drained, failed, rejected; got "${v}"`,
      );
    f.ended = v;
  });
  text('from', (v) => (f.fromMs = parseTime('from', v)));
  text('to', (v) => (f.toMs = parseTime('to', v)));
  const id = (name: string, set: (n: number) => void): void => {
    const v = q.get(name);
    if (v === undefined) return;
    if (!/^\d{1,15}$/.test(v)) throw badRequest(`${name} must be a request id (a whole number), got "${v}"`);
    set(Number(v));
  };
  id('before', (n) => (f.beforeId = n));
  id('since', (n) => (f.sinceId = n));
  return f;
}

/** GET /admin/requests: `{requests, next_before}` (null when no older row matches). */
export async function listRequests(view: OperatorView, q: Map<string, string>): Promise<unknown> {
  const page = await view.store.requestLog.search(filterOf(q), intField(q, 'limit', 50, 1000));
  const last = page.rows[page.rows.length - 1];
  return { requests: page.rows.map(requestJson), next_before: page.more && last ? last.id : null };
}

/** GET /admin/requests/:trace: the row (or rows, when a trace id was reused), attempts and ledger. */
export async function requestDetail(view: OperatorView, traceId: string): Promise<unknown> {
  const rows = (await view.store.requestLog.search({ traceId }, 10)).rows;
  const row = rows[0];
  if (!row) throw notFound(`no request with trace id ${traceId} in the request log`);
  const key = row.key_id === null ? null : await view.store.apiKeys.get(row.key_id);
  const ledger = await view.store.wallets.ledgerOf(traceId);
  return {
    ...requestJson(row),
    key: key && { id: key.id, name: key.name, prefix: key.prefix, workspace: key.workspace },
    attempt_list: row.attempts_json.map((a, i) => ({
      n: i + 1,
      provider: a.provider,
      model: a.model,
      deployment: a.deployment,
      outcome: a.outcome,
      status: a.status,
      ms: a.ms,
    })),
    ledger: ledger.map((l) => ({
      id: l.id,
      kind: l.kind,
      amount_usd: nanoToDecimal(l.amount),
      time: iso(l.createdAt),
      estimated: l.details?.['estimated'] === true,
    })),
    others: rows.length - 1,
  };
}
