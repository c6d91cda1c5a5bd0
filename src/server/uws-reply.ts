// The Reply interface on a uWS HttpResponse. Follows uWS's rules (docs/index.d.ts): onAborted is
// attached at once, every write outside the route callback is corked, nothing touches the response
// after it ended or aborted, and large bodies go out through tryEnd/onWritable instead of one copy.
import type { HttpResponse } from 'uWebSockets.js';
import type { HeaderList, Reply } from '../http/reply.ts';
import { type GatewayError, statusLine } from '../errors.ts';
import { FIXED_HEADERS, SECURITY_HEADERS } from './gateway-headers.ts';

/** Bodies above this are sent with tryEnd + onWritable rather than copied whole into backpressure. */
const LARGE_BODY = 64 * 1024;

/**
 * The headers every response of a server carries, written with one native call instead of one per
 * header: uWS writes `key: value\r\n`, so the first header's value followed by the other lines makes
 * the same bytes. Built once from constants (no CR or LF of their own).
 */
export type FixedBlock = readonly [key: string, value: string];

function fixedBlock(headers: ReadonlyArray<readonly [string, string]>): FixedBlock {
  const [first, ...rest] = headers;
  if (first === undefined) throw new Error('a fixed header block is empty');
  return [first[0], [first[1], ...rest.map(([k, v]) => `${k}: ${v}`)].join('\r\n')];
}

/** The public API's answers: CORS (browsers may call the API with a key) and the security headers. */
export const PUBLIC_BLOCK: FixedBlock = fixedBlock(FIXED_HEADERS);
/** The admin listener's answers: the security headers and no CORS at all, so no page of another
 *  origin can read an operator's answer (metrics, the console's JSON) or probe its sign-in. */
export const ADMIN_BLOCK: FixedBlock = fixedBlock(SECURITY_HEADERS);

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
  bytesSent = 0;
  private readonly res: HttpResponse;
  private abortHandlers: (() => void)[] = [];
  private finishingHandlers: (() => void)[] = [];
  /** This answer ends the connection (see closeAfterAnswer). */
  private closeAfter = false;
  private writableHandler: (() => void) | null = null;
  private writableRegistered = false;

  /** A HEAD request: the answer's headers (Content-Length included) go out, its body never does. */
  private readonly headOnly: boolean;
  private readonly drain: ReplyDrainState;
  /** The route's shape of a gateway-raised error (the Messages protocol adds a top-level type). */
  private readonly errorBody: (err: GatewayError) => unknown;
  private readonly fixed: FixedBlock;

  constructor(
    res: HttpResponse,
    traceId: string,
    opts: {
      headOnly?: boolean;
      drain?: ReplyDrainState;
      errorBody?: (err: GatewayError) => unknown;
      fixed?: FixedBlock;
    } = {},
  ) {
    this.res = res;
    this.traceId = traceId;
    this.headOnly = opts.headOnly ?? false;
    this.drain = opts.drain ?? NOT_DRAINING;
    this.errorBody = opts.errorBody ?? ((err) => err.toBody());
    this.fixed = opts.fixed ?? PUBLIC_BLOCK;
    res.onAborted(() => {
      this.aborted = true;
      this.done = true;
      this.finishingHandlers = [];
      const handlers = this.abortHandlers;
      this.abortHandlers = [];
      for (const h of handlers) h();
    });
  }

  onAborted(cb: () => void): void {
    if (this.aborted) cb();
    else if (!this.done) this.abortHandlers.push(cb);
  }

  /**
   * Server-side only (not part of Reply): `cb` runs once, synchronously, just before the response
   * ends or closes, while it may still be used (the body reader resumes a socket it paused and lets
   * go of the response). Never after an abort: the response is gone then.
   */
  onFinishing(cb: () => void): void {
    if (!this.done) this.finishingHandlers.push(cb);
  }

  private finishing(): void {
    const handlers = this.finishingHandlers;
    this.finishingHandlers = [];
    for (const h of handlers) h();
  }

  /**
   * Server-side only: the connection ends after this answer (what is left of the request's body is
   * unbounded — over the cap, or of unknown length — or its framing is not to be trusted). A whole
   * answer is written and then uWS shuts the socket down. A stream (when asked before it starts) or
   * a body-less answer only says `Connection: close`: uWS can add the close to neither (its close
   * flag on a streamed end lands inside the chunked body).
   */
  closeAfterAnswer(): void {
    this.closeAfter = true;
  }

  /** Whether this answer ends the connection: asked for, draining, or a `Connection: close` header. */
  private closing(headers: HeaderList): boolean {
    return (
      this.closeAfter ||
      this.drain.closing ||
      headers.some(([k, v]) => isConnectionHeader(k) && v.toLowerCase() === 'close')
    );
  }

  cork(fn: () => void): void {
    if (this.done) return;
    this.res.cork(fn);
  }

  /** Status and headers; `connectionClose` adds the header by hand (where uWS does not write it). */
  private writeHead(status: number, headers: HeaderList, connectionClose: boolean): void {
    const res = this.res;
    res.writeStatus(statusLine(status));
    res.writeHeader('X-Pi-Trace-Id', this.traceId);
    res.writeHeader(this.fixed[0], this.fixed[1]);
    for (const [k, v] of headers) if (!isConnectionHeader(k)) res.writeHeader(k, v);
    if (connectionClose) res.writeHeader('Connection', 'close');
    this.started = true;
  }

  send(status: number, headers: HeaderList, body?: string | Uint8Array): void {
    if (this.done || this.started) return;
    this.finishing();
    const close = this.closing(headers);
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    // An answer that ends the connection goes out whole: tryEnd cannot close after it.
    if (!this.headOnly && status !== 204 && status !== 304) this.bytesSent += bytes?.byteLength ?? 0;
    if (bytes && bytes.byteLength > LARGE_BODY && !this.headOnly && !close) {
      this.sendLarge(status, headers, bytes);
      return;
    }
    this.done = true;
    this.res.cork(() => {
      // 204/304 carry no body and no Content-Length.
      if (status === 204 || status === 304) {
        this.writeHead(status, headers, close);
        this.res.endWithoutBody();
      } else if (this.headOnly) {
        // Body bytes after a HEAD response would be read by a keep-alive client as the next
        // response. The length is written by hand: uWS's endWithoutBody(length) leaves the
        // response open (it waits for that many body bytes).
        this.writeHead(status, [...headers, ['Content-Length', String(bytes?.byteLength ?? 0)]], close);
        this.res.endWithoutBody();
      } else {
        // Closing: uWS writes `Connection: close` itself, sends the answer, then shuts the socket down.
        this.writeHead(status, headers, false);
        this.res.end(bytes ?? '', close);
      }
    });
  }

  private sendLarge(status: number, headers: HeaderList, body: Uint8Array): void {
    const res = this.res;
    const total = body.byteLength;
    let finished = false;
    res.cork(() => {
      this.writeHead(status, headers, false);
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
      this.finishing();
      this.done = true;
      this.res.cork(() => {
        this.writeHead(status, headers, this.closing(headers));
        this.res.endWithoutBody();
      });
      return;
    }
    this.res.cork(() => this.writeHead(status, headers, this.closing(headers)));
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.done) return true;
    // One bound writer per reply instead of a closure per write: a stream writes once per event.
    this.pendingChunk = chunk;
    this.bytesSent += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
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
    this.finishing();
    this.done = true;
    this.res.cork(() => {
      if (this.started) {
        this.res.end();
        return;
      }
      this.writeHead(200, [], false);
      this.res.end('', this.closing([]));
    });
  }

  close(): void {
    if (this.done) return;
    this.finishing();
    this.done = true;
    this.res.close();
  }
}

/** The answer's Connection header is the reply's to write (see closing). */
function isConnectionHeader(name: string): boolean {
  return name.toLowerCase() === 'connection';
}
