// The two phases that read a whole upstream body before answering: a 2xx JSON answer (decoded from
// its content encoding as it arrives and size-capped, ./answer-body.ts; checked by the protocol, then
// committed: beforeComplete runs before the body is sent) and a non-2xx error body (its head kept up to a cap, handed
// to the
// failover loop as a provider_error, never sent from here).
import type { AnswerDecoding } from '../platforms/types.ts';
import type { ProtocolModule } from '../protocols/types.ts';
import { addToUsage, type UsagePlace } from '../protocols/usage-cost.ts';
import { findStringValue, readString } from '../stream/json-key.ts';
import { type AnswerBody, answerBody, BodyBuffer, type BodyResult } from './answer-body.ts';
import { type AttemptCore, type AttemptPhase, DRAINED_DETAIL } from './attempt-core.ts';
import { type AnswerHead, providerHeaders } from './attempt-head.ts';
import type { AttemptInput, CommittedOutcome } from './attempt-types.ts';

export { BodyBuffer } from './answer-body.ts';

/** A JSON answer's usage is a member of its top-level object, on every protocol. */
const JSON_USAGE: UsagePlace = { form: 'json' };

/** An error body is kept up to this many bytes (the rest is dropped, the answer still passed on). */
export const MAX_ERROR_BODY = 1024 * 1024;

type JsonState =
  /** Collecting the body (decoded as it arrives). */
  | { kind: 'reading'; body: AnswerBody }
  /** The provider is done; the body's decoding is finishing. */
  | { kind: 'decoding'; body: AnswerBody }
  /** A usable answer is committed: beforeComplete runs, then the body goes out. */
  | { kind: 'delivering'; outcome: CommittedOutcome };

/** A 2xx answer that is not an event stream: read whole (decoded from its content encoding, within
 *  the body limit), then committed and sent in one piece. */
export class JsonReader implements AttemptPhase {
  readonly kind = 'json';
  private state: JsonState;

  private readonly core: AttemptCore;
  private readonly protocol: ProtocolModule;
  private readonly slugJson: Buffer;
  private readonly head: AnswerHead;
  private readonly platformAnswer: AnswerDecoding['answerBody'];
  constructor(
    core: AttemptCore,
    protocol: ProtocolModule,
    slugJson: Buffer,
    head: AnswerHead,
    /** The adapter's rewrite of a platform's 2xx answer into the protocol's shape, if it has one. */
    platformAnswer?: AnswerDecoding['answerBody'],
  ) {
    this.core = core;
    this.protocol = protocol;
    this.slugJson = slugJson;
    this.head = head;
    this.platformAnswer = platformAnswer;
    this.state = {
      kind: 'reading',
      body: answerBody(head.headers['content-encoding'], core.limits.maxUpstreamBodyBytes, this.onBody),
    };
  }

  onData(chunk: Buffer): void {
    const s = this.state;
    if (s.kind !== 'reading') return;
    const core = this.core;
    if (core.firstByteMs === null) core.markFirstByte();
    // A body that stops midway must not hold the request forever.
    core.armIdle(this);
    s.body.add(chunk);
  }

  onEnd(): void {
    const s = this.state;
    if (s.kind !== 'reading') return;
    // The provider is done: what remains (decoding) is the gateway's own work, not a provider silence.
    this.core.dropIdle();
    this.state = { kind: 'decoding', body: s.body };
    s.body.end();
  }

  /** The body's result: a failure as soon as it is known, or the decoded body after the end. */
  private readonly onBody = (r: BodyResult): void => {
    const core = this.core;
    if (core.done || this.state.kind === 'delivering') return;
    if (r.kind !== 'ok') {
      core.fail(r.kind, r.detail);
      return;
    }
    const errorStatus = this.protocol.inbandErrorStatus?.(r.body) ?? null;
    if (errorStatus !== null) {
      this.inbandError(errorStatus, r.body);
      return;
    }
    const body = this.platformAnswer ? this.platformAnswer(r.body) : r.body;
    const answer = body === null ? null : this.protocol.readJson(body, this.slugJson);
    if (answer === null) {
      core.fail('malformed', 'the provider answer was not a usable JSON body');
      return;
    }
    core.clearTimers();
    const firstByteMs = core.firstByteMs ?? core.elapsed();
    core.firstByteMs = firstByteMs;
    const outcome: CommittedOutcome = {
      kind: 'committed',
      status: this.head.status,
      stream: false,
      upstreamModel: answer.upstreamModel,
      usage: answer.usage,
      inputUsage: null,
      completed: true,
      broken: null,
      clientAborted: core.reply.aborted,
      firstByteMs,
      contentEvents: 0,
      contentBytes: answer.body.length,
    };
    this.state = { kind: 'delivering', outcome };
    core.complete(outcome, (added) => {
      const body = added === null ? answer.body : addToUsage(answer.body, added, JSON_USAGE);
      core.reply.send(this.head.status, providerHeaders(this.head, answer.upstreamModel, false), body);
      core.finish(outcome);
    });
  };

  /** A 2xx whose body is the provider's error: the provider's error, with the status it stands for
   *  (the body goes on decoded, so without its Content-Encoding). */
  private inbandError(status: number, body: Buffer): void {
    const core = this.core;
    const head: AnswerHead = { ...this.head, status };
    core.finish({
      kind: 'provider_error',
      status,
      headers: providerHeaders(head, null, false),
      body,
      firstByteMs: core.firstByteMs ?? core.elapsed(),
    });
  }

  /** The attempt ends before the answer was committed: the body's decoding stops with it. */
  private closeBody(): void {
    const s = this.state;
    if (s.kind !== 'delivering') s.body.close();
  }

  onError(err: Error): void {
    if (this.state.kind !== 'reading') return;
    this.closeBody();
    this.core.upstreamFailed(err);
  }

  onIdle(): void {
    this.closeBody();
    this.core.fail('timeout', `provider went silent for ${this.core.limits.streamIdleTimeoutMs} ms before answering`);
  }

  onClientAborted(): void {
    const core = this.core;
    const s = this.state;
    if (s.kind !== 'delivering') {
      s.body.close();
      core.clientGone();
      return;
    }
    // Gone while beforeComplete was pending: the answer is committed but never sent. The outcome is
    // the answer's own (usage, model, size), marked as abandoned by the client.
    core.ctrl?.abort(new Error('client went away'));
    core.finish({ ...s.outcome, broken: 'client_aborted', clientAborted: true });
  }

  onDrained(): void {
    // Delivering: the answer is whole and goes out once settled; only a body still coming is cut.
    if (this.state.kind === 'delivering') return;
    this.closeBody();
    this.core.fail('drained', DRAINED_DETAIL);
  }
}

/** A non-2xx answer: its body (head kept up to MAX_ERROR_BODY) becomes a provider_error outcome. */
export class ErrorReader implements AttemptPhase {
  readonly kind = 'error';
  private readonly body = new BodyBuffer(MAX_ERROR_BODY);

  private readonly core: AttemptCore;
  private readonly head: AnswerHead;
  private readonly errorBody?: AttemptInput['errorBody'];
  /** The error head is the provider's first byte; the idle limit starts with it, so an error body
   *  that stops midway cannot hold the request forever. */
  constructor(
    core: AttemptCore,
    head: AnswerHead,
    /** The rewrite of a platform's own error body into the protocol's error shape, if it has one. */
    errorBody?: AttemptInput['errorBody'],
  ) {
    this.core = core;
    this.head = head;
    this.errorBody = errorBody;
    core.markFirstByte();
    core.armIdle(this);
  }

  onData(chunk: Buffer): void {
    this.core.armIdle(this);
    // Past the cap the rest is dropped: the head of an oversized error body is what gets passed on.
    this.body.add(chunk);
  }

  onEnd(): void {
    const core = this.core;
    const { status, headers } = this.head;
    const encoding = headers['content-encoding'];
    // A compressed body passes through byte for byte: the adapter's rewrite reads plain bytes only.
    const plain = !encoding || encoding === 'identity';
    const body = this.errorBody && plain ? this.errorBody(status, headers, this.body.bytes()) : this.body.bytes();
    const span = findStringValue(body, 'model', 1);
    core.finish({
      kind: 'provider_error',
      status: this.head.status,
      headers: providerHeaders(this.head, span ? readString(body, span) : null, true),
      body,
      firstByteMs: core.firstByteMs ?? core.elapsed(),
    });
  }

  onError(err: Error): void {
    this.core.upstreamFailed(err);
  }

  onIdle(): void {
    this.core.fail(
      'timeout',
      `provider went silent for ${this.core.limits.streamIdleTimeoutMs} ms before finishing its error answer`,
    );
  }

  onClientAborted(): void {
    this.core.clientGone();
  }

  onDrained(): void {
    this.core.fail('drained', DRAINED_DETAIL);
  }
}
