// The inference endpoints (chat completions, responses, messages, images): authenticate, rate-limit,
// validate, resolve models, plan the route, hold the worst case on the wallet, run the attempts,
// then settle (or release) and log. Business rules live in the modules called here; this file only
// orders them and makes sure every path releases what it took.
import { isUtf8 } from 'node:buffer';
import type { CompiledModel } from '../config/compiled.ts';
import { GatewayError } from '../errors.ts';
import type { Admitted } from '../admission/admission.ts';
import { requestHoldNano } from '../admission/hold-size.ts';
import { promptTokenBound } from '../billing/hold.ts';
import { boundaryOf, MultipartUpload } from '../protocols/multipart-upload.ts';
import { takeRoutingFields, type RoutingFields } from '../protocols/routing-fields.ts';
import type { JsonObject, ProtocolModule } from '../protocols/types.ts';
import type { AttemptOutcome, CommittedOutcome } from '../proxy/attempt.ts';
import { type FailoverResult, type PlanItem, runWithFailover } from '../proxy/failover.ts';
import { mergePreferences, parseProviderPreferences } from '../routing/preferences.ts';
import { planRoute } from '../routing/plan.ts';
import { resolveModel } from '../routing/resolve-model.ts';
import { pinKey, sessionIdFrom } from '../routing/session-pins.ts';
import type { Outcome } from '../routing/health.ts';
import type { RequestLogRow } from '../store/store.ts';
import type { IncomingRequest } from '../server/http-server.ts';
import { headerText, originOf, sanitizeTitle } from './attribution.ts';
import type { GatewayContext } from './context.ts';
import type { Reply } from './reply.ts';
import { estimatedPromptTokens, settlementFor } from './settlement.ts';
import { buildCall, type CallInput } from './upstream-call.ts';

/** Output-token bound when neither the request nor the model states one. */
const DEFAULT_OUTPUT_BOUND = 32_768;
/** Input-token bound per uploaded image (edits), and the most images an edit may carry. */
const TOKENS_PER_INPUT_IMAGE = 10_000;
const MAX_EDIT_IMAGES = 16;
/** Prompt bound of an edit whose prompt comes after `model` (not read yet): image APIs cap prompts at 32k characters. */
const MAX_EDIT_PROMPT_TOKENS = 32_000;

interface RequestState {
  endpoint: string;
  traceId: string;
  admitted: Admitted | null;
  fields: RoutingFields | null;
  stream: boolean;
  sessionId: string | null;
  holdNano: bigint | null;
  result: FailoverResult | null;
  settledCost: bigint | null;
  usage: { prompt: number; completion: number; reasoning: number | null; cached: number | null } | null;
  errorCode: string | null;
  status: number;
}

export function inferenceHandler(ctx: GatewayContext, endpoint: string, protocol: ProtocolModule) {
  return async (req: IncomingRequest, reply: Reply): Promise<void> => {
    const state: RequestState = {
      endpoint,
      traceId: reply.traceId,
      admitted: null,
      fields: null,
      stream: false,
      sessionId: null,
      holdNano: null,
      result: null,
      settledCost: null,
      usage: null,
      errorCode: null,
      status: 0,
    };
    try {
      await handle(ctx, endpoint, protocol, req, reply, state);
    } catch (err) {
      if (!(err instanceof GatewayError)) {
        ctx.log('request_failed', { trace_id: state.traceId, error: err instanceof Error ? err.message : String(err) });
        err = new GatewayError('internal_error', 'internal error; quote the X-Pi-Trace-Id when reporting');
      }
      const ge = err as GatewayError;
      state.errorCode = ge.code;
      state.status = ge.status;
      if (!reply.started && !reply.done) reply.sendError(ge);
      else if (!reply.done) reply.close();
    } finally {
      // Whatever happened, a hold that was not settled is released (idempotent in the store).
      if (state.holdNano !== null && state.settledCost === null) ctx.admission.release(state.traceId);
      writeLog(ctx, req, state);
    }
  };
}

async function handle(
  ctx: GatewayContext,
  endpoint: string,
  protocol: ProtocolModule,
  req: IncomingRequest,
  reply: Reply,
  state: RequestState,
): Promise<void> {
  const now = ctx.clock.now();
  ctx.view.sync();
  // Known before anything can be refused, so every log row of the session carries it.
  state.sessionId = sessionIdFrom(headerText(req.headers['x-pi-session-id']));

  // 1. Who is calling.
  const admitted = ctx.admission.authenticate(req.headers, now);
  state.admitted = admitted;
  const { key, workspace } = admitted;

  // 2. How fast: checked before anything costs money.
  ctx.admission.rateLimit(admitted);

  // 3. What is asked.
  const asked = endpoint === 'images_edits' ? await readUpload(ctx, req) : readJsonRequest(req, endpoint, protocol);
  state.fields = asked.fields;
  state.stream = asked.stream;
  const { original, upload, requestBytes, promptBound, outputBound } = asked;
  const fields = asked.fields;

  // 4. Which models, under which policy, on which deployments.
  const models = [resolveModel(ctx.index, fields.model, endpoint, now)];
  for (const name of fields.fallbacks) {
    const m = resolveModel(ctx.index, name, endpoint, now);
    if (!models.some((x) => x.id === m.id)) models.push(m);
  }
  const prefs = fields.provider === undefined || fields.provider === null ? null : parseProviderPreferences(fields.provider, ctx.index);
  const policy = mergePreferences(workspace.routing, prefs);
  const primary = models[0] as CompiledModel;
  const pin = state.sessionId ? pinKey(workspace.id, key.id, primary.id, state.sessionId) : null;
  const plan = planRoute({
    index: ctx.index,
    endpoint,
    models,
    policy,
    creds: ctx.view,
    health: ctx.health,
    nowMs: now,
    random: ctx.random,
    // A pin whose deployment stopped being eligible is dropped, not just skipped.
    pinnedFor: (modelId, eligible) => (pin && modelId === primary.id ? ctx.pins.resolve(pin, eligible) : null),
  });

  // 5. Can they pay: hold the worst case over every model and deployment the request may reach.
  const hold = requestHoldNano(plan.plans, { promptTokens: promptBound, outputTokens: outputBound }, now);
  ctx.admission.hold(workspace.id, state.traceId, hold);
  state.holdNano = hold;
  if (pin) ctx.pins.touch(pin);

  // 6. Ask the providers, in order, until one answers.
  const items: PlanItem[] = plan.plans.flatMap((p) => p.deployments.map((deployment) => ({ model: p.model, deployment })));
  const callInput: CallInput = {
    endpoint,
    stream: state.stream,
    clientHeaders: req.headers,
    ...(original ? { original, protocol } : {}),
    ...(upload ? { upload: { body: (m: string) => upload.body(m), contentType: req.headers['content-type'] as string } } : {}),
  };
  const result = await runWithFailover({
    client: ctx.client,
    protocol,
    reply,
    limits: ctx.settings.limits,
    tapHints: { promptTokensEstimate: estimatedPromptTokens(requestBytes) },
    items,
    maxAttempts: ctx.settings.limits.maxAttempts,
    buildCall: (item) => buildCall(ctx, callInput, item.model, item.deployment),
    onAttempt: (item, outcome) => recordHealth(ctx, item, outcome),
    // A crash can never leave a client holding a complete answer that was not charged.
    beforeComplete: (item, outcome) => settle(ctx, state, item, outcome, { holdNano: hold, requestBytes, pricedAtMs: now }),
    ...(upload ? { canRetry: () => upload.replayable } : {}),
  });
  state.result = result;
  // Half-open probes this request claimed while ordering but never reached go back at once, so the
  // next request that would reach the deployment probes it (instead of waiting out the lease).
  const attempted = new Set(result.attempts.map((a) => a.deployment));
  for (const id of plan.probes) if (!attempted.has(id)) ctx.health.releaseProbe(id);

  // 7. Settle what was answered; everything else releases the hold (finally block). A complete
  //    answer was already settled by `beforeComplete`, before its last bytes went out; a stream cut
  //    after its commit point (or abandoned by the client) is settled here.
  const final = result.final;
  if (final.kind === 'committed') {
    state.status = final.outcome.status;
    if (state.settledCost === null) void settle(ctx, state, final.item, final.outcome, { holdNano: hold, requestBytes, pricedAtMs: now });
    if (pin && final.item.model.id === primary.id) ctx.pins.set(pin, final.item.deployment.id);
    if (final.outcome.broken && final.outcome.broken !== 'client_aborted') state.errorCode = `stream_${final.outcome.broken}`;
  } else if (final.kind === 'provider_error') {
    state.status = final.status;
    state.errorCode = 'provider_error';
  } else if (final.kind === 'gateway_error') {
    state.status = final.error.status;
    state.errorCode = final.error.code;
  } else {
    state.status = 499;
    state.errorCode = 'client_aborted';
  }
}

/**
 * Charges the answering attempt (exact usage, or the documented estimate) and records it for the log.
 * Resolves when the charge is committed: the answer's last bytes wait for it (beforeComplete).
 */
function settle(
  ctx: GatewayContext,
  state: RequestState,
  item: PlanItem,
  outcome: CommittedOutcome,
  basis: { holdNano: bigint; requestBytes: number; pricedAtMs: number },
): Promise<void> | undefined {
  const platform = ctx.index.platformById.get(item.deployment.platform);
  if (!platform || state.settledCost !== null) return undefined;
  const s = settlementFor({ model: item.model, deployment: item.deployment, platform, outcome, ...basis });
  state.settledCost = s.costNano;
  if (s.usage) {
    state.usage = {
      prompt: s.usage.promptTokens,
      completion: s.usage.completionTokens,
      reasoning: s.usage.reasoningTokens ?? null,
      cached: s.usage.cacheReadTokens ?? null,
    };
  }
  // A failed commit never withholds the answer the provider already produced; the wallet book
  // reports it (ledger_write_failed) and the request stays uncharged.
  return ctx.admission.settle(state.traceId, s.costNano, s.details).then(
    () => undefined,
    () => undefined,
  );
}

/** What the request asks for, and the bounds its wallet hold is sized from. */
interface AskedRequest {
  fields: RoutingFields;
  stream: boolean;
  /** JSON requests: the body without routing fields. */
  original?: JsonObject;
  /** Image edits: the streamed multipart upload. */
  upload: MultipartUpload | null;
  requestBytes: number;
  promptBound: number;
  outputBound: (m: CompiledModel) => number;
}

function readJsonRequest(req: IncomingRequest, endpoint: string, protocol: ProtocolModule): AskedRequest {
  const body = parseJsonBody(req.body);
  const { fields, rest } = takeRoutingFields(body);
  protocol.validate(rest, endpoint);
  return {
    fields,
    stream: protocol.wantsStream(rest),
    original: rest,
    upload: null,
    requestBytes: req.body.length,
    promptBound: promptTokenBound(req.body.length),
    outputBound: (m) => requestedOutputLimit(rest, endpoint, m),
  };
}

/** Image edits: reads the multipart upload only up to its `model` field (the rest streams later). */
async function readUpload(ctx: GatewayContext, req: IncomingRequest): Promise<AskedRequest> {
  const boundary = boundaryOf(req.headers['content-type']);
  if (!boundary || !req.bodyStream) throw new GatewayError('invalid_request', 'images/edits needs a multipart/form-data body');
  const upload = new MultipartUpload(req.bodyStream, boundary, ctx.settings.limits.maxUploadBytes);
  let found: boolean;
  try {
    found = await upload.readUntilModel();
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    throw new GatewayError('invalid_request', 'the multipart body could not be read before its model field');
  }
  if (!found) throw new GatewayError('invalid_request', 'model is required');
  // Only the bytes up to `model` are read here: a prompt sent after it (the usual field order)
  // is still on its way, so its absence can only be judged when the whole body was read.
  if (upload.ended && !upload.fields.get('prompt')) throw new GatewayError('invalid_request', 'prompt is required');
  const images = upload.fields.has('model') && upload.filesInPrefix > 0 ? upload.filesInPrefix : MAX_EDIT_IMAGES;
  const prompt = upload.fields.get('prompt');
  const n = Number(upload.fields.get('n') ?? '1');
  return {
    fields: { model: upload.model as string, fallbacks: [], provider: undefined },
    stream: upload.fields.get('stream') === 'true',
    upload,
    requestBytes: Number(req.headers['content-length']) || 0,
    promptBound: (prompt !== undefined ? Buffer.byteLength(prompt) : MAX_EDIT_PROMPT_TOKENS) + images * TOKENS_PER_INPUT_IMAGE,
    outputBound: (m) => (Number.isInteger(n) && n > 0 ? n : 1) * (m.maxCompletionTokens ?? DEFAULT_OUTPUT_BOUND),
  };
}

function parseJsonBody(raw: Buffer): JsonObject {
  if (raw.length === 0) throw new GatewayError('invalid_request', 'model is required');
  if (!isUtf8(raw)) throw new GatewayError('invalid_request', 'the request body is not valid UTF-8');
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new GatewayError('invalid_request', `the request body is not valid JSON: ${err instanceof Error ? err.message : 'parse error'}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new GatewayError('invalid_request', 'the request body must be a JSON object');
  }
  return value as JsonObject;
}

/** The output limit the request sets, else the model's, else a documented default. */
function requestedOutputLimit(body: JsonObject, endpoint: string, model: CompiledModel): number {
  const fieldsByEndpoint: Record<string, string[]> = {
    chat_completions: ['max_completion_tokens', 'max_tokens'],
    responses: ['max_output_tokens'],
    messages: ['max_tokens'],
    images_generations: [],
  };
  for (const f of fieldsByEndpoint[endpoint] ?? []) {
    const v = body[f];
    if (typeof v === 'number' && Number.isInteger(v) && v > 0) return v;
  }
  const modelBound = model.maxCompletionTokens ?? model.contextLength ?? DEFAULT_OUTPUT_BOUND;
  if (endpoint === 'images_generations') {
    const n = body['n'];
    return (typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 1) * modelBound;
  }
  return modelBound;
}

function recordHealth(ctx: GatewayContext, item: PlanItem, outcome: AttemptOutcome): void {
  let o: Outcome | null = null;
  if (outcome.kind === 'committed') {
    if (outcome.broken === null || outcome.broken === 'client_aborted') o = { ok: true, firstByteMs: outcome.firstByteMs };
    else o = { ok: false, reason: outcome.broken === 'timeout' ? 'timeout' : outcome.broken === 'malformed' ? 'malformed' : outcome.broken === 'inband_error' ? 'inband_error' : 'reset' };
  } else if (outcome.kind === 'provider_error') {
    if (outcome.status >= 500) o = { ok: false, reason: 'status_5xx' };
    else if (outcome.status === 429) o = { ok: false, reason: 'status_429' };
    else if (outcome.status === 401 || outcome.status === 403) o = { ok: false, reason: 'auth' };
    // Other 4xx are the client's fault: no health signal.
  } else if (outcome.reason !== 'client_aborted') {
    const r = outcome.reason;
    o = { ok: false, reason: r === 'connect' || r === 'timeout' || r === 'reset' || r === 'malformed' || r === 'inband_error' ? r : 'malformed' };
  }
  if (o) ctx.health.record(item.deployment.id, o);
}

function writeLog(ctx: GatewayContext, req: IncomingRequest, s: RequestState): void {
  const attempts = s.result?.attempts ?? [];
  const final = s.result?.final;
  const served = final && (final.kind === 'committed' || final.kind === 'provider_error') ? final.item : null;
  const committed = final?.kind === 'committed' ? final.outcome : null;
  const row: RequestLogRow = {
    trace_id: s.traceId,
    ts: ctx.clock.now(),
    workspace: s.admitted?.workspace.id ?? null,
    key_id: s.admitted?.key.id ?? null,
    endpoint: s.endpoint,
    model_requested: s.fields?.model ?? null,
    model_served: served?.model.id ?? null,
    provider: served?.deployment.platform ?? null,
    deployment: served?.deployment.id ?? null,
    attempts: attempts.length,
    attempts_json: attempts.map((a) => ({ provider: a.provider, model: a.model, deployment: a.deployment, outcome: a.outcome, status: a.status, ms: a.ms })),
    stream: s.stream,
    status: s.status,
    error_code: s.errorCode,
    latency_ms: Math.round(performance.now() - req.startedAt),
    ttfb_ms: committed ? Math.round(committed.firstByteMs) : null,
    prompt_tokens: s.usage?.prompt ?? null,
    completion_tokens: s.usage?.completion ?? null,
    reasoning_tokens: s.usage?.reasoning ?? null,
    cached_tokens: s.usage?.cached ?? null,
    cost_nano: s.settledCost,
    app_title: sanitizeTitle(headerText(req.headers['x-title'])),
    app_origin: originOf(headerText(req.headers['http-referer']), headerText(req.headers['referer'])),
    session_id: s.sessionId,
  };
  ctx.store.requestLog.append(row);
}

