// The W3C trace id a request's spans carry, decided without the tracing SDK: the client's, when its
// `traceparent` is valid (the request continues the client's trace), else the gateway's own request
// id (X-Pi-Trace-Id, a UUIDv7) without its dashes — so a trace started here is found in the tracing
// backend by the id the client was given. The tracer (src/telemetry/tracing.ts) uses the same rule;
// the access log uses it to print the trace id beside the request id.

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** The trace id of a valid W3C `traceparent` header (version 00 exactly, later versions by their
 *  first four fields), or null. */
export function traceIdOfTraceparent(header: string | undefined): string | null {
  if (header === undefined) return null;
  const m = TRACEPARENT.exec(header.trim());
  if (!m) return null;
  const [, version, traceId, spanId, , rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return traceId as string;
}

/** The trace id of the gateway's request id (UUID: 32 hex digits once the dashes go). */
export function traceIdOfRequestId(requestId: string): string {
  return requestId.replaceAll('-', '').toLowerCase();
}

/** The trace id a request's span gets: the client's trace, else one named after the request id. */
export function requestTraceId(traceparent: string | undefined, requestId: string): string {
  return traceIdOfTraceparent(traceparent) ?? traceIdOfRequestId(requestId);
}
