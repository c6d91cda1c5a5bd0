// One in-flight response on uWS, written by the rules of uWebSockets.js: onAborted attached at
// once, every write corked, nothing touches the response once it ended, was reset or aborted.
// Two body modes: chunked (`write`, what real SSE uses) and sized (`tryEnd` against a known total,
// used when the head must reach the client before any body byte — uWS (20.30 and 20.51 alike) cannot
// flush a chunked head without a chunk).
import type { HttpResponse } from 'uWebSockets.js';
import { type HeaderList, statusLine } from './wire-headers.ts';

export class Exchange {
  /** Ended, reset or aborted: the HttpResponse must not be touched again. */
  done = false;
  aborted = false;
  private readonly res: HttpResponse;
  private readonly live: Set<Exchange>;
  private timer: NodeJS.Timeout | null = null;
  private status = 200;
  private headers: HeaderList = [];
  private headPending = false;
  /** Sized mode: the Content-Length announced, and bytes tryEnd could not take yet. */
  private total = -1;
  private queued: Buffer | null = null;
  private queuedAt = 0;

  constructor(res: HttpResponse, live: Set<Exchange>) {
    this.res = res;
    this.live = live;
    live.add(this);
    res.onAborted(() => {
      this.aborted = true;
      this.finish();
    });
  }

  private finish(): void {
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.live.delete(this);
  }

  /** Runs `fn` after `ms` (at once when 0), unless the exchange is over by then. */
  after(ms: number, fn: () => void): void {
    if (this.done) return;
    if (ms <= 0) {
      fn();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.done) fn();
    }, ms);
  }

  private writeHead(): void {
    const res = this.res;
    res.writeStatus(statusLine(this.status));
    for (const [k, v] of this.headers) res.writeHeader(k, v);
    this.headPending = false;
  }

  /** A complete response in one go (Content-Length body). */
  sendWhole(status: number, headers: HeaderList, body: string | Buffer): void {
    if (this.done) return;
    this.status = status;
    this.headers = headers;
    this.finish();
    this.res.cork(() => {
      this.writeHead();
      this.res.end(body);
    });
  }

  /** Chunked mode: the head goes out together with the first write. */
  beginChunked(status: number, headers: HeaderList): void {
    this.status = status;
    this.headers = headers;
    this.headPending = true;
  }

  /** Sized mode: flushes the head now, announcing `total` body bytes. */
  beginSized(status: number, headers: HeaderList, total: number): void {
    if (this.done) return;
    this.status = status;
    this.headers = headers;
    this.total = total;
    this.res.cork(() => {
      this.writeHead();
      const [, finished] = this.res.tryEnd('', total);
      if (finished) this.finish();
    });
  }

  /** Writes events (one HTTP chunk each in chunked mode), optionally ending the response. */
  write(events: readonly (string | Buffer)[], end = false): void {
    if (this.done) return;
    this.res.cork(() => {
      if (this.total >= 0) {
        if (events.length > 0)
          this.writeSized(Buffer.concat(events.map((e) => (typeof e === 'string' ? Buffer.from(e) : e))));
        return;
      }
      if (this.headPending) this.writeHead();
      for (const e of events) this.res.write(e);
      if (end) {
        this.finish();
        this.res.end();
      }
    });
  }

  /** Sized mode: raw body bytes. */
  writeBytes(buf: Buffer): void {
    if (this.done || this.total < 0) return;
    this.res.cork(() => this.writeSized(buf));
  }

  private writeSized(buf: Buffer): void {
    if (this.queued) {
      this.queued = Buffer.concat([this.queued, buf]);
      return;
    }
    const before = this.res.getWriteOffset();
    const [ok, finished] = this.res.tryEnd(buf, this.total);
    if (finished) {
      this.finish();
      return;
    }
    if (!ok) {
      this.queued = buf;
      this.queuedAt = before;
      this.res.onWritable((offset) => this.drain(offset));
    }
  }

  private drain(offset: number): boolean {
    if (this.done || !this.queued) return true;
    const [ok, finished] = this.res.tryEnd(this.queued.subarray(offset - this.queuedAt), this.total);
    if (finished) this.finish();
    else if (ok) this.queued = null;
    return ok;
  }

  /**
   * Destroys the connection (the client sees a socket error) once what was written before has been
   * flushed: inside a uWS callback the writes sit in the cork buffer, and close() would drop them.
   */
  reset(): void {
    if (this.done) return;
    this.finish();
    setImmediate(() => {
      if (!this.aborted) this.res.close();
    });
  }

  /** Destroys the connection at once, without flushing (shutdown). */
  destroy(): void {
    if (this.aborted) return;
    this.finish();
    this.aborted = true;
    this.res.close();
  }
}
