// What a handler writes its answer to. `src/server/` implements it on uWebSockets.js; handlers and
// everything they call stay free of the transport, and tests can drive handlers through a real server only.
import type { GatewayError } from '../errors.ts';

/** Response headers as ordered name/value pairs (names as they should appear on the wire). */
export type HeaderList = [string, string][];

export interface Reply {
  /** The request id minted for this request; sent as `X-Pi-Trace-Id` on every response. */
  readonly traceId: string;
  /** The client went away before the response ended. */
  readonly aborted: boolean;
  /** The status and headers have been written (a stream started or a response was sent). */
  readonly started: boolean;
  /** The response is over (sent, ended, closed or aborted); nothing may be written any more. */
  readonly done: boolean;
  /** Body bytes of the response handed to the connection so far (no headers, no chunk framing). */
  readonly bytesSent: number;

  /** Called once if the client disconnects before the response ends. */
  onAborted(cb: () => void): void;

  /** Send a whole response. The gateway's own headers (trace id, CORS, security) are always added. */
  send(status: number, headers: HeaderList, body?: string | Uint8Array): void;
  sendJson(status: number, value: unknown, headers?: HeaderList): void;
  /** A gateway-raised error: the error object plus the gateway headers and the error's own headers only. */
  sendError(err: GatewayError): void;

  /** Start a streamed response (chunked, no Content-Length). */
  startStream(status: number, headers: HeaderList): void;
  /** Write stream bytes. Returns false when the client is not keeping up: stop and wait for `onWritable`. */
  write(chunk: string | Uint8Array): boolean;
  /** Called once when the client can take more after `write` returned false. */
  onWritable(cb: () => void): void;
  /** End a started stream. */
  end(): void;
  /** Drop the connection without a clean end. */
  close(): void;
  /** Group several writes into one send. */
  cork(fn: () => void): void;
}
