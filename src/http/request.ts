// What a handler reads: one HTTP request, copied off the transport. `src/server/` fills it from
// uWebSockets.js; handlers, protocol modules and everything below them see only this shape.
import type { Readable } from 'node:stream';
import type { Reply } from './reply.ts';

export interface IncomingRequest {
  /** Uppercase method. */
  method: string;
  /** URL path without the query string, as sent (not decoded). */
  path: string;
  query: string;
  /** Lowercase header names; values are the raw bytes, one character per byte (headerText decodes
   *  text); repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** Route parameters in pattern order, as sent (not decoded). */
  params: string[];
  /** The whole body for routes whose body is buffered; empty otherwise. */
  body: Buffer;
  /** The body as a backpressured stream for routes whose body is streamed; null otherwise. */
  bodyStream: Readable | null;
  /** Time the request arrived (performance.now() milliseconds) for latency accounting. */
  startedAt: number;
  /** The connection's peer address as text (an IPv4 peer of a dual-stack socket as `::ffff:a.b.c.d`). */
  remoteAddress: string;
  /** Body bytes received so far: the whole body's length once read, or what its stream delivered. */
  bodyBytes: number;
}

/** How a route wants its request body: not read, read whole (capped), or streamed (capped). */
export type BodyDelivery = 'none' | 'buffer' | 'stream';

/** A route's handler: answers on `reply`; a thrown or rejected GatewayError becomes its error object. */
export type Handler = (req: IncomingRequest, reply: Reply) => void | Promise<void>;
