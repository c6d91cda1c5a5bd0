// Dispatch on the upstream's head: status, content type and content encoding decide which phase reads
// the rest (a stream relay, a JSON answer, an error body), or that the answer is refused outright.
// Also the headers a provider's answer goes out with (identity, upstream model and request id, the
// provider headers the API lets through).
import type { HeaderList } from '../http/reply.ts';
import type { AnswerDecoding } from '../platforms/types.ts';
import { forwardedHeaders, upstreamRequestId } from '../upstream/response-headers.ts';

export type HeadRoute =
  /** 2xx text/event-stream, not compressed: relayed event by event after the commit point. */
  | { kind: 'stream' }
  /** 2xx in the platform's own stream format (Bedrock's event stream), not compressed: decoded to
   *  SSE events by the adapter's decoder, then relayed like a stream. */
  | { kind: 'decoded'; decoding: AnswerDecoding }
  /** Any other 2xx: a whole JSON answer. */
  | { kind: 'json' }
  /** Non-2xx: an error body, kept (up to a cap) for the failover loop to pass on or retry. */
  | { kind: 'error' }
  /** An answer the relay cannot read (a compressed event stream): fails as malformed. */
  | { kind: 'refused'; detail: string };

function isEventStream(contentType: string | undefined): boolean {
  return contentType?.toLowerCase().startsWith('text/event-stream') === true;
}

/** The media type of a Content-Type value: lowercase, parameters dropped. */
function mediaType(contentType: string | undefined): string {
  if (contentType === undefined) return '';
  const semi = contentType.indexOf(';');
  return (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

export function routeHead(
  status: number,
  headers: Record<string, string>,
  decoding: AnswerDecoding | null = null,
): HeadRoute {
  if (status < 200 || status >= 300) return { kind: 'error' };
  const decoded = decoding !== null && mediaType(headers['content-type']) === decoding.streamType;
  if (!decoded && !isEventStream(headers['content-type'])) return { kind: 'json' };
  const encoding = headers['content-encoding'];
  if (encoding && encoding !== 'identity')
    return { kind: 'refused', detail: `compressed event streams (${encoding}) are not supported` };
  return decoded ? { kind: 'decoded', decoding } : { kind: 'stream' };
}

/** The provider's head as the phases need it to answer the client. */
export interface AnswerHead {
  status: number;
  /** The upstream's headers, names lower-cased. */
  headers: Record<string, string>;
  /** X-Pi-Provider and X-Pi-Model for this attempt. */
  identity: HeaderList;
}

/** Headers for the client: identity, X-Pi-Upstream-Model / -Request-Id, then the forwarded provider
 *  headers (Content-Encoding only when the body goes out as the provider sent it). */
export function providerHeaders(head: AnswerHead, upstreamModel: string | null, keepEncoding: boolean): HeaderList {
  const h: HeaderList = [...head.identity];
  if (upstreamModel) h.push(['X-Pi-Upstream-Model', upstreamModel]);
  const rid = upstreamRequestId(head.headers);
  if (rid) h.push(['X-Pi-Upstream-Request-Id', rid]);
  h.push(...forwardedHeaders(head.headers, { keepEncoding }));
  return h;
}
