// What one upstream attempt takes and what it ends with. The types live apart from the units that
// run an attempt (head dispatch, body readers, stream relay) so each unit can name them without an
// import cycle; src/proxy/attempt.ts re-exports them for callers.
import type { HeaderList, Reply } from '../http/reply.ts';
import type { InputUsage, Usage } from '../billing/usage.ts';
import type { AnswerDecoding } from '../platforms/types.ts';
import type { ProtocolModule, TapHints } from '../protocols/types.ts';
import type { UpstreamCall, UpstreamClient } from '../upstream/client.ts';
import type { StopSwitch } from './stop-switch.ts';

export interface AttemptLimits {
  firstByteTimeoutMs: number;
  streamIdleTimeoutMs: number;
  preambleMaxBytes: number;
  maxUpstreamBodyBytes: number;
  /** The most bytes one event of a provider's stream may hold (a longer one ends the attempt). */
  maxUpstreamEventBytes: number;
  /** A committed stream whose client takes no bytes this long is cut (`write_stall`). */
  writeStallTimeoutMs: number;
}

export interface AttemptInput {
  /** Only `call` is used (unit tests hand in a fake client). */
  client: Pick<UpstreamClient, 'call'>;
  call: UpstreamCall;
  /** How the platform's answers are read when they are not the protocol's own wire (Bedrock's
   *  event stream and error bodies); absent or null: they are. */
  decoding?: AnswerDecoding | null;
  /** A non-2xx answer's plain body rewritten into the protocol's error shape (a cloud's own error
   *  bodies); absent or null: passed on as received. */
  errorBody?: ((status: number, headers: Record<string, string>, body: Buffer) => Buffer) | null;
  protocol: ProtocolModule;
  /** The slug as a JSON string, spliced into `model` fields. */
  slugJson: Buffer;
  reply: Reply;
  limits: AttemptLimits;
  /** X-Pi-Provider and X-Pi-Model for this attempt. */
  identity: HeaderList;
  /** Estimate basis for a stream whose provider reports no usage. */
  tapHints?: TapHints;
  /**
   * Runs when the answer is complete and before its last bytes go out (the JSON body; a stream's
   * last usage event, end marker and end), so that whatever it records (the wallet settlement) is
   * committed before the client holds a complete answer. A returned promise delays those bytes until
   * it settles. What it answers is added to the answer's usage object (the settled cost); nothing
   * (void, null) adds nothing.
   */
  beforeComplete?: (outcome: CommittedOutcome) => BeforeCompleteResult;
  /** Ends the attempt from outside when thrown (the gateway's drain deadline): outcome `drained`. */
  stop?: StopSwitch;
}

export type CommittedOutcome = Extract<AttemptOutcome, { kind: 'committed' }>;

/** JSON members (`"name":value`, comma separated) to append to an answer's usage object once it is
 *  settled, or null for none (src/protocols/usage-cost.ts). */
export type UsageAddition = Buffer | null;

/** What the beforeComplete hook answers: an addition, or nothing, at once or once it is settled. */
// biome-ignore lint/suspicious/noConfusingVoidType: a hook that adds nothing is any plain or async function returning nothing
export type BeforeCompleteResult = UsageAddition | void | Promise<UsageAddition | void>;

/**
 * Why an attempt ended without a normal answer. `write_stall`: the client took no bytes of a committed
 * stream for the write-stall limit. `drained`: the gateway ended the attempt from outside (its drain
 * deadline passed, see ./stop-switch.ts). `credential`: the platform adapter could not authenticate
 * the call (an unusable sealed credential, a token endpoint that refused or failed); nothing was sent.
 */
/** `not_sent`: undici refused the call the gateway built (DispatchRefused); no fault of the provider. */
export type FailureReason =
  | 'connect'
  | 'reset'
  | 'timeout'
  | 'malformed'
  | 'inband_error'
  | 'empty'
  | 'too_large'
  | 'client_aborted'
  | 'write_stall'
  | 'drained'
  | 'credential'
  | 'not_sent';

export type AttemptOutcome =
  | {
      kind: 'committed';
      status: number;
      stream: boolean;
      upstreamModel: string | null;
      /** The provider's count for the whole answer (StreamTap.usage), or null. */
      usage: Usage | null;
      /** Input counts the provider stated before its end (StreamTap.inputUsage): the prompt side of
       *  an estimate when `usage` never came. Null for JSON answers. */
      inputUsage: InputUsage | null;
      /** The answer reached its normal end (JSON answers always do). */
      completed: boolean;
      /** Set when a committed stream was cut: why. */
      broken: FailureReason | null;
      /** The client side ended the answer: it went away, or stopped reading (`write_stall`). */
      clientAborted: boolean;
      firstByteMs: number;
      contentEvents: number;
      contentBytes: number;
    }
  | {
      /** A non-2xx answer from the provider, not yet sent to the client. */
      kind: 'provider_error';
      status: number;
      headers: HeaderList;
      body: Buffer;
      firstByteMs: number;
    }
  | { kind: 'failed'; reason: FailureReason; detail: string; firstByteMs: number | null };
