// One upstream exchange as undici's DispatchHandler sees it, and as the caller controls it (abort,
// pause, resume). What reaches the caller's sink is an answer in order — its final head, body chunks,
// then exactly one end or error — whatever undici or the connection does:
//
// - Interim (1xx) heads are not answers: they are ignored (RFC 9110 §15.2), so the caller's
//   first-byte and idle timers keep running until the final head.
// - Pausing never pauses undici's parser (see ./connection-guard.ts): the connection's guard stops
//   feeding it, and the few chunks the parser still delivers from the bytes it already had wait here,
//   with the end of the answer behind them, until resume.
// - A streamed request body tells the sink when it was handed whole to the connection, so the caller
//   can time the provider from then on, not from the start of a slow upload.
// - An exception thrown by the caller's sink ends this exchange (the upstream is aborted and the sink
//   hears the error once), never undici's connection handling or the process.
import type { Dispatcher } from 'undici';
import { announceRequest, type ConnectionGuard, type GuardedExchange } from './connection-guard.ts';

/** Receives one upstream exchange. Exactly one of onEnd / onError ends it, unless the caller aborts it first (then
 *  neither). */
export interface UpstreamSink {
  onHead(status: number, headers: Record<string, string>): void;
  onData(chunk: Buffer): void;
  onEnd(): void;
  onError(err: Error): void;
  /** A streamed request body was handed whole to the connection (an in-memory body goes at once,
   *  and this is not called for it). */
  onRequestSent?(): void;
}

export interface UpstreamControl {
  abort(reason?: Error): void;
  pause(): void;
  resume(): void;
}

/** undici refused the call before starting it (it threw, or reported an error, inside `dispatch`): a
 *  header or body the gateway built, never anything the provider did. */
export class DispatchRefused extends Error {
  constructor(cause: unknown) {
    super(`the gateway could not send the request: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
    this.name = 'DispatchRefused';
  }
}

export class Exchange implements Dispatcher.DispatchHandler, UpstreamControl, GuardedExchange {
  /** The caller paused: nothing more goes to the sink until it resumes. */
  held = false;
  /** Inside agent.dispatch: an error before the request started is undici refusing the call. */
  dispatching = false;
  private controller: Dispatcher.DispatchController | null = null;
  private pendingAbort: Error | null = null;
  /** The sink heard its end or error, or the caller aborted: nothing more goes to the sink. */
  private finished = false;
  private connection: ConnectionGuard | null = null;
  /** Body chunks that arrived while held, in order, and whether the answer's end is behind them. */
  private waiting: Buffer[] = [];
  private endWaiting = false;

  private readonly sink: UpstreamSink;
  constructor(sink: UpstreamSink) {
    this.sink = sink;
  }

  /** The streamed request body was read to its end by the connection's writer. */
  requestSent(): void {
    const sink = this.sink;
    if (!this.finished && sink.onRequestSent) this.safely(() => sink.onRequestSent?.());
  }

  onRequestStart(ctrl: Dispatcher.DispatchController): void {
    this.controller = ctrl;
    if (this.pendingAbort) ctrl.abort(this.pendingAbort);
    else announceRequest(this);
  }

  onResponseStart(
    _ctrl: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // An interim head (102 Processing, 103 Early Hints…) is not the answer: the final one follows.
    if (this.finished || statusCode < 200) return;
    this.safely(() => this.sink.onHead(statusCode, flattenHeaders(headers)));
  }

  onResponseData(_ctrl: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.finished) return;
    if (this.held || this.waiting.length > 0) this.waiting.push(chunk);
    else this.safely(() => this.sink.onData(chunk));
  }

  onResponseEnd(): void {
    this.detach();
    if (this.finished) return;
    if (this.held || this.waiting.length > 0) this.endWaiting = true;
    else this.end();
  }

  onResponseError(_ctrl: Dispatcher.DispatchController | null, err: Error): void {
    this.detach();
    this.fail(this.dispatching && this.controller === null ? new DispatchRefused(err) : err);
  }

  /** undici threw inside dispatch. */
  refused(err: unknown): void {
    this.fail(new DispatchRefused(err));
  }

  attach(guard: ConnectionGuard): void {
    if (this.finished) guard.release(this);
    else this.connection = guard;
  }

  connectionFailed(err: Error): void {
    this.connection = null;
    this.fail(err);
  }

  abort(reason?: Error): void {
    if (this.finished) return;
    // The caller ends the exchange and already knows why: undici reports the abort back through
    // onResponseError synchronously, which would re-enter the caller with a misleading "reset".
    this.finished = true;
    this.waiting = [];
    this.detach();
    const err = reason ?? new Error('aborted');
    if (this.controller) this.controller.abort(err);
    else this.pendingAbort = err;
  }

  pause(): void {
    this.held = true;
  }

  resume(): void {
    if (!this.held) return;
    this.held = false;
    let next = 0;
    while (!this.held && !this.finished && next < this.waiting.length) {
      const chunk = this.waiting[next++] as Buffer;
      this.safely(() => this.sink.onData(chunk));
    }
    this.waiting = next === 0 ? this.waiting : this.waiting.slice(next);
    if (this.held || this.finished) return;
    if (this.endWaiting) this.end();
    else this.connection?.wake();
  }

  private end(): void {
    this.finished = true;
    this.safely(() => this.sink.onEnd());
  }

  private fail(err: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.waiting = [];
    try {
      this.sink.onError(err);
    } catch {
      // The sink failed while handling the failure: the exchange is over either way.
    }
  }

  /** Runs a sink callback; one that throws ends the exchange with its error. */
  private safely(fn: () => void): void {
    try {
      fn();
    } catch (thrown) {
      const err = thrown instanceof Error ? thrown : new Error(String(thrown));
      if (this.finished) return;
      this.controller?.abort(err);
      this.fail(err);
    }
  }

  private detach(): void {
    this.connection?.release(this);
    this.connection = null;
  }
}

function flattenHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in h) {
    const v = h[k];
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}
