// The request log for operators: GET /admin/requests (filters, a trace id a customer pastes, a key
// by name, prefix or id; newest first, `before` / `after` cursors, `since` for a live tail) and
// GET /admin/requests/:trace (one request: every attempt, tokens, cost, its ledger rows, the key's
// name). Rows carry no prompt, key or credential: the log never had them.
import type { OperatorView } from '../admin/operator-view.ts';
import { nanoToDecimal } from '../money.ts';
import { isRequestEnd } from '../observe/request-end.ts';
import type { ApiKeyRecord, RequestLogEntry, RequestLogFilter } from '../store/sqlite/store.ts';
import { KEY_PREFIX } from '../store/sqlite/store.ts';
import { badRequest, intField, iso, notFound, parseTime, refuseWholeKey, SHOWN_PREFIX_CHARS } from './http.ts';

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
  text('trace', (v) => {
    if (v.length > MAX_TRACE_CHARS)
      throw badRequest(`trace must be a trace id (X-Pi-Trace-Id), got ${v.length} characters`);
    // Pasted as the header line a customer copied ("X-Pi-Trace-Id: …") or as the bare value.
    const trace = v.trim().replace(/^x-pi-trace-id:\s*/i, '');
    if (trace !== '') f.traceId = trace;
  });
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
  id('after', (n) => (f.afterId = n));
  id('since', (n) => (f.sinceId = n));
  if (f.beforeId !== undefined && f.afterId !== undefined) throw badRequest('before and after cannot go together');
  return f;
}

/** Longer than any trace id the gateway hands out (it answers X-Pi-Trace-Id on every request). */
const MAX_TRACE_CHARS = 256;
/** A key search matching more keys than this is too broad to be a search (and to be an IN list). */
const MAX_MATCHED_KEYS = 500;

/**
 * The keys `key=` names: the key with that id, the keys whose prefix starts with it (`sk-pi-…`, the
 * part of a key that is not secret), or the keys whose name contains it (any case). A whole key is
 * refused: it is a secret, and would now sit in a URL, a browser history and access logs.
 */
export function matchingKeys(keys: readonly ApiKeyRecord[], query: string): string[] {
  const q = query.trim();
  refuseWholeKey(q, `search by its prefix (its first ${SHOWN_PREFIX_CHARS} characters), its name or its id`);
  const lower = q.toLowerCase();
  const ids = keys
    .filter(
      (k) =>
        k.id === q ||
        (q.startsWith(KEY_PREFIX) && q.length > KEY_PREFIX.length && k.prefix.startsWith(q)) ||
        k.name?.toLowerCase().includes(lower) === true,
    )
    .map((k) => k.id);
  if (ids.length > MAX_MATCHED_KEYS)
    throw badRequest(`key "${q}" matches ${ids.length} keys; say more of the name or the prefix`);
  return ids;
}

/**
 * GET /admin/requests: `{requests, next_before, prev_after}` — the cursor of the older page (null
 * when no older row matches) and of the newer one (null on the newest page). Each row carries its
 * key's name and prefix.
 */
export async function listRequests(view: OperatorView, q: Map<string, string>): Promise<unknown> {
  const filter = filterOf(q);
  const keys = await view.store.apiKeys.list();
  const keyQuery = q.get('key');
  if (keyQuery !== undefined && keyQuery.trim() !== '') filter.keyIds = matchingKeys(keys, keyQuery);
  const page = await view.store.requestLog.search(filter, intField(q, 'limit', 50, 1000));
  const first = page.rows[0];
  const last = page.rows[page.rows.length - 1];
  const forward = filter.afterId !== undefined;
  const byId = new Map(keys.map((k) => [k.id, k]));
  return {
    requests: page.rows.map((r) => {
      const key = r.key_id === null ? undefined : byId.get(r.key_id);
      return { ...requestJson(r), key_name: key?.name ?? null, key_prefix: key?.prefix ?? null };
    }),
    // Paging forward, `more` speaks of newer rows; older ones exist (the cursor's own page).
    next_before: last && (forward || page.more) ? last.id : null,
    prev_after: first && (forward ? page.more : filter.beforeId !== undefined) ? first.id : null,
  };
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
