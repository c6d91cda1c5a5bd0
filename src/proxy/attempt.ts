// One upstream attempt: send the request, read the provider's answer, and decide when to commit.
// Nothing reaches the client before the commit point — the first content event of a stream, or a
// whole valid JSON answer — so everything earlier (connect errors, resets, timeouts, 5xx, in-band
// errors, preamble-only streams) can still fail over invisibly. After the commit, bytes are relayed
// as they arrive, with backpressure both ways, and a broken stream ends with the protocol's own error
// event, never with its normal end marker.
//
// The attempt runs in phases, each a unit with its own typed state: the head decides the phase
// (attempt-head.ts); a JSON answer or an error body is read whole (attempt-body.ts); an event stream
// goes through the relay (attempt-relay.ts). What they share (timers, the ways an attempt ends) is
// the AttemptCore (attempt-core.ts).
import type { UpstreamSink } from '../upstream/client.ts';
import { ErrorReader, JsonReader } from './attempt-body.ts';
import { AttemptCore, type AttemptPhase, DRAINED_DETAIL } from './attempt-core.ts';
import { type AnswerHead, routeHead } from './attempt-head.ts';
import { AFTER_THE_END, StreamRelay } from './attempt-relay.ts';
import { type AttemptTimers, systemTimers } from './attempt-timers.ts';
import type { AttemptInput, AttemptOutcome } from './attempt-types.ts';

export type {
  AttemptInput,
  AttemptLimits,
  AttemptOutcome,
  CommittedOutcome,
  FailureReason,
  UsageAddition,
  BeforeCompleteResult,
} from './attempt-types.ts';

/** Before the upstream's head: only an early end, a broken exchange or a client abort can happen. */
class AwaitingHead implements AttemptPhase {
  readonly kind = 'head';

  private readonly core: AttemptCore;
  constructor(core: AttemptCore) {
    this.core = core;
  }

  onData(): void {
    // A body never comes before its head.
  }

  onEnd(): void {
    this.core.fail('malformed', 'the provider closed without an answer');
  }

  onError(err: Error): void {
    this.core.upstreamFailed(err);
  }

  onIdle(): void {
    // The idle limit is never armed before the head; the first-byte limit covers this phase.
  }

  onClientAborted(): void {
    this.core.clientGone();
  }

  onDrained(): void {
    this.core.fail('drained', DRAINED_DETAIL);
  }
}

/** The Content-Type of a stream decoded from a platform's own format into SSE. */
const DECODED_STREAM_TYPE = 'text/event-stream; charset=utf-8';

/** Receives the upstream exchange and hands each callback to the current phase. */
export class AttemptSink implements UpstreamSink {
  private phase: AttemptPhase;

  private readonly core: AttemptCore;
  private readonly input: Pick<
    AttemptInput,
    'protocol' | 'slugJson' | 'identity' | 'tapHints' | 'decoding' | 'errorBody'
  >;
  constructor(
    core: AttemptCore,
    input: Pick<AttemptInput, 'protocol' | 'slugJson' | 'identity' | 'tapHints' | 'decoding' | 'errorBody'>,
  ) {
    this.core = core;
    this.input = input;
    this.phase = new AwaitingHead(core);
  }

  /** Which phase is reading the answer now (tests). */
  get phaseKind(): AttemptPhase['kind'] {
    return this.phase.kind;
  }

  onHead(status: number, headers: Record<string, string>): void {
    const core = this.core;
    // An interim (1xx) head is not the answer, and an answer has one head: neither changes the phase
    // (nor stops the first-byte limit, which runs until the final head's content).
    if (core.done || status < 200 || this.phase.kind !== 'head') return;
    const { protocol, slugJson } = this.input;
    const route = routeHead(status, headers, this.input.decoding ?? null);
    const head: AnswerHead = { status, headers, identity: this.input.identity };
    switch (route.kind) {
      case 'refused':
        core.fail('malformed', route.detail);
        return;
      case 'stream':
        this.phase = new StreamRelay(core, protocol, protocol.tap(slugJson, this.input.tapHints), head);
        return;
      case 'decoded': {
        // The client gets SSE, whatever the platform's own stream type was.
        const sseHead = { ...head, headers: { ...headers, 'content-type': DECODED_STREAM_TYPE } };
        this.phase = new StreamRelay(
          core,
          protocol,
          protocol.tap(slugJson, this.input.tapHints),
          sseHead,
          route.decoding.decoder(),
        );
        return;
      }
      case 'json':
        this.phase = new JsonReader(core, protocol, slugJson, head, this.input.decoding?.answerBody);
        return;
      case 'error':
        this.phase = new ErrorReader(core, head, this.input.errorBody ?? undefined);
        return;
    }
  }

  onData(chunk: Buffer): void {
    if (!this.core.done) this.phase.onData(chunk);
    // The answer is over (its end marker was seen) and the provider goes on sending: nothing more is
    // read of it, and its connection is not kept waiting for an end that may never come.
    else this.core.ctrl?.abort(new Error(AFTER_THE_END));
  }

  onEnd(): void {
    if (!this.core.done) this.phase.onEnd();
  }

  onError(err: Error): void {
    if (!this.core.done) this.phase.onError(err);
  }

  onRequestSent(): void {
    this.core.requestSent();
  }

  readonly onClientAborted = (): void => {
    if (!this.core.done) this.phase.onClientAborted();
  };

  /** The gateway ends the attempt from outside (its drain deadline passed). */
  readonly onDrained = (): void => {
    if (!this.core.done) this.phase.onDrained();
  };
}

/** Runs one attempt to its outcome. `timers` is for tests; production uses Node's. */
export function runAttempt(input: AttemptInput, timers: AttemptTimers = systemTimers): Promise<AttemptOutcome> {
  return new Promise<AttemptOutcome>((resolve) => {
    let unwatch: (() => void) | null = null;
    const done = (outcome: AttemptOutcome): void => {
      unwatch?.();
      resolve(outcome);
    };
    const body = input.call.body;
    const streamedBody = typeof body !== 'string' && !Buffer.isBuffer(body);
    const core = new AttemptCore(input.reply, input.limits, timers, done, input.beforeComplete, streamedBody);
    const sink = new AttemptSink(core, input);
    input.reply.onAborted(sink.onClientAborted);
    core.ctrl = input.client.call(input.call, sink);
    // Watched after the call is made, so a drain always has an upstream exchange to cancel.
    if (input.stop && !core.done) unwatch = input.stop.watch(sink.onDrained);
  });
}
