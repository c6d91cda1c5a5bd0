// What one inference request records as it goes (who called, what was asked, what answered, what it
// cost), and the request-log row made of it when the request ends, whatever path it took.
import type { Admitted } from '../admission/admission.ts';
import { headerText, originOf, sanitizeTitle } from '../http/header-text.ts';
import type { IncomingRequest } from '../http/request.ts';
import type { RequestSummary } from '../observe/observer.ts';
import type { RequestEnd } from '../observe/request-end.ts';
import type { RoutingFields } from '../protocols/types.ts';
import type { FailureReason } from '../proxy/attempt.ts';
import type { FailoverFinal, FailoverResult } from '../proxy/failover.ts';
import { boundedText, LOG_TEXT_BOUNDS } from '../store/log-bounds.ts';
import type { ApiKeyRecord, RequestLogRow } from '../store/sqlite/store.ts';

export interface RequestRecord {
  endpoint: string;
  traceId: string;
  admitted: Admitted | null;
  /** The key a refused request presented, when it is one the gateway issued (revoked, expired). */
  refusedKey: ApiKeyRecord | null;
  fields: RoutingFields | null;
  stream: boolean;
  sessionId: string | null;
  holdNano: bigint | null;
  result: FailoverResult | null;
  settledCost: bigint | null;
  usage: { prompt: number; completion: number; reasoning: number | null; cached: number | null } | null;
  errorCode: string | null;
  status: number;
  /** How the request ended (see src/observe/request-end.ts); decided when it finishes. */
  ended: RequestEnd;
  /** The primary model id routing resolved (a config id, unlike the client's `fields.model`). */
  routedModel: string | null;
  /** The settlement was cut: to the request's bound (a provider report above it), or an estimate to its hold. */
  usageCapped: 'bound' | 'hold' | null;
}

/** A record with nothing known yet but the endpoint and the trace id. */
export function newRequestRecord(endpoint: string, traceId: string): RequestRecord {
  return {
    endpoint,
    traceId,
    admitted: null,
    refusedKey: null,
    fields: null,
    stream: false,
    sessionId: null,
    holdNano: null,
    result: null,
    settledCost: null,
    usage: null,
    errorCode: null,
    status: 0,
    // Until an attempt says otherwise, a request that stops is one the gateway refused.
    ended: 'rejected',
    routedModel: null,
    usageCapped: null,
  };
}

export function requestLogRow(req: IncomingRequest, s: RequestRecord, nowMs: number): RequestLogRow {
  const attempts = s.result?.attempts ?? [];
  const final = s.result?.final;
  const served = final && (final.kind === 'committed' || final.kind === 'provider_error') ? final.item : null;
  const committed = final?.kind === 'committed' ? final.outcome : null;
  return {
    trace_id: s.traceId,
    ts: nowMs,
    workspace: s.admitted?.workspace.id ?? s.refusedKey?.workspace ?? null,
    key_id: s.admitted?.key.id ?? s.refusedKey?.id ?? null,
    endpoint: s.endpoint,
    // The client's string, bounded here and not only where it is stored: the row crosses to the
    // coordinator every thread of `serve --workers N` shares, and a 4 MiB body (a few KB of it
    // compressed) can name a model of millions of characters, cloned whole for every such request.
    model_requested: boundedText(s.fields?.model ?? null, LOG_TEXT_BOUNDS.model_requested),
    model_served: served?.model.id ?? null,
    provider: served?.deployment.platform ?? null,
    deployment: served?.deployment.id ?? null,
    attempts: attempts.length,
    attempts_json: attempts.map((a) => ({
      provider: a.provider,
      model: a.model,
      deployment: a.deployment,
      outcome: a.outcome,
      status: a.status,
      ms: a.ms,
    })),
    stream: s.stream,
    status: s.status,
    error_code: s.errorCode,
    latency_ms: Math.round(performance.now() - req.startedAt),
    ttfb_ms: committed ? Math.round(committed.firstByteMs) : null,
    prompt_tokens: s.usage?.prompt ?? null,
    completion_tokens: s.usage?.completion ?? null,
    reasoning_tokens: s.usage?.reasoning ?? null,
    cached_tokens: s.usage?.cached ?? null,
    cost_nano: s.settledCost,
    app_title: sanitizeTitle(headerText(req.headers['x-title'])),
    app_origin: originOf(headerText(req.headers['http-referer']), headerText(req.headers['referer'])),
    session_id: s.sessionId,
    ended: s.ended,
  };
}

/**
 * The log row as known when the answer is settled, before its last bytes go out: what served it and
 * what it cost, the request not yet ended. Committed with the settlement, so a crash never keeps a
 * charge without its row; the final row (attempts, latency, how it ended) replaces it.
 */
export function settledRow(
  req: IncomingRequest,
  s: RequestRecord,
  served: { model: string; platform: string; deployment: string },
  status: number,
  firstByteMs: number,
  nowMs: number,
): RequestLogRow {
  const row = requestLogRow(req, s, nowMs);
  row.model_served = served.model;
  row.provider = served.platform;
  row.deployment = served.deployment;
  row.status = status;
  row.ttfb_ms = Math.round(firstByteMs);
  row.ended = s.result === null ? 'completed' : s.ended;
  return row;
}

/** What the request's observers hear when it is over: its log row, and what only they need
 *  (`bytesSent`: the answer's body bytes, from the reply). */
export function requestSummary(
  req: IncomingRequest,
  s: RequestRecord,
  nowMs: number,
  bytesSent: number,
): RequestSummary {
  const row = requestLogRow(req, s, nowMs);
  const final = s.result?.final;
  return {
    row,
    durationMs: performance.now() - req.startedAt,
    routedModel: s.routedModel,
    upstreamModel: final?.kind === 'committed' ? final.outcome.upstreamModel : null,
    usageCapped: s.usageCapped,
    requestBytes: req.bodyBytes,
    responseBytes: bytesSent,
  };
}

/** A request no provider answered, in its record: the status and error code the client got. */
export function recordUnanswered(state: RequestRecord, final: Exclude<FailoverFinal, { kind: 'committed' }>): void {
  if (final.kind === 'provider_error') {
    state.status = final.status;
    state.errorCode = 'provider_error';
  } else if (final.kind === 'gateway_error' || final.kind === 'drained') {
    state.status = final.error.status;
    state.errorCode = final.error.code;
  } else {
    state.status = 499;
    state.errorCode = 'client_aborted';
  }
}

/** How a request that reached its attempts ended (src/observe/request-end.ts). */
export function requestEnd(final: FailoverFinal): RequestEnd {
  switch (final.kind) {
    case 'committed':
      return committedEnd(final.outcome.broken);
    case 'client_aborted':
      return 'client_abort';
    case 'provider_error':
    case 'gateway_error':
      return 'failed';
    case 'drained':
      return 'drained';
  }
}

function committedEnd(broken: FailureReason | null): RequestEnd {
  if (broken === null) return 'completed';
  switch (broken) {
    case 'client_aborted':
      return 'client_abort';
    case 'timeout':
      return 'idle_timeout';
    case 'write_stall':
      return 'write_stall';
    case 'drained':
      return 'drained';
    case 'reset':
    case 'malformed':
    case 'inband_error':
    case 'empty':
    case 'too_large':
    case 'connect':
    case 'credential':
    case 'not_sent':
      return 'upstream_cut';
  }
}
