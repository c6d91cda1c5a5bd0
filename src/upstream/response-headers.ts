// Which provider response headers reach the client (docs/api.md: Response headers rule 3): exactly five.
// Content-Length is not copied as-is: the gateway sends its own length for the (rewritten) body.
import type { HeaderList } from '../http/reply.ts';

const FORWARDED: ReadonlyArray<[string, string]> = [
  ['content-type', 'Content-Type'],
  ['content-encoding', 'Content-Encoding'],
  ['cache-control', 'Cache-Control'],
  ['retry-after', 'Retry-After'],
];

/** The forwardable provider headers (Content-Length excluded: the body length is recomputed). */
export function forwardedHeaders(upstream: Record<string, string>, opts: { keepEncoding: boolean }): HeaderList {
  const out: HeaderList = [];
  for (const [lower, name] of FORWARDED) {
    if (lower === 'content-encoding' && !opts.keepEncoding) continue;
    const v = upstream[lower];
    if (v !== undefined && v !== '') out.push([name, v]);
  }
  return out;
}

/** The provider's request id, from whichever header its wire uses. */
export function upstreamRequestId(upstream: Record<string, string>): string | null {
  return (
    upstream['x-request-id'] ||
    upstream['request-id'] ||
    upstream['apim-request-id'] ||
    upstream['x-amzn-requestid'] ||
    null
  );
}
