// Request bodies sent with a Content-Encoding (agent clients compress large bodies): which codings
// the gateway decodes, and the decoder that sits between the socket reader and the body's consumer,
// so every route that reads a body (JSON read whole, uploads streamed through) sees it decoded.
//
// The body limit applies to the decoded bytes as well as to the bytes as sent: decoding runs while
// the body arrives (a zlib stream: the inflating runs on libuv's thread pool, not the event loop) and
// stops the moment the decoded size passes the cap, so a decompression bomb (1 MB of gzip can hold
// 1 GiB) costs the cap's worth of memory and time, never its decoded size. zstd frames may ask for a
// window of up to 2 GiB; the decoder refuses windows over 8 MiB (RFC 9659 has HTTP encoders stay
// within it), so one request cannot make the gateway allocate more than that for its window.
import { constants, createBrotliDecompress, createGunzip, createInflate, createZstdDecompress } from 'node:zlib';
import type { Transform } from 'node:stream';
import { GatewayError } from '../errors.ts';

/** The codings a request body may be sent in (besides `identity`). */
export const REQUEST_CODINGS = ['gzip', 'deflate', 'br', 'zstd'] as const;
export type RequestCoding = (typeof REQUEST_CODINGS)[number];

/** 2^23 bytes: the largest zstd window RFC 9659 lets an HTTP encoder use. */
const ZSTD_WINDOW_LOG_MAX = 23;
/** How much of a refused Content-Encoding value the error message repeats. */
const SHOWN_MAX = 64;

/**
 * The coding a request's body is sent in, from its Content-Encoding: null when the body is as sent
 * (no header, or only `identity`). An encoding the gateway does not decode, or more than one coding
 * applied in turn, is `415 unsupported_content_encoding` naming it.
 */
export function requestCoding(header: string | undefined): RequestCoding | null {
  if (header === undefined) return null;
  const codings = header
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  if (codings.length === 0) return null;
  const supported = `the gateway decodes one of ${REQUEST_CODINGS.join(', ')} (or identity)`;
  if (codings.length > 1) {
    throw new GatewayError(
      'unsupported_content_encoding',
      `Content-Encoding "${shown(header)}" applies more than one coding; ${supported}`,
    );
  }
  const coding = codings[0] === 'x-gzip' ? 'gzip' : (codings[0] as string);
  if (!(REQUEST_CODINGS as readonly string[]).includes(coding)) {
    throw new GatewayError(
      'unsupported_content_encoding',
      `Content-Encoding "${shown(coding)}" is not supported; ${supported}`,
    );
  }
  return coding as RequestCoding;
}

/** The client's value, cut short and reduced to printable ASCII (header values are raw bytes). */
function shown(value: string): string {
  const clean = value.trim().replace(/[^\x20-\x7e]/g, '?');
  return clean.length > SHOWN_MAX ? `${clean.slice(0, SHOWN_MAX)}…` : clean;
}

function decompressor(coding: RequestCoding): Transform {
  switch (coding) {
    case 'gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    case 'zstd':
      return createZstdDecompress({ params: { [constants.ZSTD_d_windowLogMax]: ZSTD_WINDOW_LOG_MAX } });
  }
}

/** Where a decoder delivers the decoded body (a BodyReader's sink, with one more ending). */
export interface DecodedSink {
  /** A decoded chunk; `last` (with an empty chunk) once the body is whole. */
  data(chunk: Buffer, last: boolean): void;
  /** The body passed the cap, as sent or decoded; nothing more is delivered. */
  tooLarge(): void;
  /** The bytes are not valid data of their coding; nothing more is delivered. */
  corrupt(err: GatewayError): void;
}

/** The reader of the bytes as sent, paused while the decoder is behind. */
export interface RawFlow {
  pause(): void;
  resume(): void;
}

/**
 * Raw body chunks in (a BodyReader's sink), decoded chunks out, capped at `cap` decoded bytes. The
 * consumer may `pause` the decoded output (backpressure); the raw reader is then paused as soon as
 * the decoder's input buffer is full, and resumed when it drains.
 */
export class BodyDecoder {
  private readonly zlib: Transform;
  private readonly out: DecodedSink;
  private readonly cap: number;
  private readonly coding: RequestCoding;
  private decoded = 0;
  private closed = false;
  private raw: RawFlow | null = null;

  constructor(coding: RequestCoding, cap: number, out: DecodedSink) {
    this.coding = coding;
    this.cap = cap;
    this.out = out;
    this.zlib = decompressor(coding);
    this.zlib.on('data', (chunk: Buffer) => this.onDecoded(chunk));
    this.zlib.on('end', () => {
      if (!this.closed) {
        this.closed = true;
        this.out.data(EMPTY, true);
      }
    });
    this.zlib.on('error', (err: Error) => this.fail(() => this.out.corrupt(corrupt(this.coding, err))));
    this.zlib.on('drain', () => this.raw?.resume());
  }

  /** The raw reader to pause while the decoder's input is full. */
  attach(raw: RawFlow): void {
    this.raw = raw;
  }

  data(chunk: Buffer, last: boolean): void {
    if (this.closed) return;
    if (chunk.byteLength > 0 && !this.zlib.write(chunk)) this.raw?.pause();
    if (last) this.zlib.end();
  }

  /** The bytes as sent passed the cap. */
  tooLarge(): void {
    this.fail(() => this.out.tooLarge());
  }

  /** Stop delivering decoded bytes until `resume`. */
  pause(): void {
    if (!this.closed) this.zlib.pause();
  }

  resume(): void {
    if (!this.closed) this.zlib.resume();
  }

  /** The raw reader let go of the body (answer sent, client gone): decoding stops. */
  detached(): void {
    this.close();
  }

  /** Nobody wants the body any more: decoding stops and its memory goes. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.zlib.destroy();
  }

  private onDecoded(chunk: Buffer): void {
    if (this.closed) return;
    this.decoded += chunk.byteLength;
    if (this.decoded > this.cap) {
      this.fail(() => this.out.tooLarge());
      return;
    }
    this.out.data(chunk, false);
  }

  private fail(tell: () => void): void {
    if (this.closed) return;
    this.close();
    tell();
  }
}

const EMPTY = Buffer.alloc(0);

function corrupt(coding: RequestCoding, err: Error): GatewayError {
  const why = err.message.replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
  return new GatewayError(
    'invalid_request',
    `the request body is not valid ${coding} data (Content-Encoding: ${coding}): ${why}`,
  );
}
