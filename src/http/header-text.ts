// Header-text rules (spec: Optional request headers): raw header bytes decoded to text, and the
// attribution headers X-Title, HTTP-Referer / Referer and X-Pi-Session-Id reduced to what is safe to
// record, forward and route on. Transport-free: the server, the handlers and the proxy all use them.
import { isUtf8 } from 'node:buffer';

const TITLE_MAX = 128;
/** Spec Limits: a longer `X-Pi-Session-Id` counts as absent. */
export const MAX_SESSION_ID_LENGTH = 256;
/** Longer Referer values are not URLs a browser would send; refusing them bounds the parse. */
const REFERER_MAX = 4096;

/**
 * Control and invisible characters: Cc, Cf (zero-width, bidi controls, BOM, soft hyphen, tag
 * characters…), line/paragraph separators, surrogates, and the remaining default-ignorable code
 * points (Hangul fillers, combining grapheme joiner…). Variation selectors stay: they only pick an
 * emoji's presentation and are meaningless alone.
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]|(?![\uFE00-\uFE0F\u{E0100}-\u{E01EF}])\p{Default_Ignorable_Code_Point}/gu;

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

/** The session id a header value carries, or null when absent, empty or longer than 256 characters. */
export function sessionIdFrom(header: string | null | undefined): string | null {
  if (header === null || header === undefined || header.length === 0) return null;
  // Counted in characters (code points), the spec's unit, not UTF-16 code units.
  let n = 0;
  for (const _ of header) if (++n > MAX_SESSION_ID_LENGTH) return null;
  return header;
}
