// The stream phase of an attempt: preamble events are held (up to preambleMaxBytes) until the first
// content event commits the attempt; from then on events are relayed as they arrive, with
// backpressure both ways and the stream-idle limit. A stream that breaks after the commit ends with
// the protocol's own error event and never with its normal end marker; a stream that completes waits
// for beforeComplete (the settlement) before its end marker and end go out.
//
// The event that carries the answer's usage (Chat's usage frame, Messages' message_delta) is held
// back while it is the stream's last event: when the end follows it, the settlement adds what it
// charged to that usage (src/protocols/usage-cost.ts) and it goes out with the end; any other content
// event after it sends it on unchanged first (a keep-alive passes it). An end event that carries the usage itself
// (Responses'
// response.completed) gets the addition as it goes out.
//
// A client that takes no bytes for the write-stall limit while the relay waits on it (backpressure)
// is cut: the error event is queued behind what it has not read (it gets it if it reads again before
// the server library drops the connection), the upstream is cancelled, the outcome is `write_stall`.
// The drain deadline ends a live stream the same way, as `drained`.
//
// A platform whose stream is not SSE (Bedrock's binary event stream) hands a decoder: upstream bytes
// go through it first and come out as SSE events, which the protocol's tap reads as any other; a frame
// the decoder cannot read is a malformed event (before the commit: fail over; after: broken stream).
import type { StreamDecoder } from '../platforms/types.ts';
import type { ProtocolModule, StreamTap, TappedEvent } from '../protocols/types.ts';
import { addToUsage, type UsagePlace } from '../protocols/usage-cost.ts';
import { isBlankOrComment, SseSplitter } from '../stream/sse-splitter.ts';
import { type AttemptCore, type AttemptPhase, DRAINED_DETAIL } from './attempt-core.ts';
import { type AnswerHead, providerHeaders } from './attempt-head.ts';
import type { CommittedOutcome, FailureReason, UsageAddition } from './attempt-types.ts';

type RelayState =
  /** Before the commit point: nothing has reached the client; preamble events wait here. */
  | { kind: 'preamble'; held: Buffer[]; heldBytes: number }
  /** Committed: events go to the client as they arrive. */
  | { kind: 'live' }
  /** The normal end was seen and is being delivered: later upstream bytes or errors change nothing. */
  | { kind: 'completing' };

type Preamble = Extract<RelayState, { kind: 'preamble' }>;

const LIVE: RelayState = { kind: 'live' };
const COMPLETING: RelayState = { kind: 'completing' };
const NOTHING = Buffer.alloc(0);
export const AFTER_THE_END = 'the provider kept sending after its answer ended';

export class StreamRelay implements AttemptPhase {
  readonly kind = 'stream';
  private state: RelayState = { kind: 'preamble', held: [], heldBytes: 0 };
  /** The client is not keeping up: the upstream read is paused until the reply is writable again. */
  private paused = false;
  /** The last event, when it carries the answer's usage: sent with the end (the settlement's
   *  addition in it) or before the next event. */
  private heldUsage: Buffer | null = null;
  private readonly usagePlace: UsagePlace;
  private readonly splitter: SseSplitter;

  private readonly core: AttemptCore;
  private readonly protocol: ProtocolModule;
  private readonly tap: StreamTap;
  private readonly head: AnswerHead;
  private readonly decoder: StreamDecoder | null;
  constructor(
    core: AttemptCore,
    protocol: ProtocolModule,
    tap: StreamTap,
    head: AnswerHead,
    /** Turns the platform's own stream format into SSE first; null for an SSE answer. */
    decoder: StreamDecoder | null = null,
  ) {
    this.core = core;
    this.protocol = protocol;
    this.tap = tap;
    this.head = head;
    this.decoder = decoder;
    this.splitter = new SseSplitter(core.limits.maxUpstreamEventBytes);
    this.usagePlace =
      protocol.usageEventContainer === undefined
        ? { form: 'event' }
        : { form: 'event', container: protocol.usageEventContainer };
  }

  onData(chunk: Buffer): void {
    const kind = this.state.kind;
    if (kind === 'completing') {
      // The end marker was seen and the provider goes on: nothing more is read of it (its
      // connection is not kept for an end that may never come); the answer completes as it is.
      this.core.ctrl?.abort(new Error(AFTER_THE_END));
      return;
    }
    if (kind === 'live') this.core.armIdle(this);
    const decoder = this.decoder;
    const sse = decoder ? this.decode(decoder, chunk) : chunk;
    if (sse === null) return;
    this.onEvents(this.splitter.push(sse));
    // Done, or the end marker was seen (onEvents may have moved the state on): what follows changes nothing.
    if (this.core.done || (this.state as RelayState).kind === 'completing') return;
    // The events before an unreadable frame or an oversized event went their way first; the frame or
    // event itself ends the attempt.
    if (decoder?.failure) {
      this.unreadable(decoder.failure);
      return;
    }
    const max = this.core.limits.maxUpstreamEventBytes;
    if (this.splitter.tooLarge || (decoder !== null && decoder.pendingBytes > max)) this.tooLarge(max);
  }

  /** A provider event past the event size limit: before the commit point a provider failure, after
   *  it a broken stream. */
  private tooLarge(max: number): void {
    const detail = `a provider event exceeded ${max} bytes`;
    if (this.state.kind === 'live') this.breakStream('too_large', detail);
    else this.core.fail('too_large', detail);
  }

  /** SSE bytes of a decoded chunk, or null when the decoder threw (the attempt is ended). */
  private decode(decoder: StreamDecoder, chunk: Buffer): Buffer | null {
    try {
      return decoder.push(chunk);
    } catch (err) {
      // A decoder that throws is a bug; it ends this attempt, never the process.
      this.unreadable(err instanceof Error ? err.message : String(err));
      return null;
    }
  }

  /** A frame of the platform's format could not be read: malformed, before or after the commit. */
  private unreadable(why: string): void {
    const detail = `the provider sent an unreadable stream frame (${why})`;
    if (this.state.kind === 'live') this.breakStream('malformed', detail);
    else this.core.fail('malformed', detail);
  }

  onEnd(): void {
    const s = this.state;
    if (s.kind === 'completing') return;
    if (this.decoder && this.decoder.pendingBytes > 0) {
      // The upstream ended inside a frame of its own format.
      if (s.kind === 'live') this.breakStream('malformed', 'the provider stream ended inside a frame');
      else this.core.fail('malformed', 'the provider stream ended inside a frame');
      return;
    }
    const rest = this.splitter.flush();
    if (rest && !isBlankOrComment(rest)) {
      // An unterminated last event: treat it as a broken frame rather than guess.
      if (s.kind === 'live') this.breakStream('malformed', 'the provider stream ended inside an event');
      else this.core.fail('malformed', 'the provider stream ended inside an event');
      return;
    }
    if (s.kind === 'preamble') this.core.fail('empty', 'the provider stream ended before any content');
    else if (!this.tap.completed) this.breakStream('reset', 'the provider stream ended before its end marker');
    else this.completeStream(null);
  }

  onError(err: Error): void {
    const kind = this.state.kind;
    if (kind === 'completing') return;
    if (kind === 'live') this.breakStream('reset', 'the provider connection broke');
    else this.core.upstreamFailed(err);
  }

  onIdle(): void {
    // Silence while we hold the upstream paused is ours, not a stall.
    if (this.paused) return;
    const ms = this.core.limits.streamIdleTimeoutMs;
    if (this.state.kind === 'preamble') this.core.fail('timeout', `provider went silent for ${ms} ms before answering`);
    else this.breakStream('timeout', `the provider stream stalled for ${ms} ms`);
  }

  onClientAborted(): void {
    if (this.state.kind === 'preamble') {
      this.core.clientGone();
      return;
    }
    this.core.ctrl?.abort(new Error('client went away'));
    this.core.finish(this.outcome('client_aborted'));
  }

  onDrained(): void {
    const kind = this.state.kind;
    // Completing: the end marker was seen and goes out once settled; nothing to cut.
    if (kind === 'preamble') this.core.fail('drained', DRAINED_DETAIL);
    else if (kind === 'live') this.breakStream('drained', DRAINED_DETAIL, 'gateway_shutdown');
  }

  /** The events one upstream chunk completed, in order. Bytes for the client are gathered into one
   *  write per chunk; the first content event goes out together with the held preamble. */
  private onEvents(events: Buffer[]): void {
    const out: Buffer[] = [];
    for (const ev of events) {
      if (this.core.done) return;
      const s = this.state;
      if (isBlankOrComment(ev)) {
        // Comments are keep-alives: relayed once committed, not held as preamble.
        if (s.kind !== 'preamble') out.push(ev);
        continue;
      }
      const t = this.tap.onEvent(ev);
      if (s.kind === 'preamble') {
        if (!this.beforeCommit(s, t)) return;
      } else if (t.kind === 'preamble') {
        // A keep-alive (a ping) may pass a held usage event: it says nothing about the answer.
        out.push(t.out);
      } else if (t.kind === 'content') {
        this.sendHeldUsage(out);
        if (t.usage === true) this.heldUsage = t.out;
        else out.push(t.out);
      } else {
        this.afterCommitEnd(t, out);
        return;
      }
      // The protocol's end came in an event that is output too (a final event that opened the
      // answer): the stream is complete, and nothing the provider sends after it is relayed.
      if (this.tap.completed && this.state.kind === 'live') {
        this.flush(out);
        this.completeStream(null);
        return;
      }
    }
    this.flush(out);
  }

  /** One event before the commit point; false when it ended the attempt. */
  private beforeCommit(s: Preamble, t: TappedEvent): boolean {
    switch (t.kind) {
      case 'preamble':
        s.held.push(t.out);
        s.heldBytes += t.out.length;
        // A provider that only talks preamble past the bound gets committed rather than buffered.
        if (s.heldBytes > this.core.limits.preambleMaxBytes) this.commit(s, NOTHING);
        return true;
      case 'content':
        // A first content event that carries the usage goes out with the end, like any other.
        if (t.usage === true) this.heldUsage = t.out;
        this.commit(s, t.usage === true ? NOTHING : t.out);
        return true;
      case 'error':
        this.core.fail('inband_error', 'the provider stream opened with an error event');
        return false;
      case 'malformed':
        this.core.fail('malformed', 'the provider sent a malformed event before any content');
        return false;
      case 'terminal':
        this.core.fail('empty', 'the provider stream ended before any content');
        return false;
    }
  }

  /** A committed stream's last event (terminal, provider error or malformed), after `out`. */
  private afterCommitEnd(t: TappedEvent, out: Buffer[]): void {
    if (t.kind === 'terminal') {
      this.flush(out);
      this.completeStream(t.out, t.usage === true);
    } else if (t.kind === 'error') {
      // The provider's own error event after content: pass it on, then end without a normal end.
      this.sendHeldUsage(out);
      out.push(t.out);
      this.flush(out);
      this.core.ctrl?.abort(new Error('provider error event'));
      if (!this.core.reply.done) this.core.reply.end();
      this.core.finish(this.outcome('inband_error'));
    } else {
      this.flush(out);
      this.breakStream('malformed', 'the provider sent a malformed event');
    }
  }

  /** The commit point: the client gets the head, the held preamble and `first` in one write. */
  private commit(s: Preamble, first: Buffer): void {
    this.state = LIVE;
    const core = this.core;
    core.markFirstByte();
    core.armIdle(this);
    const head = providerHeaders(this.head, this.tap.upstreamModel, false);
    const parts = s.held.length > 0 ? Buffer.concat([...s.held, first]) : first;
    core.reply.cork(() => {
      core.reply.startStream(this.head.status, head);
      // Nothing to write when the first content event is a held usage event (an empty write could
      // read as the end of a chunked body).
      if (parts.length > 0) this.write(parts);
    });
  }

  /** The held usage event goes out as it is (another event follows it, or the stream breaks). */
  private sendHeldUsage(out: Buffer[]): void {
    if (this.heldUsage === null) return;
    out.push(this.heldUsage);
    this.heldUsage = null;
  }

  private flush(out: Buffer[]): void {
    if (out.length > 1) this.write(Buffer.concat(out));
    else if (out.length === 1) this.write(out[0] ?? NOTHING);
  }

  private write(buf: Buffer): void {
    const reply = this.core.reply;
    if (reply.done) return;
    if (!reply.write(buf) && !this.paused) {
      // The client is slower than the provider: stop reading upstream until it drains, and drop
      // the idle timer (see AttemptCore.dropIdle) until then; a client that takes nothing for the
      // write-stall limit is cut.
      this.paused = true;
      this.core.ctrl?.pause();
      this.core.dropIdle();
      if (this.state.kind === 'live') this.core.armWriteStall(this.onWriteStall);
      reply.onWritable(this.onWritable);
    }
  }

  private readonly onWriteStall = (): void => {
    if (!this.paused || this.state.kind !== 'live') return;
    this.breakStream(
      'write_stall',
      `the client took no bytes for ${this.core.limits.writeStallTimeoutMs} ms`,
      'write_stall',
    );
  };

  private readonly onWritable = (): void => {
    this.paused = false;
    this.core.clearWriteStall();
    if (this.core.done) return;
    // Once the end marker was seen (completing: the settlement is being committed), the upstream is
    // over: a slow commit must not be taken for a stalled provider.
    if (this.state.kind !== 'live') return;
    this.core.armIdle(this);
    this.core.ctrl?.resume();
  };

  /** Ends a committed stream that cannot finish properly: the protocol's error event, then the end. */
  private breakStream(reason: FailureReason, message: string, code = 'upstream_stream_error'): void {
    const core = this.core;
    core.ctrl?.abort(new Error(message));
    const reply = core.reply;
    const held = this.heldUsage;
    this.heldUsage = null;
    if (!reply.done) {
      reply.cork(() => {
        if (held !== null) reply.write(held);
        reply.write(this.protocol.streamErrorEvent(`${message}; the answer is incomplete`, code));
        reply.end();
      });
    }
    core.finish(this.outcome(reason));
  }

  /** The stream reached its normal end: settle first, then the held usage event and the end marker
   *  (if any) with the settlement's addition in whichever carries the usage, and the end. */
  private completeStream(finalBytes: Buffer | null, finalCarriesUsage = false): void {
    this.state = COMPLETING;
    const core = this.core;
    core.clearTimers();
    const outcome = this.outcome(null);
    core.complete(outcome, (added: UsageAddition) => {
      let held = this.heldUsage;
      this.heldUsage = null;
      let last = finalBytes;
      if (added !== null) {
        if (finalCarriesUsage && last !== null) last = addToUsage(last, added, this.usagePlace);
        else if (held !== null) held = addToUsage(held, added, this.usagePlace);
      }
      const reply = core.reply;
      if (!reply.done) {
        reply.cork(() => {
          if (held !== null) reply.write(held);
          if (last) reply.write(last);
          reply.end();
        });
      }
      core.finish(outcome);
    });
  }

  /** The committed outcome so far; the client side ended it when it went away or stopped reading. */
  private outcome(broken: FailureReason | null): CommittedOutcome {
    const clientAborted = broken === 'client_aborted' || broken === 'write_stall';
    const tap = this.tap;
    return {
      kind: 'committed',
      status: this.head.status,
      stream: true,
      upstreamModel: tap.upstreamModel,
      usage: tap.usage(),
      inputUsage: tap.inputUsage(),
      completed: tap.completed,
      broken,
      clientAborted,
      firstByteMs: this.core.firstByteMs ?? this.core.elapsed(),
      contentEvents: tap.contentEvents,
      contentBytes: tap.contentBytes,
    };
  }
}
