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

/** The JSON line of one request (fixed key order; no newline). Written out by hand: JSON.stringify
 *  of the same object, and Date#toISOString, cost about twice as much per request. */
export function accessLine(s: RequestSummary, otelTraceId: string | null): string {
  const r = s.row;
  const model = r.model_requested;
  return (
    `{"ts":"${isoTime(r.ts)}","trace_id":${str(r.trace_id)}` +
    (otelTraceId ? `,"otel_trace_id":${str(otelTraceId)}` : '') +
    `,"workspace":${str(r.workspace)},"key_id":${str(r.key_id)},"endpoint":${str(r.endpoint)}` +
    `,"model_requested":${str(model !== null && model.length > MAX_MODEL_CHARS ? model.slice(0, MAX_MODEL_CHARS) : model)}` +
    `,"model_served":${str(r.model_served)},"provider":${str(r.provider)},"deployment":${str(r.deployment)}` +
    `,"attempts":${r.attempts},"stream":${r.stream},"status":${r.status},"error_code":${str(r.error_code)},"ended":${str(r.ended)}` +
    `,"latency_ms":${num(r.latency_ms)},"ttfb_ms":${num(r.ttfb_ms)}` +
    `,"prompt_tokens":${num(r.prompt_tokens)},"completion_tokens":${num(r.completion_tokens)}` +
    `,"reasoning_tokens":${num(r.reasoning_tokens)},"cached_tokens":${num(r.cached_tokens)}` +
    `,"cost_usd":${r.cost_nano === null ? 'null' : `"${usd(r.cost_nano)}"`}}`
  );
}

/** Characters JSON.stringify would escape (quote, backslash, controls, lone surrogate halves). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

function str(v: string | null): string {
  if (v === null) return 'null';
  // Ids, slugs and codes need no escaping: skip JSON.stringify's scan-and-copy for them.
  return NEEDS_ESCAPE.test(v) ? JSON.stringify(v) : `"${v}"`;
}

/** nanoToDecimal with a number fast path (every realistic cost is far below 2^53 nano-USD). */
function usd(nano: bigint): string {
  if (nano < 0n || nano > 9_007_199_254_740_991n) return nanoToDecimal(nano);
  const n = Number(nano);
  const whole = Math.floor(n / 1e9);
  const frac = n - whole * 1e9;
  if (frac === 0) return String(whole);
  let digits = String(frac).padStart(9, '0');
  let end = digits.length;
  while (digits.charCodeAt(end - 1) === 48) end--;
  digits = digits.slice(0, end);
  return `${whole}.${digits}`;
}

function num(v: number | null): string {
  return v === null ? 'null' : String(v);
}

/** ISO 8601 UTC with milliseconds; the part up to the second is formatted once per second. */
let isoSecond = NaN;
let isoPrefix = '';
function isoTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 19);
  }
  const frac = ms - second * 1000;
  return `${isoPrefix}.${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}Z`;
}
