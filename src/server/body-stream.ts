// A request body as a backpressured Readable over a BodyReader: uWS is paused while the consumer's
// buffer is full and resumed when it reads. The stream ends in one of five ways: the whole body
// (end), the client leaving (error), the body passing the cap (request_too_large, and the 413 when
// nothing was answered yet), compressed bytes that do not decode (invalid_request, and the 400 when
// nothing was answered yet), or the answer going out before the body was read (error: whoever still
// reads it stops; the rest is dropped, or the connection closed after the answer when that rest
// is unbounded). With a Content-Encoding the stream carries the decoded body, the cap bounding it.
import { Readable } from 'node:stream';
import type { HttpResponse } from 'uWebSockets.js';
import { GatewayError } from '../errors.ts';
import { BodyReader } from './read-body.ts';
import { BodyDecoder, type RequestCoding } from './request-coding.ts';
import type { UwsReply } from './uws-reply.ts';

/** What the server buffers for the consumer before it pauses the socket. */
const BUFFERED_BYTES = 256 * 1024;

export function streamBody(
  res: HttpResponse,
  reply: UwsReply,
  cap: number,
  declaredLength: number | null,
  tooLarge: () => void,
  counted: { bodyBytes: number },
  coding: RequestCoding | null = null,
): Readable {
  const stream = new Readable({ highWaterMark: BUFFERED_BYTES, read: () => source.resume() });
  // Errors reach whoever consumes the body (an async iterator, a pipeline); a handler that answered
  // without reading it has no listener, and an unheard 'error' event would be thrown at the process.
  stream.on('error', () => undefined);
  const sink = {
    data(chunk: Buffer, last: boolean) {
      counted.bodyBytes += chunk.byteLength;
      const more = stream.push(chunk);
      if (last) stream.push(null);
      else if (!more) source.pause();
    },
    tooLarge() {
      stream.destroy(new GatewayError('request_too_large', `request body is larger than the ${cap}-byte limit`));
      if (!reply.started) tooLarge();
    },
    corrupt(err: GatewayError) {
      stream.destroy(err);
      if (!reply.started) reply.sendError(err);
    },
  };
  const decoder = coding === null ? null : new BodyDecoder(coding, cap, sink);
  const reader: BodyReader = new BodyReader(res, cap, declaredLength, decoder ?? sink);
  decoder?.attach(reader);
  // What the consumer's backpressure pauses: the decoded output, or the socket itself.
  const source: { pause(): void; resume(): void } = decoder ?? reader;
  reply.onAborted(() => {
    reader.abandon();
    stream.destroy(new Error('client aborted the upload'));
  });
  reply.onFinishing(() => {
    if (!reader.release()) reply.closeAfterAnswer();
    if (!stream.readableEnded) stream.destroy(new Error('the answer was sent before the request body was read'));
  });
  return stream;
}
