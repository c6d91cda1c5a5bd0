// What every phase of one attempt shares: whether the outcome is decided, the upstream control, when
// the answer began, its timers (first byte, stream idle, client write stall), and the ways an attempt
// ends (finish, fail, the beforeComplete hook ahead of the last bytes). The phases themselves (head, JSON body, error
// body, stream relay) hold their own typed state and call in here.
import type { Reply } from '../http/reply.ts';
import { DispatchRefused, type UpstreamControl } from '../upstream/client.ts';
import type { AttemptTimer, AttemptTimers } from './attempt-timers.ts';
import type {
  AttemptInput,
  AttemptLimits,
  AttemptOutcome,
  CommittedOutcome,
  FailureReason,
  UsageAddition,
  BeforeCompleteResult,
} from './attempt-types.ts';

/** What a silence of `streamIdleTimeoutMs` means depends on the phase that armed the idle timer. */
export interface IdleWatcher {
  onIdle(): void;
}

/** One phase of an attempt: what it does with the upstream's callbacks after the head, a silence
 *  past the idle limit, a client that went away, and the gateway ending it from outside (the drain
 *  deadline). `kind` tells the phases apart. */
export interface AttemptPhase extends IdleWatcher {
  readonly kind: 'head' | 'json' | 'error' | 'stream';
  onData(chunk: Buffer): void;
  onEnd(): void;
  onError(err: Error): void;
  onClientAborted(): void;
  onDrained(): void;
}

/** What a phase says when the gateway ends an attempt at its drain deadline. */
export const DRAINED_DETAIL = 'the gateway is shutting down';

export function classifyError(err: Error): FailureReason {
  if (err instanceof DispatchRefused) return 'not_sent';
  const code = 'code' in err && typeof err.code === 'string' ? err.code : '';
  if (/CONNECT|ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN/.test(code)) return 'connect';
  return 'reset';
}

export class AttemptCore {
  /** The outcome is decided: nothing more is written, and every later callback is ignored. */
  done = false;
  /** The upstream exchange, once dispatched (before that an abort has nothing to stop). */
  ctrl: UpstreamControl | null = null;
  /** When the provider's answer began, in ms since the attempt started; null until then. */
  firstByteMs: number | null = null;
  /** Where the first-byte time is measured from: the attempt's start, or, for a streamed upload,
   *  the moment it was handed whole to the provider's connection. */
  private t0: number;
  /** Null while a streamed upload is still being sent: the client's pace is not the provider's. */
  private firstByteTimer: AttemptTimer | null = null;
  private idleTimer: AttemptTimer | null = null;
  /** Running: the timer is due; fired: it went off (the next armIdle starts it again); stopped:
   *  cleared for good (armIdle does nothing). */
  private idleState: 'running' | 'fired' | 'stopped' = 'running';
  /** When the provider last sent bytes: the idle timer checks it when due instead of being moved at
   *  every chunk (moving a Node timer takes it out of its list and puts it back, per event). */
  private lastActivity = 0;
  private idleWatcher: IdleWatcher | null = null;
  private stallTimer: AttemptTimer | null = null;

  readonly reply: Reply;
  readonly limits: AttemptLimits;
  readonly timers: AttemptTimers;
  private readonly resolve: (outcome: AttemptOutcome) => void;
  private readonly beforeComplete: AttemptInput['beforeComplete'];
  constructor(
    reply: Reply,
    limits: AttemptLimits,
    timers: AttemptTimers,
    resolve: (outcome: AttemptOutcome) => void,
    beforeComplete: AttemptInput['beforeComplete'],
    /** The request body is streamed (an upload): the first-byte limit starts once it was sent. */
    streamedBody = false,
  ) {
    this.reply = reply;
    this.limits = limits;
    this.timers = timers;
    this.resolve = resolve;
    this.beforeComplete = beforeComplete;
    this.t0 = timers.now();
    if (!streamedBody) this.firstByteTimer = timers.start(this.onFirstByteTimeout, limits.firstByteTimeoutMs);
  }

  /** A streamed request body was sent whole: from now on the provider is timed (first-byte limit,
   *  first-byte time). Once its answer has begun, nothing changes. */
  requestSent(): void {
    if (this.done || this.firstByteTimer !== null || this.firstByteMs !== null) return;
    this.t0 = this.timers.now();
    this.firstByteTimer = this.timers.start(this.onFirstByteTimeout, this.limits.firstByteTimeoutMs);
  }

  private readonly onFirstByteTimeout = (): void => {
    // Every commit point clears this timer, so only a provider that has not answered yet gets here.
    if (this.done) return;
    this.fail('timeout', `provider did not start answering within ${this.limits.firstByteTimeoutMs} ms`);
  };

  private readonly onIdleTimeout = (): void => {
    if (this.done || this.idleState !== 'running') return;
    const limit = this.limits.streamIdleTimeoutMs;
    const quiet = this.timers.now() - this.lastActivity;
    if (quiet < limit) {
      // Bytes came since the timer was set: due again when the silence since then reaches the limit.
      this.idleTimer = this.timers.start(this.onIdleTimeout, limit - quiet);
      return;
    }
    this.idleState = 'fired';
    this.idleWatcher?.onIdle();
  };

  /** Milliseconds since the attempt started (since its streamed upload was sent, once it was). */
  elapsed(): number {
    return this.timers.now() - this.t0;
  }

  /** The provider's answer began: the first-byte limit no longer applies. */
  markFirstByte(): number {
    this.firstByteTimer?.close();
    const ms = this.elapsed();
    this.firstByteMs = ms;
    return ms;
  }

  /** (Re)starts the idle limit; `watcher` decides what a silence means. */
  armIdle(watcher: IdleWatcher): void {
    this.lastActivity = this.timers.now();
    if (this.idleTimer) {
      if (this.idleState !== 'fired') return;
      this.idleState = 'running';
      this.idleTimer = this.timers.start(this.onIdleTimeout, this.limits.streamIdleTimeoutMs);
      return;
    }
    this.idleWatcher = watcher;
    this.idleState = 'running';
    this.idleTimer = this.timers.start(this.onIdleTimeout, this.limits.streamIdleTimeoutMs);
  }

  /** Drops the idle timer so that the next armIdle() starts a fresh one (whatever state it was in). */
  dropIdle(): void {
    if (this.idleTimer) this.idleTimer.close();
    this.idleTimer = null;
  }

  /** The client stopped taking bytes: `onStall` runs unless it drains within `writeStallTimeoutMs`
   *  (clearWriteStall). One stall timer at a time; arming again while one runs changes nothing. */
  armWriteStall(onStall: () => void): void {
    if (this.stallTimer) return;
    this.stallTimer = this.timers.start(() => {
      this.stallTimer = null;
      if (!this.done) onStall();
    }, this.limits.writeStallTimeoutMs);
  }

  /** The client took bytes again. */
  clearWriteStall(): void {
    if (this.stallTimer) this.stallTimer.close();
    this.stallTimer = null;
  }

  /** Stops every timer (the answer is complete and being delivered, or the attempt is over). The
   *  idle timer is stopped, not dropped: a later armIdle() leaves it stopped. */
  clearTimers(): void {
    this.firstByteTimer?.close();
    if (this.idleTimer) this.idleTimer.close();
    this.idleState = 'stopped';
    this.clearWriteStall();
  }

  finish(outcome: AttemptOutcome): void {
    if (this.done) return;
    this.done = true;
    this.clearTimers();
    this.resolve(outcome);
  }

  /** Ends the attempt before its commit point: the upstream exchange is dropped with the reason. */
  fail(reason: FailureReason, detail: string): void {
    this.ctrl?.abort(new Error(detail));
    this.finish({ kind: 'failed', reason, detail, firstByteMs: this.firstByteMs });
  }

  /** The upstream exchange broke before the commit point (it is over already: nothing to abort). */
  upstreamFailed(err: Error): void {
    this.finish({ kind: 'failed', reason: classifyError(err), detail: err.message, firstByteMs: this.firstByteMs });
  }

  /** The client went away before anything was committed. */
  clientGone(): void {
    this.ctrl?.abort(new Error('client went away'));
    this.finish({
      kind: 'failed',
      reason: 'client_aborted',
      detail: 'client went away',
      firstByteMs: this.firstByteMs,
    });
  }

  /** Runs the beforeComplete hook, then `deliver` with what the hook adds to the answer's usage
   *  (which sends the last bytes and finishes); a returned promise delays `deliver` until it settles
   *  either way (a failed hook adds nothing). */
  complete(outcome: CommittedOutcome, deliver: (added: UsageAddition) => void): void {
    let r: BeforeCompleteResult = null;
    try {
      r = this.beforeComplete?.(outcome);
    } catch {
      // The hook owns its failures (it logs them); the answer is still delivered.
    }
    if (r instanceof Promise)
      r.then(
        (added) => deliver(added ?? null),
        () => deliver(null),
      );
    else deliver(r ?? null);
  }
}
