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
// preamble-only stream) → next provider. When all attempts fail, the last attempt decides: an error
// answer from a provider is passed through with its status and provider headers; no answer → 503
// provider_unavailable with the gateway's headers only. Once the gateway's stop switch is thrown (its
// drain deadline passed), no attempt starts and a running one ends: a request with nothing committed
// gets 503 provider_unavailable saying the gateway is shutting down (final `drained`).
import type { HeaderList, Reply } from '../http/reply.ts';
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import { GatewayError } from '../errors.ts';
import { type AttemptInput, type AttemptOutcome, type CommittedOutcome, runAttempt } from './attempt.ts';
import type { AttemptEnd, AttemptObserver } from '../observe/observer.ts';
import { type HealthRecorder, healthSignal } from './health-signal.ts';
import { addAttemptHeaders, buildCall, type CallInput, type CallResolver } from './upstream-call.ts';

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

export interface FailoverInput extends Omit<AttemptInput, 'call' | 'identity' | 'slugJson' | 'beforeComplete'> {
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
  beforeComplete?(item: PlanItem, outcome: CommittedOutcome): void | Promise<void>;
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

function sendProviderError(reply: Reply, outcome: Extract<AttemptOutcome, { kind: 'provider_error' }>): void {
  reply.send(outcome.status, outcome.headers, outcome.body);
}

/** 503 naming the provider that refused our credential (spec: Response headers rule 2). */
function credentialRefused(item: PlanItem): GatewayError {
  const headers: HeaderList = [
    ['X-Pi-Provider', item.deployment.platform],
    ['X-Pi-Model', item.model.id],
  ];
  return new GatewayError('provider_unavailable', `provider "${item.deployment.platform}" refused the gateway's credential and no other provider could take over`, { headers });
}

/** The answer to a request whose attempts the drain deadline ended before any commit. */
function drained(reply: Reply): FailoverFinal {
  const error = new GatewayError('provider_unavailable', 'the gateway is shutting down and ended this request before any answer; retry it');
  reply.sendError(error);
  return { kind: 'drained', error };
}

export async function runWithFailover(input: FailoverInput): Promise<FailoverResult> {
  const attempts: AttemptRecord[] = [];
  let last: { item: PlanItem; outcome: AttemptOutcome } | null = null;
  const slugCache = new Map<string, Buffer>();

  for (const item of input.items) {
    if (attempts.length >= input.maxAttempts) break;
    if (input.reply.aborted) return { attempts, final: { kind: 'client_aborted' } };
    if (input.stop?.stopped) return { attempts, final: drained(input.reply) };
    if (attempts.length > 0 && !canResend(input.request)) break;
    const call = buildCall(input.targets, input.protocol, input.request, item.model, item.deployment);
    if (call === null) continue;
    let slugJson = slugCache.get(item.model.id);
    if (!slugJson) slugCache.set(item.model.id, (slugJson = Buffer.from(JSON.stringify(item.model.id))));

    const watch = input.observe?.attempt({
      index: attempts.length,
      provider: item.deployment.platform,
      model: item.model.id,
      deployment: item.deployment.id,
      upstreamModel: item.deployment.upstreamModel,
    });
    if (watch) addAttemptHeaders(call, watch.headers);

    const started = performance.now();
    const { beforeComplete: hook, observe: _observe, ...shared } = input;
    const outcome = await runAttempt({
      ...shared,
      call,
      slugJson,
      ...(hook ? { beforeComplete: (o: CommittedOutcome) => hook(item, o) } : {}),
      identity: [
        ['X-Pi-Provider', item.deployment.platform],
        ['X-Pi-Model', item.model.id],
      ],
    });
    const ms = performance.now() - started;
    attempts.push({
      provider: item.deployment.platform,
      model: item.model.id,
      deployment: item.deployment.id,
      outcome: describe(outcome),
      status: outcome.kind === 'failed' ? null : outcome.status,
      ms: Math.round(ms),
      firstByteMs: outcome.firstByteMs === null ? null : Math.round(outcome.firstByteMs),
    });
    watch?.finish(attemptEnd(outcome, ms));
    const signal = healthSignal(outcome);
    if (signal) input.health.record(item.deployment.id, signal);
    last = { item, outcome };

    if (outcome.kind === 'committed') return { attempts, final: { kind: 'committed', item, outcome } };
    if (outcome.kind === 'failed' && outcome.reason === 'client_aborted') return { attempts, final: { kind: 'client_aborted' } };
    if (outcome.kind === 'failed' && outcome.reason === 'drained') return { attempts, final: input.reply.aborted ? { kind: 'client_aborted' } : drained(input.reply) };
    if (outcome.kind === 'provider_error' && !isRetryableStatus(outcome.status)) {
      sendProviderError(input.reply, outcome);
      return { attempts, final: { kind: 'provider_error', item, status: outcome.status } };
    }
  }

  if (input.reply.aborted) return { attempts, final: { kind: 'client_aborted' } };
  if (input.stop?.stopped) return { attempts, final: drained(input.reply) };
  if (last && last.outcome.kind === 'provider_error') {
    if (last.outcome.status === 401 || last.outcome.status === 403) {
      const error = credentialRefused(last.item);
      input.reply.sendError(error);
      return { attempts, final: { kind: 'gateway_error', error } };
    }
    sendProviderError(input.reply, last.outcome);
    return { attempts, final: { kind: 'provider_error', item: last.item, status: last.outcome.status } };
  }
  const detail = last && last.outcome.kind === 'failed' ? `: ${last.outcome.detail}` : '';
  const error = new GatewayError(
    'provider_unavailable',
    attempts.length === 0 ? 'no provider could be called for this request' : `no provider could answer after ${attempts.length} attempt${attempts.length === 1 ? '' : 's'}${detail}`,
  );
  input.reply.sendError(error);
  return { attempts, final: { kind: 'gateway_error', error } };
}
