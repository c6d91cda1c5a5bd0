// Requests uWS parses but no proxy should act on. uWS itself answers (its own 400/505, then closes)
// most malformed heads: control bytes, bare LF, obs-fold, a header without a colon, Transfer-Encoding
// with Content-Length, an invalid Content-Length, two Host headers, HTTP/1.0, absolute-form targets.
// What it lets through, and the gateway refuses here before any route runs (400 invalid_request,
// then the connection is closed: its framing is not to be trusted for a next request):
// - a Transfer-Encoding other than `chunked`: uWS reads any coding as chunked, and RFC 9112 6.1
//   says a request whose final coding is not chunked has no reliable length;
// - more than one Content-Length header: uWS takes one of them, another server might take the
//   other (request smuggling between a proxy in front and the gateway);
// - a method that is not upper-case: uWS routes `get` as GET, though method names are case-sensitive.
import type { IncomingRequest } from '../http/request.ts';

/** Why the request's framing is refused, or null. `method` is the method as sent. */
export function framingProblem(req: IncomingRequest, method: string): string | null {
  const te = req.headers['transfer-encoding'];
  if (te !== undefined && te.trim().toLowerCase() !== 'chunked')
    return `unsupported Transfer-Encoding ${printable(te)} (only chunked is accepted)`;
  // uWS refuses a comma inside one Content-Length, so a comma is the server joining repeated ones.
  if (req.headers['content-length']?.includes(',')) return 'more than one Content-Length header';
  if (!/^[A-Z]+$/.test(method)) return `unknown method ${printable(method)} (method names are case-sensitive)`;
  return null;
}

/** At most 40 characters, control bytes and non-ASCII shown as escapes: the value is echoed. */
function printable(raw: string): string {
  const cut = raw.length > 40 ? `${raw.slice(0, 40)}…` : raw;
  return cut.replace(/[^\x20-\x7e…]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
