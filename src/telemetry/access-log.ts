// The access log: one JSON line per finished inference request, for log shippers (stdout by
// default), shaped like every log line the gateway writes — `time`, `level`, `event` ("request")
// first. What it holds is where the request came from (the client's address — the peer's, or the
// X-Forwarded-For client when the peer is a trusted proxy —, method, path, user agent) and the
// request-log row's non-secret facts — request id, trace id, who called (workspace, key id: never
// the key), which model was asked for and which one served, the provider, attempts, status, error
// code, how the request ended, latency, time to first byte, body bytes each way, tokens and cost —
// never a key, a credential, another header's value, a prompt or an answer. The model string and the
// user agent a client sent are cut to a bounded length.
import { headerText } from '../http/header-text.ts';
import type { IncomingRequest } from '../http/request.ts';
import { nanoToDecimal } from '../money.ts';
import { IGNORED_ATTEMPT, type RequestObserver, type RequestSummary, type RequestWatch } from '../observe/observer.ts';
import type { RequestEnd } from '../observe/request-end.ts';
import { requestTraceId } from '../observe/trace-context.ts';
import { clientAddress, TrustedProxies } from './client-address.ts';
import type { LineSink } from './line-sink.ts';

/** Longest `model_requested` written (the client's string; the request log keeps up to 256 characters of it). */
export const MAX_MODEL_CHARS = 200;
/** Longest `user_agent` and `path` written. */
export const MAX_HEADER_CHARS = 512;

export interface AccessLogOptions {
  /** Traces are exported: each line carries the W3C trace id of the request's span. */
  traces: boolean;
  /** Peers whose X-Forwarded-For names the client (none: the header is never read). */
  trustedProxies?: TrustedProxies;
}

/** Where a request came from, read when it begins (`req` is only valid then). */
export interface RequestOrigin {
  client: string;
  method: string;
  path: string;
  userAgent: string | null;
  /** The W3C trace id of the request's span, when traces are on. */
  otelTraceId: string | null;
}

const NO_PROXIES = new TrustedProxies([]);

export function accessLogObserver(sink: LineSink, opts: AccessLogOptions): RequestObserver {
  const trusted = opts.trustedProxies ?? NO_PROXIES;
  return {
    begin(_endpoint: string, traceId: string, req: IncomingRequest): RequestWatch {
      const origin: RequestOrigin = {
        client: clientAddress(req.remoteAddress, req.headers['x-forwarded-for'], trusted),
        method: req.method,
        path: cut(req.path, MAX_HEADER_CHARS),
        userAgent: cut(headerText(req.headers['user-agent']) ?? null, MAX_HEADER_CHARS),
        otelTraceId: opts.traces ? requestTraceId(req.headers.traceparent, traceId) : null,
      };
      return { read: () => undefined, attempt: () => IGNORED_ATTEMPT, end: (s) => sink.write(accessLine(s, origin)) };
    },
  };
}

/** Ends of an answer the gateway or the provider cut (the client leaving is the client's). */
const CUT_ENDS: ReadonlySet<RequestEnd> = new Set<RequestEnd>([
  'upstream_cut',
  'idle_timeout',
  'write_stall',
  'drained',
]);

/** `error` when the gateway or the provider failed the request (a 5xx, a cut answer), else `info`:
 *  a client's own 4xx is the client's (the same rule as a trace's server span). */
export function accessLevel(status: number, ended: RequestEnd | null): 'info' | 'error' {
  return status >= 500 || (ended !== null && CUT_ENDS.has(ended)) ? 'error' : 'info';
}

function cut<T extends string | null>(s: T, max: number): T {
  return (s !== null && s.length > max ? s.slice(0, max) : s) as T;
}

/** The JSON line of one request (fixed key order; no newline). Written out by hand: JSON.stringify
 *  of the same object, and Date#toISOString, cost about twice as much per request. */
export function accessLine(s: RequestSummary, o: RequestOrigin): string {
  const r = s.row;
  const model = r.model_requested;
  return (
    `{"time":"${isoTime(r.ts)}","level":"${accessLevel(r.status, r.ended)}","event":"request","trace_id":${str(r.trace_id)}` +
    (o.otelTraceId ? `,"otel_trace_id":${str(o.otelTraceId)}` : '') +
    `,"client_address":${str(o.client)},"method":${str(o.method)},"path":${str(o.path)},"user_agent":${str(o.userAgent)}` +
    `,"workspace":${str(r.workspace)},"key_id":${str(r.key_id)},"endpoint":${str(r.endpoint)}` +
    `,"model_requested":${str(cut(model, MAX_MODEL_CHARS))}` +
    `,"model_served":${str(r.model_served)},"provider":${str(r.provider)},"deployment":${str(r.deployment)}` +
    `,"attempts":${r.attempts},"stream":${r.stream},"status":${r.status},"error_code":${str(r.error_code)},"ended":${str(r.ended)}` +
    `,"latency_ms":${num(r.latency_ms)},"ttfb_ms":${num(r.ttfb_ms)},"request_bytes":${s.requestBytes},"response_bytes":${s.responseBytes}` +
    `,"prompt_tokens":${num(r.prompt_tokens)},"completion_tokens":${num(r.completion_tokens)}` +
    `,"reasoning_tokens":${num(r.reasoning_tokens)},"cached_tokens":${num(r.cached_tokens)}` +
    `,"cost_usd":${r.cost_nano === null ? 'null' : `"${usd(r.cost_nano)}"`}}`
  );
}

/** Characters JSON.stringify would escape (quote, backslash, controls, lone surrogate halves). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what JSON must escape.
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
