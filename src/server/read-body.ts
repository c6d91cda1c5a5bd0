// Reads a request body from uWS: the one onData consumer of a response, with a size cap, copying
// every chunk (uWS neuters the ArrayBuffer once the onData callback returns). Shared by the gateway
// and the simulator.
//
// A body may still be arriving when its answer goes out (a refused key, a wrong content type, a body
// over the cap), and uWS keeps delivering it after the response ended: it reads the rest so the
// connection stays in step for its next request. A finished or aborted uWS response must never be
// touched again (doing so throws from native code and stops the process), so the reader is told
// before the answer ends (`release`, while the response is still valid: a socket it paused is resumed,
// or uWS would never read the rest and the connection would hang) or when the client left
// (`abandon`). From then on every chunk is dropped uncopied and nothing calls the response.
// Reading the rest to drop it is bounded only when the body declared its length, and that length is
// within the cap or at most DROPPED_BODY_BYTES past it: then the client, still uploading, reads the
// answer (a 413, a 401) instead of a reset — closing a socket with unread bytes in it makes the
// kernel send RST, which discards an answer the client had not read yet. A body of unknown length
// (chunked) or declared further past the cap ends the connection after the answer instead
// (`release` says which).
import type { HttpResponse } from 'uWebSockets.js';
import type { GatewayError } from '../errors.ts';
import type { BodyBudget } from './body-budget.ts';
import { BodyDecoder, type RequestCoding } from './request-coding.ts';

const EMPTY = Buffer.alloc(0);
const EMPTY_CHUNK = new ArrayBuffer(0);

/** How far past the cap a body with a declared length is still read to its end (and dropped). */
export const DROPPED_BODY_BYTES = 16 * 1024 * 1024;

/** Whether what is left of a body after an early answer is bounded enough to read and drop. */
export function restIsBounded(declaredLength: number | null, cap: number): boolean {
  return declaredLength !== null && declaredLength <= cap + DROPPED_BODY_BYTES;
}

/** The server's budget for bodies in transit, and what answers a body refused by it. */
export interface InTransit {
  gate: BodyBudget;
  /** The budget is spent: nothing more of this body is read or delivered. */
  spent(): void;
}

/** Where a BodyReader delivers the body. */
export interface BodySink {
  /** A copied chunk; `last` on the final one. */
  data(chunk: Buffer, last: boolean): void;
  /** The body passed the cap; nothing more is delivered. */
  tooLarge(): void;
  /** The reader let go (the answer is ending, or the client left): nothing more will be delivered. */
  detached?(): void;
}

export class BodyReader {
  private size = 0;
  private paused = false;
  /** Complete, over the cap, released or abandoned: later chunks are dropped uncopied. */
  private over = false;
  /** The last chunk arrived. */
  private complete = false;
  /** The response ended or is ending, or the client left: the reader never calls it again. */
  private detached = false;
  private readonly res: HttpResponse;
  private readonly cap: number;
  private readonly sink: BodySink;
  /** The body declared a length within reach (restIsBounded): what is left after an answer is read. */
  private readonly bounded: boolean;
  private readonly transit: InTransit | null;
  /** Bytes this body holds of the server's budget (until it is whole, refused or let go). */
  private held = 0;

  /** `declaredLength`: the request's Content-Length, or null when it has none (chunked). */
  constructor(
    res: HttpResponse,
    cap: number,
    declaredLength: number | null,
    sink: BodySink,
    transit: InTransit | null = null,
  ) {
    this.res = res;
    this.cap = cap;
    this.sink = sink;
    this.transit = transit;
    this.bounded = restIsBounded(declaredLength, cap);
    res.onData((chunk, isLast) => this.onData(chunk, isLast));
    // An empty body (Content-Length: 0) has nothing to wait for, and uWS does not always say so: when
    // the request's head arrived in more than one packet it never calls onData. It is complete as
    // soon as the handler's set-up is done; a late empty chunk from uWS is then ignored.
    if (declaredLength === 0) queueMicrotask(() => this.onData(EMPTY_CHUNK, true));
  }

  /** Stop reading from the socket until `resume` (backpressure from the body's consumer). */
  pause(): void {
    if (this.detached || this.over || this.paused) return;
    this.paused = true;
    this.res.pause();
  }

  resume(): void {
    if (this.detached || !this.paused) return;
    this.paused = false;
    this.res.resume();
  }

  /**
   * The answer is about to end; the response is still valid now and never used after this. Returns
   * whether the connection may stay open: the body is complete, or what is left of it is bounded
   * (uWS reads it and the reader drops it); otherwise the answer must close the connection.
   */
  release(): boolean {
    if (!this.detached) {
      this.resume();
      this.detached = true;
      this.over = true;
      this.letGo();
      this.sink.detached?.();
    }
    return this.complete || this.bounded;
  }

  /** The response is gone (the client left, or it ended without `release`): never touched again. */
  abandon(): void {
    if (!this.detached) this.sink.detached?.();
    this.detached = true;
    this.over = true;
    this.paused = false;
    this.letGo();
  }

  private onData(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.over) return;
    this.size += chunk.byteLength;
    if (this.size > this.cap) {
      this.over = true;
      this.letGo();
      // Whatever answers the excess (413, or a close) lets uWS read or drop the rest itself.
      this.resume();
      this.sink.tooLarge();
      return;
    }
    if (this.transit !== null && chunk.byteLength > 0) {
      if (!this.transit.gate.take(chunk.byteLength, this.held)) {
        this.over = true;
        this.letGo();
        this.resume();
        this.transit.spent();
        return;
      }
      this.held += chunk.byteLength;
    }
    if (isLast) {
      this.over = this.complete = true;
      this.letGo();
    }
    this.sink.data(chunk.byteLength === 0 ? EMPTY : Buffer.from(chunk.slice(0)), isLast);
  }

  /** What this body held of the budget is free again (once). */
  private letGo(): void {
    if (this.held === 0 || this.transit === null) return;
    this.transit.gate.give(this.held);
    this.held = 0;
  }
}

/**
 * Calls `done(body)` once the body is complete, or `tooLarge()` as soon as it passes `cap` bytes.
 * `answered()` says the response already went out (aborted, or answered early): stop collecting.
 * With `decoding`, the body is decoded from its Content-Encoding as it arrives and `cap` bounds the
 * decoded bytes too; data that does not decode ends in `decoding.corrupt`.
 */
export function readBody(
  res: HttpResponse,
  cap: number,
  declaredLength: number | null,
  answered: () => boolean,
  done: (body: Buffer) => void,
  tooLarge: () => void,
  decoding?: { coding: RequestCoding; corrupt: (err: GatewayError) => void },
  transit: InTransit | null = null,
): BodyReader {
  let chunks: Buffer[] = [];
  let size = 0;
  const collect: BodySink = {
    data(chunk, last) {
      if (answered()) {
        chunks = [];
        reader.abandon();
        return;
      }
      if (chunk.byteLength > 0) chunks.push(chunk);
      size += chunk.byteLength;
      if (!last) return;
      const body =
        chunks.length === 0 ? EMPTY : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
      chunks = [];
      done(body);
    },
    tooLarge() {
      chunks = [];
      tooLarge();
    },
  };
  const decoder = decoding
    ? new BodyDecoder(decoding.coding, cap, {
        ...collect,
        corrupt: (err) => {
          chunks = [];
          decoding.corrupt(err);
        },
      })
    : null;
  const reader: BodyReader = new BodyReader(
    res,
    cap,
    declaredLength,
    decoder ?? collect,
    transit === null
      ? null
      : {
          gate: transit.gate,
          spent() {
            chunks = [];
            transit.spent();
          },
        },
  );
  decoder?.attach(reader);
  return reader;
}
