// Response status lines and the provider headers each wire family sends (request id, processing
// time, organization), with scripted extra headers applied on top.
import { STATUS_CODES } from 'node:http';

export type Family = 'openai' | 'anthropic';
export type HeaderList = [string, string][];

const EXTRA_STATUS: Record<number, string> = { 529: 'Overloaded' };
const lines = new Map<number, string>();

/** "429 Too Many Requests" for uWS writeStatus. */
export function statusLine(status: number): string {
  let line = lines.get(status);
  if (!line) {
    line = `${status} ${STATUS_CODES[status] ?? EXTRA_STATUS[status] ?? 'Unknown'}`;
    lines.set(status, line);
  }
  return line;
}

export const JSON_TYPE = 'application/json';
export const SSE_TYPE = 'text/event-stream; charset=utf-8';

/** The headers a provider of `family` sends with a response (success or error). */
export function providerHeaders(
  family: Family,
  contentType: string,
  requestId: string | null,
  processingMs: number,
  organizationId: string,
): HeaderList {
  const h: HeaderList = [['content-type', contentType]];
  if (family === 'openai') {
    if (requestId !== null) h.push(['x-request-id', requestId]);
    h.push(['openai-processing-ms', String(Math.max(0, Math.round(processingMs)))], ['openai-version', '2020-10-01']);
  } else {
    if (contentType === SSE_TYPE) h.push(['cache-control', 'no-cache']);
    if (requestId !== null) h.push(['request-id', requestId]);
    h.push(['anthropic-organization-id', organizationId]);
  }
  return h;
}

/** Headers uWS writes itself (framing); a scripted value for them would corrupt the response. */
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection']);

/** Adds scripted headers; one with the name of a default header replaces it. */
export function withExtraHeaders(list: HeaderList, extra: Record<string, string> | undefined): HeaderList {
  if (!extra) return list;
  for (const [name, value] of Object.entries(extra)) {
    const k = name.toLowerCase();
    if (FRAMING.has(k)) continue;
    const i = list.findIndex(([n]) => n === k);
    if (i >= 0) list[i] = [k, value];
    else list.push([k, value]);
  }
  return list;
}
