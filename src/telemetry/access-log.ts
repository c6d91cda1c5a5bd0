// The access log: one JSON line per finished inference request, for log shippers (stdout by
// default). What it holds is the request-log row's non-secret facts — request id, trace id, who
// called (workspace, key id: never the key), which model was asked for and which one served, the
// provider, attempts, status, error code, how the request ended, latency, time to first byte,
// tokens and cost — never a key, a credential, a header value, a prompt or an answer. The model
// string a client sent is cut to a bounded length.
import { nanoToDecimal } from '../money.ts';
import { IGNORED_ATTEMPT, type RequestObserver, type RequestSummary, type RequestWatch } from '../observe/observer.ts';
import { requestTraceId } from '../observe/trace-context.ts';
import type { IncomingRequest } from '../http/request.ts';
import type { LineSink } from './line-sink.ts';

/** Longest `model_requested` written (the client's string; the request log keeps it whole). */
export const MAX_MODEL_CHARS = 200;

export interface AccessLogOptions {
  /** Traces are exported: each line carries the W3C trace id of the request's span. */
  traces: boolean;
}

export function accessLogObserver(sink: LineSink, opts: AccessLogOptions): RequestObserver {
  // Without traces the watch keeps nothing per request and is shared.
  const shared: RequestWatch = {
    read: () => undefined,
    attempt: () => IGNORED_ATTEMPT,
    end: (s) => sink.write(accessLine(s, null)),
  };
  return {
    begin(_endpoint: string, traceId: string, req: IncomingRequest): RequestWatch {
      if (!opts.traces) return shared;
      // The header is read now: `req` is only valid during begin().
      const otelTraceId = requestTraceId(req.headers.traceparent, traceId);
      return { read: shared.read, attempt: shared.attempt, end: (s) => sink.write(accessLine(s, otelTraceId)) };
    },
  };
}

/** The JSON line of one request (fixed key order; no newline). */
export function accessLine(s: RequestSummary, otelTraceId: string | null): string {
  const r = s.row;
  const model = r.model_requested;
  return JSON.stringify({
    ts: new Date(r.ts).toISOString(),
    trace_id: r.trace_id,
    ...(otelTraceId ? { otel_trace_id: otelTraceId } : {}),
    workspace: r.workspace,
    key_id: r.key_id,
    endpoint: r.endpoint,
    model_requested: model !== null && model.length > MAX_MODEL_CHARS ? model.slice(0, MAX_MODEL_CHARS) : model,
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
  });
}
