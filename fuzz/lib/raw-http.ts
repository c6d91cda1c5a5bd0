// A client that sends exactly the bytes it is given over node:net (in pieces, with pauses, then
// optionally a half-close or an early close) and reads whatever comes back as HTTP/1.1 answers
// (interim 1xx skipped; Content-Length, chunked or close-delimited bodies). It never judges: it says
// what the server did — answered (how many, with what), closed, or neither before the deadline.
import { connect } from 'node:net';

export interface WriteStep {
  bytes: Buffer;
  /** Pause before this write. */
  delayMs?: number;
}

export interface ExchangeOptions {
  port: number;
  steps: WriteStep[];
  /** Complete answers to wait for before closing (default 1). */
  expect?: number;
  /** No answer and no close within this long after the last write: `timedOut`. */
  deadlineMs: number;
  /** Half-close (FIN) after the last write. */
  halfClose?: boolean;
  /** Destroy the connection this long after the last write (the client goes away). */
  abortAfterMs?: number;
  /** Answers to HEAD have no body. */
  head?: boolean;
  /** Stop reading for this long after the first bytes arrive (a slow client: backpressure). */
  readPauseMs?: number;
  /** Keep writing the request after the answers came (as an uploading client does), for at most
   *  `writeGraceMs` (default 2 s) more: an early answer must cope with the rest of the body. */
  writeAll?: boolean;
  writeGraceMs?: number;
}

export interface HttpAnswer {
  status: number;
  headers: [string, string][];
  body: Buffer;
}

export interface ExchangeResult {
  answers: HttpAnswer[];
  /** The server closed the connection (FIN or reset) before we did. */
  closedByServer: boolean;
  /** Neither `expect` answers nor a close within the deadline. */
  timedOut: boolean;
  /** The client aborted as told (abortAfterMs). */
  aborted: boolean;
  /** A partial answer left when the connection ended (head seen, body cut). */
  partial: boolean;
  error: string | null;
  ms: number;
}

export function header(a: HttpAnswer, name: string): string | undefined {
  const n = name.toLowerCase();
  return a.headers.find(([k]) => k.toLowerCase() === n)?.[1];
}

export function exchange(opts: ExchangeOptions): Promise<ExchangeResult> {
  const expect = opts.expect ?? 1;
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: opts.port });
    const parser = new AnswerParser(opts.head ?? false);
    let finished = false;
    let closedByServer = false;
    let timedOut = false;
    let aborted = false;
    let error: string | null = null;
    let deadline: NodeJS.Timeout | null = null;
    const timers: NodeJS.Timeout[] = [];
    const finish = (): void => {
      if (finished) return;
      finished = true;
      for (const t of timers) clearTimeout(t);
      if (deadline) clearTimeout(deadline);
      socket.destroy();
      resolve({
        answers: parser.answers,
        closedByServer,
        timedOut,
        aborted,
        partial: parser.partial(),
        error,
        ms: performance.now() - started,
      });
    };
    let paused = false;
    let written = false;
    let answered = false;
    const onAnswered = (): void => {
      if (answered) return;
      answered = true;
      if (!opts.writeAll || written) finish();
      else timers.push(setTimeout(finish, opts.writeGraceMs ?? 2000));
    };
    socket.on('data', (d: Buffer) => {
      if (opts.readPauseMs && !paused) {
        paused = true;
        socket.pause();
        timers.push(setTimeout(() => socket.resume(), opts.readPauseMs));
      }
      parser.push(d);
      if (parser.answers.length >= expect) onAnswered();
    });
    socket.on('end', () => {
      parser.end();
      closedByServer = true;
      finish();
    });
    socket.on('close', () => {
      if (!finished) {
        parser.end();
        closedByServer = true;
        finish();
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      error = err.code ?? err.message;
    });
    const armDeadline = (): void => {
      deadline = setTimeout(() => {
        timedOut = true;
        finish();
      }, opts.deadlineMs);
      if (opts.abortAfterMs !== undefined) {
        timers.push(
          setTimeout(() => {
            aborted = true;
            finish();
          }, opts.abortAfterMs),
        );
      }
    };
    socket.once('connect', () => {
      let at = 0;
      const next = (): void => {
        if (finished) return;
        if (at >= opts.steps.length) {
          written = true;
          if (answered) {
            finish();
            return;
          }
          if (opts.halfClose) socket.end();
          armDeadline();
          return;
        }
        const step = opts.steps[at++] as WriteStep;
        const write = (): void => {
          if (finished || socket.destroyed) return;
          socket.write(step.bytes, () => next());
        };
        if (step.delayMs) timers.push(setTimeout(write, step.delayMs));
        else write();
      };
      next();
    });
  });
}

/** HTTP/1.1 answers out of a byte stream. */
export class AnswerParser {
  readonly answers: HttpAnswer[] = [];
  private buf: Buffer = Buffer.alloc(0);
  private current: {
    status: number;
    headers: [string, string][];
    mode: 'length' | 'chunked' | 'close' | 'none';
    left: number;
    chunks: Buffer[];
  } | null = null;
  private broken = false;

  private readonly head: boolean;
  constructor(head: boolean) {
    this.head = head;
  }

  push(d: Buffer): void {
    if (this.broken) return;
    this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
    for (;;) if (!this.step()) return;
  }

  end(): void {
    const c = this.current;
    if (c && c.mode === 'close') {
      c.chunks.push(this.buf);
      this.buf = Buffer.alloc(0);
      this.answers.push({ status: c.status, headers: c.headers, body: Buffer.concat(c.chunks) });
      this.current = null;
    }
  }

  partial(): boolean {
    return this.current !== null;
  }

  /** One parsing step; false when more bytes are needed. */
  private step(): boolean {
    if (this.current === null) return this.readHead();
    const c = this.current;
    if (c.mode === 'close') {
      c.chunks.push(this.buf);
      this.buf = Buffer.alloc(0);
      return false;
    }
    if (c.mode === 'length') {
      const take = Math.min(c.left, this.buf.length);
      c.chunks.push(this.buf.subarray(0, take));
      this.buf = this.buf.subarray(take);
      c.left -= take;
      if (c.left > 0) return false;
      return this.complete();
    }
    if (c.mode === 'chunked') return this.readChunk(c);
    return this.complete();
  }

  private readHead(): boolean {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end === -1) return false;
    const lines = this.buf.subarray(0, end).toString('latin1').split('\r\n');
    this.buf = this.buf.subarray(end + 4);
    const m = /^HTTP\/\d\.\d (\d{3})/.exec(lines[0] ?? '');
    if (!m) {
      this.broken = true;
      return false;
    }
    const status = Number(m[1]);
    const headers: [string, string][] = [];
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
    }
    if (status >= 100 && status < 200) return true;
    const get = (n: string): string | undefined => headers.find(([k]) => k.toLowerCase() === n)?.[1];
    let mode: 'length' | 'chunked' | 'close' | 'none' = 'close';
    let left = 0;
    if (this.head || status === 204 || status === 304) mode = 'none';
    else if (/chunked/i.test(get('transfer-encoding') ?? '')) mode = 'chunked';
    else if (get('content-length') !== undefined) {
      mode = 'length';
      left = Number(get('content-length'));
      if (!Number.isSafeInteger(left) || left < 0) {
        this.broken = true;
        return false;
      }
    }
    this.current = { status, headers, mode, left, chunks: [] };
    return true;
  }

  private readChunk(c: NonNullable<AnswerParser['current']>): boolean {
    if (c.left > 0) {
      const take = Math.min(c.left, this.buf.length);
      c.chunks.push(this.buf.subarray(0, take));
      this.buf = this.buf.subarray(take);
      c.left -= take;
      if (c.left > 0) return false;
      c.left = -2; // the CRLF after the chunk's data
    }
    if (c.left === -2) {
      if (this.buf.length < 2) return false;
      this.buf = this.buf.subarray(2);
      c.left = 0;
    }
    const eol = this.buf.indexOf('\r\n');
    if (eol === -1) return false;
    const size = parseInt(this.buf.subarray(0, eol).toString('latin1'), 16);
    if (!Number.isFinite(size) || size < 0) {
      this.broken = true;
      return false;
    }
    if (size === 0) {
      const trailerEnd = this.buf.indexOf('\r\n', eol + 2);
      if (trailerEnd === -1) return false;
      this.buf = this.buf.subarray(trailerEnd + 2);
      return this.complete();
    }
    this.buf = this.buf.subarray(eol + 2);
    c.left = size;
    return true;
  }

  private complete(): boolean {
    const c = this.current;
    if (!c) return false;
    this.answers.push({ status: c.status, headers: c.headers, body: Buffer.concat(c.chunks) });
    this.current = null;
    return true;
  }
}

/** A request's bytes: request line, headers (values as latin1 bytes), a Content-Length for `body`. */
export function requestBytes(method: string, path: string, headers: [string, string][], body: Buffer | null): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`, ...headers.map(([k, v]) => `${k}: ${v}`)];
  if (body !== null) lines.push(`Content-Length: ${body.length}`);
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1');
  return body === null ? head : Buffer.concat([head, body]);
}

/** The status and the spec error code of an answer ("503 provider_unavailable"), for signatures. */
export function statusSignature(a: HttpAnswer): string {
  let code = '';
  try {
    const v = JSON.parse(a.body.toString('utf8')) as { error?: { code?: unknown } };
    if (typeof v.error?.code === 'string') code = ` ${v.error.code}`;
  } catch {
    // Not a JSON error object: the status alone.
  }
  return `${a.status}${code}`;
}
