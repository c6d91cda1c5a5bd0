// Header-text rules (docs/api.md: Optional request headers): which bytes a header value may carry on to a
// provider, raw header bytes decoded to text, and the attribution headers X-Title, HTTP-Referer /
// Referer and X-Pi-Session-Id reduced to what is safe to record, forward and route on.
// Transport-free: the server, the handlers and the proxy all use them.
import { isUtf8 } from 'node:buffer';

/**
 * The client headers the gateway may send on to a provider: the attribution headers (forwarded as
 * sent), Anthropic's version and beta headers (forwarded by the platform adapters) and the content
 * type of an upload (its multipart boundary). Lower-case names, with the spelling error messages use.
 */
export const FORWARDABLE_CLIENT_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['x-title', 'X-Title'],
  ['http-referer', 'HTTP-Referer'],
  ['x-pi-session-id', 'X-Pi-Session-Id'],
  ['anthropic-version', 'Anthropic-Version'],
  ['anthropic-beta', 'Anthropic-Beta'],
  ['content-type', 'Content-Type'],
];

/**
 * A byte no HTTP field value may carry (RFC 9110 5.5: field-vchar, SP and HTAB; obs-text 0x80-0xFF
 * allowed), which is exactly what undici refuses to send (`invalid <name> header`): NUL, CR, LF, the
 * other C0 controls and DEL. Values are byte strings, one character per byte, so a character above
 * 0xFF (text that was never bytes) is refused too.
 */
const NOT_FIELD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/** Whether a header value (one character per byte) can be sent on as it is. */
export function isFieldValue(raw: string): boolean {
  return !NOT_FIELD_VALUE.test(raw);
}

/**
 * Why one of the headers the gateway would forward cannot be sent on (the client's error, said before
 * anything is routed: a provider must never be blamed for bytes it was never sent), or null.
 */
export function unforwardableHeader(headers: Readonly<Record<string, string>>): string | null {
  for (const [name, shown] of FORWARDABLE_CLIENT_HEADERS) {
    const value = headers[name];
    if (value === undefined) continue;
    const bad = NOT_FIELD_VALUE.exec(value);
    if (bad === null) continue;
    const code = bad[0].charCodeAt(0);
    const what =
      code > 0xff
        ? `the character U+${code.toString(16).toUpperCase().padStart(4, '0')}`
        : `the control byte 0x${code.toString(16).toUpperCase().padStart(2, '0')}`;
    return `the ${shown} header contains ${what}, which an HTTP header value may not carry`;
  }
  return null;
}

const TITLE_MAX = 128;
/** docs/api.md, Limits: a longer `X-Pi-Session-Id` counts as absent. */
export const MAX_SESSION_ID_LENGTH = 256;
/** Longer Referer values are not URLs a browser would send; refusing them bounds the parse. */
const REFERER_MAX = 4096;

/**
 * Control and invisible characters: Cc, Cf (zero-width, bidi controls, BOM, soft hyphen, tag
 * characters…), line/paragraph separators, surrogates, and the remaining default-ignorable code
 * points (Hangul fillers, combining grapheme joiner…). Variation selectors stay: they only pick an
 * emoji's presentation and are meaningless alone.
 */
const INVISIBLE =
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]|(?![\uFE00-\uFE0F\u{E0100}-\u{E01EF}])\p{Default_Ignorable_Code_Point}/gu;

/**
 * Header values arrive as raw bytes, one character per byte (see IncomingRequest.headers). Text
 * headers (X-Title, referers, session ids) are UTF-8 on the wire; bytes that are not valid UTF-8 are
 * read as Latin-1, the way HTTP historically defined header text.
 */
export function headerText(raw: string | undefined): string | undefined {
  if (raw === undefined || !/[\u0080-\u00ff]/.test(raw)) return raw;
  const bytes = Buffer.from(raw, 'latin1');
  return isUtf8(bytes) ? bytes.toString('utf8') : raw;
}

/** X-Title: invisible characters removed, trimmed, at most 128 code points; empty → null. */
export function sanitizeTitle(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  const cleaned = raw.replace(INVISIBLE, '').trim();
  // Array.from splits by code point, so a surrogate pair is never cut in half.
  const cut = Array.from(cleaned).slice(0, TITLE_MAX).join('').trim();
  return cut === '' ? null : cut;
}

/**
 * The app origin: HTTP-Referer, or the standard Referer when HTTP-Referer is absent or empty.
 * A present but non-qualifying HTTP-Referer is not replaced by Referer: it is simply not recorded.
 * Only http/https URLs qualify; the result is `scheme://host[:port]` as URL.origin gives it.
 */
export function originOf(httpReferer?: string, referer?: string): string | null {
  const primary = httpReferer?.trim();
  const raw = primary !== undefined && primary !== '' ? primary : referer?.trim();
  if (raw === undefined || raw === '' || raw.length > REFERER_MAX) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') return null;
  return url.origin;
}

/** The session id a header value carries, or null when absent, empty, longer than 256 characters, or
 *  carrying a byte no header value may (it could not be forwarded, nor routed on). */
export function sessionIdFrom(header: string | null | undefined): string | null {
  if (header === null || header === undefined || header.length === 0) return null;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control bytes (tab allowed) are what is refused.
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(header)) return null;
  // Counted in characters (code points), the API's unit, not UTF-16 code units.
  let n = 0;
  for (const _ of header) if (++n > MAX_SESSION_ID_LENGTH) return null;
  return header;
}
