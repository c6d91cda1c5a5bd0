// Small request helpers of the console's admin endpoints: their error (a status and a sentence),
// query-string fields, JSON bodies and the times operators type (ISO dates, date-times or epoch ms).
import type { HeaderList, Reply } from '../http/reply.ts';
import type { IncomingRequest } from '../http/request.ts';
import { containsWholeKey, isWellFormedKey, KEY_PREFIX, maskWholeKeys } from '../store/key-format.ts';
import { firstDuplicateKey } from './duplicate-keys.ts';

/** An admin endpoint's refusal: answered as `{"error": {"code", "message"}}` with its status. */
export class ConsoleError extends Error {
  readonly status: number;
  readonly code: string;
  /** Seconds to wait before trying again (429), sent as Retry-After. */
  readonly retryAfterS: number | null;
  /** Headers the answer carries besides (a 405's Allow). */
  readonly headers: HeaderList;
  constructor(
    status: number,
    code: string,
    message: string,
    retryAfterS: number | null = null,
    headers: HeaderList = [],
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfterS = retryAfterS;
    this.headers = headers;
    this.name = 'ConsoleError';
  }
}

export const badRequest = (message: string): ConsoleError => new ConsoleError(400, 'invalid_request', message);
export const notFound = (message: string): ConsoleError => new ConsoleError(404, 'not_found', message);

/** Admin answers are never cached: they carry balances, keys being created, live state. */
export const NO_STORE: [string, string] = ['Cache-Control', 'no-store'];

export function sendJson(reply: Reply, status: number, value: unknown, headers: HeaderList = []): void {
  reply.sendJson(status, value, [NO_STORE, ...headers]);
}

export function sendError(reply: Reply, err: ConsoleError): void {
  sendJson(
    reply,
    err.status,
    { error: { code: err.code, message: err.message } },
    err.retryAfterS === null ? err.headers : [...err.headers, ['Retry-After', String(err.retryAfterS)]],
  );
}

/** The query string's fields; an empty value counts as absent. A field given twice is a 400:
 *  which one counts would be a guess (the console never repeats one). */
export function queryOf(req: IncomingRequest): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of new URLSearchParams(req.query)) {
    if (v === '') continue;
    if (out.has(k)) throw badRequest(`${JSON.stringify(k.slice(0, 100))} is given twice in the query; give it once`);
    out.set(k, v);
  }
  return out;
}

/** A whole API key where a name, an id or a prefix belongs: a secret, now in a URL or a body. */
export function refuseWholeKey(v: string, instead: string): void {
  if (isWellFormedKey(v.trim()))
    throw new ConsoleError(400, 'whole_key', `that is a whole API key, a secret: ${instead}`);
}

/** How many characters of a key are its non-secret prefix, as the console shows it. */
export const SHOWN_PREFIX_CHARS = KEY_PREFIX.length + 8;

/**
 * A path segment's text (a trace id, a workspace, a key id). One that is not percent-encoded UTF-8
 * (a lone `%`, a cut-off sequence, a lone surrogate) is the client's mistake: 400, not a URIError.
 * A whole API key is refused (400 `whole_key`) and never echoed: the answer and the audit trail
 * would keep the secret.
 */
export function pathSegment(raw: string): string {
  let v: string;
  try {
    v = decodeURIComponent(raw);
  } catch {
    throw badRequest(`the path segment "${raw}" is not percent-encoded UTF-8`);
  }
  refuseWholeKey(v, `a path names a key by its id, never by the key itself`);
  return v;
}

/** A path segment as the audit trail keeps it: decoded when it decodes, else as sent; a whole key
 *  only by its non-secret prefix. */
export function auditedSegment(raw: string): string {
  let v = raw;
  try {
    v = decodeURIComponent(raw);
  } catch {
    // Kept as sent: the refusal's entry says what arrived.
  }
  return maskWholeKeys(v, SHOWN_PREFIX_CHARS);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A JSON object body, or a 400 naming what is wrong. */
export function jsonBody(req: IncomingRequest): Record<string, unknown> {
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\b/i.test(type))
    throw new ConsoleError(415, 'unsupported_media_type', 'send the body as application/json');
  let text: string;
  try {
    text = UTF8.decode(req.body);
  } catch {
    // Decoding leniently would keep U+FFFD in place of the client's bytes, unnoticed.
    throw badRequest('the body is not UTF-8');
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw badRequest('the body is not valid JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw badRequest('the body must be a JSON object');
  const twice = firstDuplicateKey(text);
  if (twice !== null) throw badRequest(`the body gives ${JSON.stringify(twice.slice(0, 100))} twice; give it once`);
  return v as Record<string, unknown>;
}

/** A NUL or a lone surrogate: text the stores do not keep as sent (PostgreSQL refuses or replaces
 *  it, UTF-8 has no encoding for a lone surrogate, the embedded store keeps a NUL), so the answer,
 *  the row and the other store would each say something else. */
const UNKEEPABLE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A string field of a body: absent or null → undefined; anything else but a string, or a string
 *  no store keeps as sent → 400. A whole API key anywhere in it (pasted into a credit's note or a
 *  key's name) → 400 `whole_key`: the ledger, the key list and the audit trail would keep the secret
 *  for every viewer. */
export function stringField(body: Record<string, unknown>, name: string): string | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw badRequest(`${name} must be a string`);
  if (UNKEEPABLE.test(v)) throw badRequest(`${name} holds a NUL or a lone surrogate, which no store keeps`);
  if (containsWholeKey(v))
    throw new ConsoleError(
      400,
      'whole_key',
      `${name} holds a whole API key, a secret: name a key by its prefix (its first ${SHOWN_PREFIX_CHARS} characters), its name or its id`,
    );
  return v;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?$/;

/**
 * Epoch ms of an operator's time: epoch milliseconds, an ISO date (00:00 UTC) or an ISO date-time
 * (UTC when it has no offset). A date not on the calendar (2026-02-30) is refused.
 */
export function parseTime(name: string, v: string): number {
  if (/^\d{1,15}$/.test(v)) return Number(v);
  const d = DATE.exec(v);
  let ms: number;
  if (d) {
    ms = Date.UTC(Number(d[1]), Number(d[2]) - 1, Number(d[3]));
    if (new Date(ms).toISOString().slice(0, 10) !== v)
      throw badRequest(`${name} is not a date on the calendar: "${v}"`);
    return ms;
  }
  if (!DATE_TIME.test(v))
    throw badRequest(`${name} must be an ISO date, an ISO date-time or epoch milliseconds, got "${v}"`);
  ms = Date.parse(/(Z|[+-]\d{2}:\d{2})$/.test(v) ? v : `${v}Z`);
  const day = v.slice(0, 10);
  if (
    !Number.isFinite(ms) ||
    new Date(Date.UTC(Number(day.slice(0, 4)), Number(day.slice(5, 7)) - 1, Number(day.slice(8, 10))))
      .toISOString()
      .slice(0, 10) !== day
  ) {
    throw badRequest(`${name} is not a time on the calendar: "${v}"`);
  }
  return ms;
}

/** A positive integer query field within [1, max], or the default. */
export function intField(q: Map<string, string>, name: string, dflt: number, max: number): number {
  const v = q.get(name);
  if (v === undefined) return dflt;
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > max)
    throw badRequest(`${name} must be a whole number from 1 to ${max}, got "${v}"`);
  return Number(v);
}

export const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
