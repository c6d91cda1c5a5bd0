// The body of a whole (non-streamed) answer as it arrives, decoded from its Content-Encoding and
// capped. A compressed answer is inflated as it arrives by a zlib stream — the inflating runs on
// libuv's thread pool, not on the event loop — and the cap applies to the inflated bytes: an answer
// that inflates past it (a decompression bomb: 1 MB of gzip can hold 1 GiB) is stopped the moment it
// crosses the cap, never held whole. The cap is `limits.max_upstream_body_bytes`, for the compressed
// bytes as for the inflated ones.
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Transform } from 'node:stream';

/** Body chunks collected up to a cap. */
export class BodyBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;

  readonly cap: number;
  constructor(cap: number) {
    this.cap = cap;
  }

  /** Keeps the chunk, or returns false once the body has gone past the cap (that chunk and every
   *  later one are dropped). */
  add(chunk: Buffer): boolean {
    this.size += chunk.length;
    if (this.size > this.cap) return false;
    this.chunks.push(chunk);
    return true;
  }

  /** The body; a body that came in one chunk is that chunk (Buffer.concat would copy it). */
  bytes(): Buffer {
    return this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
  }
}

/** How a body ended: decoded whole, past its cap, or not decodable. */
export type BodyResult =
  | { kind: 'ok'; body: Buffer }
  | { kind: 'too_large'; detail: string }
  | { kind: 'malformed'; detail: string };

/** A body being received. `settle` (given at creation) hears its result exactly once: a failure as
 *  soon as it is known, else the decoded body once `end()` was called and decoding finished. */
export interface AnswerBody {
  add(chunk: Buffer): void;
  /** The upstream ended. */
  end(): void;
  /** The attempt is over: stop decoding, settle nothing more. */
  close(): void;
}

/** The body reader for a Content-Encoding (absent or `identity`: the bytes as they come). */
export function answerBody(encoding: string | undefined, cap: number, settle: (r: BodyResult) => void): AnswerBody {
  const coding = encoding?.trim().toLowerCase() ?? '';
  if (coding === '' || coding === 'identity') return new PlainBody(cap, once(settle));
  const inflater = decompressor(coding);
  if (inflater === null) return new UnreadableBody(coding, once(settle));
  return new InflatedBody(inflater, cap, once(settle));
}

function decompressor(coding: string): Transform | null {
  if (coding === 'gzip' || coding === 'x-gzip') return createGunzip();
  if (coding === 'deflate') return createInflate();
  if (coding === 'br') return createBrotliDecompress();
  return null;
}

function once(settle: (r: BodyResult) => void): (r: BodyResult) => void {
  let settled = false;
  return (r) => {
    if (settled) return;
    settled = true;
    settle(r);
  };
}

function tooLarge(cap: number, what: string): BodyResult {
  return { kind: 'too_large', detail: `the provider answer ${what} ${cap} bytes` };
}

class PlainBody implements AnswerBody {
  private readonly buffer: BodyBuffer;

  private readonly cap: number;
  private readonly settle: (r: BodyResult) => void;
  constructor(cap: number, settle: (r: BodyResult) => void) {
    this.cap = cap;
    this.settle = settle;
    this.buffer = new BodyBuffer(cap);
  }

  add(chunk: Buffer): void {
    if (!this.buffer.add(chunk)) this.settle(tooLarge(this.cap, 'exceeded'));
  }

  end(): void {
    this.settle({ kind: 'ok', body: this.buffer.bytes() });
  }

  close(): void {}
}

/** An encoding the gateway cannot decode: the answer is unusable, whatever its bytes. */
class UnreadableBody implements AnswerBody {
  private readonly coding: string;
  private readonly settle: (r: BodyResult) => void;
  constructor(coding: string, settle: (r: BodyResult) => void) {
    this.coding = coding;
    this.settle = settle;
  }

  add(): void {}

  end(): void {
    this.settle({
      kind: 'malformed',
      detail: `the provider answer's content encoding (${this.coding}) cannot be decoded`,
    });
  }

  close(): void {}
}

class InflatedBody implements AnswerBody {
  private readonly inflated: BodyBuffer;
  private received = 0;
  private closed = false;

  private readonly inflater: Transform;
  private readonly cap: number;
  private readonly settle: (r: BodyResult) => void;
  constructor(inflater: Transform, cap: number, settle: (r: BodyResult) => void) {
    this.inflater = inflater;
    this.cap = cap;
    this.settle = settle;
    this.inflated = new BodyBuffer(cap);
    inflater.on('data', (chunk: Buffer) => {
      if (!this.closed && !this.inflated.add(chunk)) this.fail(tooLarge(cap, 'inflated past'));
    });
    inflater.on('error', () => this.fail({ kind: 'malformed', detail: 'the provider answer did not decompress' }));
    inflater.on('end', () => {
      if (!this.closed) this.settle({ kind: 'ok', body: this.inflated.bytes() });
    });
  }

  add(chunk: Buffer): void {
    if (this.closed) return;
    this.received += chunk.length;
    if (this.received > this.cap) this.fail(tooLarge(this.cap, 'exceeded'));
    else this.inflater.write(chunk);
  }

  end(): void {
    if (!this.closed) this.inflater.end();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.inflater.destroy();
  }

  private fail(r: BodyResult): void {
    if (this.closed) return;
    this.close();
    this.settle(r);
  }
}
