// The Reply interface on a uWS HttpResponse. Follows uWS's rules (docs/index.d.ts): onAborted is
// attached at once, every write outside the route callback is corked, nothing touches the response
// after it ended or aborted, and large bodies go out through tryEnd/onWritable instead of one copy.
import type { HttpResponse } from 'uWebSockets.js';
import type { HeaderList, Reply } from '../http/reply.ts';
import { type GatewayError, statusLine } from '../errors.ts';
import { FIXED_HEADERS } from './gateway-headers.ts';

/** Bodies above this are sent with tryEnd + onWritable rather than copied whole into backpressure. */
const LARGE_BODY = 64 * 1024;

/**
 * The headers every response carries, written with one native call instead of one per header: uWS
 * writes `key: value\r\n`, so the first header's value followed by the other lines makes the same
 * bytes. Built once from FIXED_HEADERS (constants, no CR or LF of their own).
 */
const [FIXED_BLOCK_KEY, FIXED_BLOCK_VALUE] = ((): [string, string] => {
  const [first, ...rest] = FIXED_HEADERS;
  if (first === undefined) throw new Error('FIXED_HEADERS is empty');
  return [first[0], [first[1], ...rest.map(([k, v]) => `${k}: ${v}`)].join('\r\n')];
})();

/** Whether the server is draining: every answer then asks the client to close the connection. */
export interface ReplyDrainState {
  closing: boolean;
}

const NOT_DRAINING: ReplyDrainState = { closing: false };
const NO_CHUNK = new Uint8Array(0);

export class UwsReply implements Reply {
  readonly traceId: string;
  aborted = false;
  started = false;
  done = false;
  private readonly res: HttpResponse;
  private abortHandlers: (() => void)[] = [];
  private writableHandler: (() => void) | null = null;
  private writableRegistered = false;

  /** A HEAD request: the answer's headers (Content-Length included) go out, its body never does. */
  private readonly headOnly: boolean;
  private readonly drain: ReplyDrainState;
  /** The route's shape of a gateway-raised error (the Messages protocol adds a top-level type). */
  private readonly errorBody: (err: GatewayError) => unknown;

  constructor(
    res: HttpResponse,
    traceId: string,
    opts: { headOnly?: boolean; drain?: ReplyDrainState; errorBody?: (err: GatewayError) => unknown } = {},
  ) {
    this.res = res;
    this.traceId = traceId;
    this.headOnly = opts.headOnly ?? false;
    this.drain = opts.drain ?? NOT_DRAINING;
    this.errorBody = opts.errorBody ?? ((err) => err.toBody());
    res.onAborted(() => {
      this.aborted = true;
      this.done = true;
      const handlers = this.abortHandlers;
      this.abortHandlers = [];
      for (const h of handlers) h();
    });
  }

  onAborted(cb: () => void): void {
    if (this.aborted) cb();
    else if (!this.done) this.abortHandlers.push(cb);
  }

  cork(fn: () => void): void {
    if (this.done) return;
    this.res.cork(fn);
  }

  private writeHead(status: number, headers: HeaderList): void {
    const res = this.res;
    res.writeStatus(statusLine(status));
    res.writeHeader('X-Pi-Trace-Id', this.traceId);
    res.writeHeader(FIXED_BLOCK_KEY, FIXED_BLOCK_VALUE);
    for (const [k, v] of headers) res.writeHeader(k, v);
    // Draining: answered, then disconnected (uWS closes after a response that says so).
    if (this.drain.closing && !headers.some(([k]) => k.toLowerCase() === 'connection')) res.writeHeader('Connection', 'close');
    this.started = true;
  }

  send(status: number, headers: HeaderList, body?: string | Uint8Array): void {
    if (this.done || this.started) return;
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    if (bytes && bytes.byteLength > LARGE_BODY && !this.headOnly) {
      this.sendLarge(status, headers, bytes);
      return;
    }
    this.done = true;
    this.res.cork(() => {
      // 204/304 carry no body and no Content-Length.
      if (status === 204 || status === 304) {
        this.writeHead(status, headers);
        this.res.endWithoutBody();
      } else if (this.headOnly) {
        // Body bytes after a HEAD response would be read by a keep-alive client as the next
        // response. The length is written by hand: this uWS build's endWithoutBody(length) leaves
        // the response open (it waits for that many body bytes).
        this.writeHead(status, [...headers, ['Content-Length', String(bytes?.byteLength ?? 0)]]);
        this.res.endWithoutBody();
      } else {
        this.writeHead(status, headers);
        this.res.end(bytes ?? '');
      }
    });
  }

  private sendLarge(status: number, headers: HeaderList, body: Uint8Array): void {
    const res = this.res;
    const total = body.byteLength;
    let finished = false;
    res.cork(() => {
      this.writeHead(status, headers);
      const start = res.getWriteOffset();
      const [, done] = res.tryEnd(body, total);
      if (done) {
        finished = true;
        return;
      }
      res.onWritable((offset) => {
        if (this.aborted) return true;
        const [ok, done2] = res.tryEnd(body.subarray(offset - start), total);
        if (done2) this.done = true;
        return ok;
      });
    });
    if (finished) this.done = true;
  }

  sendJson(status: number, value: unknown, headers: HeaderList = []): void {
    this.send(status, [['Content-Type', 'application/json'], ...headers], JSON.stringify(value));
  }

  sendError(err: GatewayError): void {
    this.sendJson(err.status, this.errorBody(err), err.headers);
  }

  startStream(status: number, headers: HeaderList): void {
    if (this.done || this.started) return;
    if (this.headOnly) {
      // No body will follow: end at once (chunked framing would otherwise put bytes on the wire).
      this.done = true;
      this.res.cork(() => {
        this.writeHead(status, headers);
        this.res.endWithoutBody();
      });
      return;
    }
    this.res.cork(() => this.writeHead(status, headers));
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.done) return true;
    // One bound writer per reply instead of a closure per write: a stream writes once per event.
    this.pendingChunk = chunk;
    this.wrote = true;
    this.res.cork(this.corkedWrite);
    this.pendingChunk = NO_CHUNK;
    return this.wrote;
  }

  private pendingChunk: string | Uint8Array = NO_CHUNK;
  private wrote = true;
  private readonly corkedWrite = (): void => {
    this.wrote = this.res.write(this.pendingChunk);
  };

  onWritable(cb: () => void): void {
    if (this.done) return;
    this.writableHandler = cb;
    if (this.writableRegistered) return;
    this.writableRegistered = true;
    // uWS keeps one writable handler per response; dispatch to whoever waits now.
    this.res.onWritable(() => {
      const h = this.writableHandler;
      this.writableHandler = null;
      if (h && !this.done) h();
      return true;
    });
  }

  end(): void {
    if (this.done) return;
    this.done = true;
    this.res.cork(() => {
      if (!this.started) this.writeHead(200, []);
      this.res.end();
    });
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    this.res.close();
  }
}
