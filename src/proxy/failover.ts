// The attempt loop: tries the planned deployments in order (across fallback models) until one commits,
// at most `maxAttempts` in total, never after a byte has reached the client. Builds each attempt's
// upstream call (./upstream-call.ts), reports each attempt's health signal (./health-signal.ts), and
// decides which provider answers are retried and what the client gets when every attempt fails.
//
// Retry table (the provider answered with an error status):
//   401, 403          our credential was refused → next provider; if none takes over: 503 provider_unavailable
//                     naming the refusing provider (X-Pi-Provider / X-Pi-Model, no X-Pi-Upstream-*)
//   408, 409, 429     transient → next provider
//   5xx               provider failure → next provider
//   other 4xx         the client's fault → returned as is, not retried
// No answer at all (connect error, reset, first-byte timeout, malformed or in-band-error stream,
// preamble-only stream) → next provider. An adapter that cannot authenticate (an unusable sealed
// credential, a token endpoint that refuses or fails) fails that attempt as `credential` → next
// provider; if none takes over, 503 provider_unavailable naming it, as for a refused credential.
// A 401 from a platform whose adapter caches tokens drops that token and retries the SAME deployment
// once with a fresh one (an expired or revoked token is not the deployment's fault: that first 401 is
// not a health signal) before moving on. When all attempts fail, the last attempt decides: an error
// answer from a provider is passed through with its status and provider headers; no answer → 503
// provider_unavailable with the gateway's headers only. Once the gateway's stop switch is thrown (its
// drain deadline passed), no attempt starts and a running one ends: a request with nothing committed
// gets 503 provider_unavailable saying the gateway is shutting down (final `drained`).
import type { HeaderList, Reply } from '../http/reply.ts';
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import { GatewayError } from '../errors.ts';
import {
  type AttemptInput,
  type AttemptOutcome,
  type CommittedOutcome,
  runAttempt,
  type BeforeCompleteResult,
} from './attempt.ts';
import type { AttemptEnd, AttemptObserver, AttemptWatch } from '../observe/observer.ts';
import { type HealthRecorder, healthSignal } from './health-signal.ts';
import {
  addAttemptHeaders,
  buildCall,
  type CallBuild,
  type CallInput,
  type CallResolver,
  type ReadyCall,
} from './upstream-call.ts';

export interface PlanItem {
  model: CompiledModel;
  deployment: CompiledDeployment;
}

export interface AttemptRecord {
  provider: string;
  model: string;
  deployment: string;
  /** `ok`, `status_<code>`, or the failure reason. */
  outcome: string;
  status: number | null;
  ms: number;
  firstByteMs: number | null;
}

export type FailoverFinal =
  | { kind: 'committed'; item: PlanItem; outcome: Extract<AttemptOutcome, { kind: 'committed' }> }
  | { kind: 'provider_error'; item: PlanItem; status: number }
  | { kind: 'gateway_error'; error: GatewayError }
  | { kind: 'client_aborted' }
  /** The drain deadline passed before anything was committed; `error` was sent. */
  | { kind: 'drained'; error: GatewayError };

export interface FailoverResult {
  attempts: AttemptRecord[];
  final: FailoverFinal;
}

export interface FailoverInput
  extends Omit<AttemptInput, 'call' | 'decoding' | 'errorBody' | 'identity' | 'slugJson' | 'beforeComplete'> {
  items: PlanItem[];
  maxAttempts: number;
  /** What every attempt sends; an item whose call cannot be built now (say, an unreadable
   *  credential) is skipped. */
  request: CallInput;
  /** Targets, adapters and vocabularies the calls are built with. */
  targets: CallResolver;
  /** Receives every attempt's health signal. */
  health: HealthRecorder;
  /** Runs before the answering attempt's last bytes go out (see AttemptInput.beforeComplete). */
  beforeComplete?(item: PlanItem, outcome: CommittedOutcome): BeforeCompleteResult;
  /** Hears each attempt's start and end (metrics, spans) and adds its headers (trace context). */
  observe?: AttemptObserver;
}

export function isRetryableStatus(status: number): boolean {
  return status === 401 || status === 403 || status === 408 || status === 409 || status === 429 || status >= 500;
}

/** What an attempt's observers hear when it ends. */
function attemptEnd(outcome: AttemptOutcome, ms: number): AttemptEnd {
  const committed = outcome.kind === 'committed' ? outcome : null;
  return {
    outcome: describe(outcome),
    status: outcome.kind === 'failed' ? null : outcome.status,
    ms,
    firstByteMs: outcome.firstByteMs,
    responseModel: committed?.upstreamModel ?? null,
    inputTokens: committed?.usage?.promptTokens ?? null,
    outputTokens: committed?.usage?.completionTokens ?? null,
  };
}

function describe(outcome: AttemptOutcome): string {
  if (outcome.kind === 'committed') return outcome.broken ? `committed_${outcome.broken}` : 'ok';
  if (outcome.kind === 'provider_error') return `status_${outcome.status}`;
  return outcome.reason;
}

/** False once a retry can no longer resend the request (a streamed upload already consumed). */
function canResend(request: CallInput): boolean {
  return request.body.kind !== 'upload' || request.body.upload.replayable;
}

/** Why the gateway refused a streamed upload part-way, if it did. */
function uploadRefusal(request: CallInput): GatewayError | null {
  return request.body.kind === 'upload' ? (request.body.upload.refusal ?? null) : null;
}

function sendProviderError(reply: Reply, outcome: Extract<AttemptOutcome, { kind: 'provider_error' }>): void {
  reply.send(outcome.status, outcome.headers, outcome.body);
}

/** 503 naming the provider that refused our credential (docs/api.md: Response headers rule 2). An
 *  adapter that could not authenticate says why (`detail`: a token endpoint down, slow or refusing). */
function credentialRefused(item: PlanItem, detail: string | null): GatewayError {
  const headers: HeaderList = [
    ['X-Pi-Provider', item.deployment.platform],
    ['X-Pi-Model', item.model.id],
  ];
  const what = detail ?? `provider "${item.deployment.platform}" refused the gateway's credential`;
  return new GatewayError('provider_unavailable', `${what}, and no other provider could take over`, { headers });
}

/** The answer to a request whose attempts the drain deadline ended before any commit. */
function drained(reply: Reply): FailoverFinal {
  const error = new GatewayError(
    'provider_unavailable',
    'the gateway is shutting down and ended this request before any answer; retry it',
  );
  reply.sendError(error);
  return { kind: 'drained', error };
}

/** What the loop keeps between attempts. */
interface LoopState {
  attempts: AttemptRecord[];
  last: { item: PlanItem; outcome: AttemptOutcome } | null;
}

/** Each model's slug as a JSON string, made once per compiled model (a reload compiles new ones). */
const SLUG_JSON = new WeakMap<CompiledModel, Buffer>();
function slugJsonOf(model: CompiledModel): Buffer {
  let b = SLUG_JSON.get(model);
  if (b === undefined) SLUG_JSON.set(model, (b = Buffer.from(JSON.stringify(model.id))));
  return b;
}

/** How one attempt on an item ended, for the loop: stop with a final answer, retry the same item
 *  (a refused token was dropped), or go on to the next item. */
type Step = { kind: 'final'; final: FailoverFinal } | { kind: 'retry' } | { kind: 'next' };

export async function runWithFailover(input: FailoverInput): Promise<FailoverResult> {
  const state: LoopState = { attempts: [], last: null };
  const { attempts } = state;

  items: for (const item of input.items) {
    for (let pass = 0; pass < 2; pass++) {
      if (attempts.length >= input.maxAttempts) break items;
      if (input.reply.aborted) return { attempts, final: { kind: 'client_aborted' } };
      if (input.stop?.stopped) return { attempts, final: drained(input.reply) };
      if (attempts.length > 0 && !canResend(input.request)) break items;
      const started = performance.now();
      let built: CallBuild | Promise<CallBuild> = buildCall(
        input.targets,
        input.protocol,
        input.request,
        item.model,
        item.deployment,
      );
      if (built instanceof Promise) {
        built = await built;
        // The adapter waited (a token fetch): the client or the drain may have ended the request.
        if (input.reply.aborted) return { attempts, final: { kind: 'client_aborted' } };
        if (input.stop?.stopped) return { attempts, final: drained(input.reply) };
      }
      if (built.kind === 'skip') continue items;
      const step =
        built.kind === 'unauthorized'
          ? credentialFailed(input, state, item, built.detail, started)
          : await attempt(input, state, item, built, pass, started);
      if (step.kind === 'final') return { attempts, final: step.final };
      if (step.kind === 'next') continue items;
    }
  }
  return { attempts, final: allFailed(input, state) };
}

/** The adapter could not authenticate: a failed attempt (`credential`, an `auth` health signal). */
function credentialFailed(
  input: FailoverInput,
  state: LoopState,
  item: PlanItem,
  detail: string,
  started: number,
): Step {
  const outcome: AttemptOutcome = { kind: 'failed', reason: 'credential', detail, firstByteMs: null };
  const watch = watchAttempt(input, state, item);
  state.attempts.push(record(item, outcome, started));
  watch?.finish(attemptEnd(outcome, performance.now() - started));
  const signal = healthSignal(outcome);
  if (signal) input.health.record(item.deployment.id, signal);
  state.last = { item, outcome };
  return { kind: 'next' };
}

/** Runs one attempt on a ready call and says what the loop does next. */
async function attempt(
  input: FailoverInput,
  state: LoopState,
  item: PlanItem,
  built: ReadyCall,
  pass: number,
  started: number,
): Promise<Step> {
  const slugJson = slugJsonOf(item.model);
  const watch = watchAttempt(input, state, item);
  if (watch) addAttemptHeaders(built.call, watch.headers);
  // Built field by field: a rest/spread copy of `input` takes V8's slow generic path on every attempt.
  const one: AttemptInput = {
    client: input.client,
    call: built.call,
    decoding: built.decoding,
    errorBody: built.errorBody,
    protocol: input.protocol,
    slugJson,
    reply: input.reply,
    limits: input.limits,
    identity: [
      ['X-Pi-Provider', item.deployment.platform],
      ['X-Pi-Model', item.model.id],
    ],
  };
  if (input.tapHints !== undefined) one.tapHints = input.tapHints;
  if (input.stop !== undefined) one.stop = input.stop;
  const hook = input.beforeComplete;
  if (hook) one.beforeComplete = (o: CommittedOutcome) => hook(item, o);
  const outcome = await runAttempt(one);
  state.attempts.push(record(item, outcome, started));
  watch?.finish(attemptEnd(outcome, performance.now() - started));
  state.last = { item, outcome };
  // A refused token, dropped by its adapter: one more try on this deployment with a fresh one. The
  // 401 says the token was stale, not that the deployment is unwell.
  if (outcome.kind === 'provider_error' && outcome.status === 401 && pass === 0 && built.refused?.())
    return { kind: 'retry' };
  // The gateway refused the client's upload part-way: the provider never had the whole request, so
  // the attempt says nothing about it (no health signal) and the client gets the refusal.
  const refusal = outcome.kind === 'committed' ? null : uploadRefusal(input.request);
  if (refusal) {
    input.reply.sendError(refusal);
    return { kind: 'final', final: { kind: 'gateway_error', error: refusal } };
  }
  const signal = healthSignal(outcome);
  if (signal) input.health.record(item.deployment.id, signal);

  if (outcome.kind === 'committed') return { kind: 'final', final: { kind: 'committed', item, outcome } };
  if (outcome.kind === 'failed' && outcome.reason === 'client_aborted')
    return { kind: 'final', final: { kind: 'client_aborted' } };
  if (outcome.kind === 'failed' && outcome.reason === 'drained')
    return { kind: 'final', final: input.reply.aborted ? { kind: 'client_aborted' } : drained(input.reply) };
  if (outcome.kind === 'provider_error' && !isRetryableStatus(outcome.status)) {
    sendProviderError(input.reply, outcome);
    return { kind: 'final', final: { kind: 'provider_error', item, status: outcome.status } };
  }
  return { kind: 'next' };
}

/** Tells the request's observers an attempt starts (its watch may add a `traceparent` upstream). */
function watchAttempt(input: FailoverInput, state: LoopState, item: PlanItem): AttemptWatch | undefined {
  return input.observe?.attempt({
    index: state.attempts.length,
    provider: item.deployment.platform,
    model: item.model.id,
    deployment: item.deployment.id,
    upstreamModel: item.deployment.upstreamModel,
  });
}

function record(item: PlanItem, outcome: AttemptOutcome, started: number): AttemptRecord {
  return {
    provider: item.deployment.platform,
    model: item.model.id,
    deployment: item.deployment.id,
    outcome: describe(outcome),
    status: outcome.kind === 'failed' ? null : outcome.status,
    ms: Math.round(performance.now() - started),
    firstByteMs: outcome.firstByteMs === null ? null : Math.round(outcome.firstByteMs),
  };
}

/** No attempt committed and none answered the client: the last attempt decides what it gets. */
function allFailed(input: FailoverInput, state: LoopState): FailoverFinal {
  const { attempts, last } = state;
  if (input.reply.aborted) return { kind: 'client_aborted' };
  if (input.stop?.stopped) return drained(input.reply);
  const refused =
    last !== null &&
    ((last.outcome.kind === 'provider_error' && (last.outcome.status === 401 || last.outcome.status === 403)) ||
      (last.outcome.kind === 'failed' && last.outcome.reason === 'credential'));
  if (last && refused) {
    const error = credentialRefused(last.item, last.outcome.kind === 'failed' ? last.outcome.detail : null);
    input.reply.sendError(error);
    return { kind: 'gateway_error', error };
  }
  if (last && last.outcome.kind === 'provider_error') {
    sendProviderError(input.reply, last.outcome);
    return { kind: 'provider_error', item: last.item, status: last.outcome.status };
  }
  const detail = last && last.outcome.kind === 'failed' ? `: ${last.outcome.detail}` : '';
  const error = new GatewayError(
    'provider_unavailable',
    attempts.length === 0
      ? 'no provider could be called for this request'
      : `no provider could answer after ${attempts.length} attempt${attempts.length === 1 ? '' : 's'}${detail}`,
  );
  input.reply.sendError(error);
  return { kind: 'gateway_error', error };
}
