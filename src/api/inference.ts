// The inference endpoints (chat completions, responses, messages, images): authenticate, rate-limit,
// read the request (its protocol module's job), resolve models, plan the route, hold the worst case
// on the wallet, run the attempts, then settle (or release) and log. Business rules live in the
// modules called here; this file only orders them and makes sure every path releases what it took.
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { GatewayError } from '../errors.ts';
import { attoToDecimal, nanoToDecimal } from '../money.ts';
import { outputLimitAdvice, requestHoldNano } from '../admission/hold-size.ts';
import { promptTokenLimit } from '../billing/bound.ts';
import { estimatedPromptTokens, type Settlement, settlementFor } from '../billing/settlement.ts';
import { unforwardableHeader } from '../http/header-text.ts';
import type { Reply } from '../http/reply.ts';
import type { IncomingRequest } from '../http/request.ts';
import type { InboundRequest, ProtocolModule, RoutingFields } from '../protocols/types.ts';
import type { CommittedOutcome, UsageAddition } from '../proxy/attempt.ts';
import { costMembers } from '../protocols/usage-cost.ts';
import { type FailoverFinal, type FailoverResult, type PlanItem, runWithFailover } from '../proxy/failover.ts';
import { type EffectivePolicy, mergePreferences, parseProviderPreferences } from '../routing/preferences.ts';
import { planRoute, type RoutePlan } from '../routing/plan.ts';
import { resolveModel } from '../routing/resolve-model.ts';
import { pinKey } from '../routing/session-pins.ts';
import type { ConfigSnapshot } from './config-snapshot.ts';
import type { GatewayContext } from './context.ts';
import type { Admitted, PendingRate } from '../admission/admission.ts';
import type { RequestWatch } from '../observe/observer.ts';
import { admitCaller, framedHandler } from './request-frame.ts';
import { type RequestRecord, recordUnanswered, requestEnd, settledRow } from './request-record.ts';

/** The route of one request: the plan, its primary model, and the session pin it reads and writes. */
interface Route {
  plan: RoutePlan;
  primary: CompiledModel;
  pin: string | null;
  /** Whether the answering deployment was already pinned (ahead of the settlement). */
  pinned: boolean;
}

/** What a settlement is computed against: the hold, the request size, the pricing instant, and the
 *  request's own token bounds (the hold's inputs), from which its settlement bound is drawn. */
interface SettleBasis {
  holdNano: bigint;
  requestBytes: number;
  pricedAtMs: number;
  promptBound: number;
  outputBound: (model: CompiledModel, deployment: CompiledDeployment) => number;
}

export function inferenceHandler(ctx: GatewayContext, endpoint: string, protocol: ProtocolModule) {
  return framedHandler(
    ctx,
    endpoint,
    (cfg, req, reply, state, watch) => handle(ctx, cfg, protocol, req, reply, state, watch),
    (state) => {
      // Whatever happened, a hold that was not settled is released (idempotent in the store).
      // Not awaited: Admission.release reports a failure, and the wallet owner closes the hold
      // whatever this request does next.
      if (state.holdNano !== null && state.settledCost === null) void ctx.admission.release(state.traceId);
    },
  );
}

async function handle(
  ctx: GatewayContext,
  cfg: ConfigSnapshot,
  protocol: ProtocolModule,
  req: IncomingRequest,
  reply: Reply,
  state: RequestRecord,
  watch: RequestWatch,
): Promise<void> {
  const endpoint = state.endpoint;
  const now = ctx.clock.now();
  // 1. Who is calling, after the writer's back-pressure check (src/api/request-frame.ts).
  const caller = admitCaller(ctx, cfg, req, state, now);
  const admitted = caller instanceof Promise ? await caller : caller;

  // 2. How fast: decided before anything costs money. A limiter in another thread or process (the
  // --workers coordinator, Redis) answers later: meanwhile the request is read and routed, its hold
  // rides with the decision (taken only if the request may go on), and a refusal (429) still comes
  // before any other error of the request.
  const pendingRate = ctx.admission.rateLimit(admitted) ?? null;
  let asked: InboundRequest;
  let route: Route;
  let hold: bigint;
  try {
    // 3. What is asked. A header the gateway would send on but no HTTP client may (a control byte)
    // is the client's error, found here rather than by the upstream client, where it would count
    // against the provider. Then the protocol module reads its own body (JSON, or a streamed upload).
    const badHeader = unforwardableHeader(req.headers);
    if (badHeader !== null) throw new GatewayError('invalid_request', badHeader);
    const read = protocol.read(req, endpoint, cfg.settings.limits);
    asked = read instanceof Promise ? await read : read;
    state.fields = asked.fields;
    state.stream = asked.stream;
    watch.read(asked.stream, asked.fields.model);

    // 4. Which models, under which policy, on which deployments.
    const routed = routeFor(ctx, cfg.index, endpoint, asked.fields, admitted, state.sessionId, now);
    route = routed instanceof Promise ? await routed : routed;
    state.routedModel = route.primary.id;

    // 5. Can they pay: hold the worst case over every model and deployment the request may reach.
    hold = requestHoldNano(route.plan.plans, { promptTokens: asked.promptBound, outputTokens: asked.outputBound }, now);
  } catch (err) {
    if (pendingRate) await pendingRate.settled();
    throw err;
  }
  const { plan, pin } = route;
  await takeHold(ctx, admitted, state, plan, asked, hold, pendingRate, now);
  state.holdNano = hold;
  if (pin) background(ctx, 'pin_touch_failed', ctx.pins.touch(pin));

  // 6. Ask the providers, in order, until one answers.
  const basis: SettleBasis = {
    holdNano: hold,
    requestBytes: asked.requestBytes,
    pricedAtMs: now,
    promptBound: asked.promptBound,
    outputBound: (m, d) => asked.outputBound(m, d),
  };
  const result = await askProviders(ctx, cfg, protocol, req, reply, state, watch, asked, route, basis);
  state.result = result;

  // 7. Settle what was answered; everything else releases the hold (finally block).
  finish(ctx, cfg.index, req, state, result.final, route, basis);
}

/** Step 5, the hold itself: taken after the rate decision when one is pending (a refused decision
 *  left nothing held; its 429 is the answer). */
async function takeHold(
  ctx: GatewayContext,
  admitted: Admitted,
  state: RequestRecord,
  plan: RoutePlan,
  asked: InboundRequest,
  hold: bigint,
  pendingRate: PendingRate | null,
  now: number,
): Promise<void> {
  try {
    // A refusal says the largest output limit the wallet could have held (worked out only then).
    const advise = (available: bigint): string => outputLimitAdvice(plan.plans, asked, available, now);
    const held = ctx.admission.hold(admitted.workspace.id, state.traceId, hold, pendingRate ?? undefined, advise);
    if (pendingRate) {
      if (held instanceof Promise) held.catch(() => undefined);
      await pendingRate.settled();
    }
    if (held instanceof Promise) await held;
  } catch (err) {
    // Refused (429, 402): half-open probes routing claimed for it go back at once, so the next
    // request that would reach the deployment probes it instead of waiting out the probe's lease.
    for (const id of plan.probes) ctx.health.releaseProbe(id);
    throw err;
  }
}

/** Step 6: every deployment of the plan, in order, until one answers. */
async function askProviders(
  ctx: GatewayContext,
  cfg: ConfigSnapshot,
  protocol: ProtocolModule,
  req: IncomingRequest,
  reply: Reply,
  state: RequestRecord,
  watch: RequestWatch,
  asked: InboundRequest,
  route: Route,
  basis: SettleBasis,
): Promise<FailoverResult> {
  const endpoint = state.endpoint;
  const plan = route.plan;
  const result = await runWithFailover({
    client: ctx.client,
    protocol,
    reply,
    limits: cfg.settings.limits,
    tapHints: {
      promptTokensEstimate: estimatedPromptTokens(asked.requestBytes),
      ...(asked.body.kind === 'json' ? { request: asked.body.original } : {}),
    },
    items: plan.plans.flatMap((p) => p.deployments.map((deployment) => ({ model: p.model, deployment }))),
    maxAttempts: cfg.settings.limits.maxAttempts,
    request: { endpoint, stream: state.stream, clientHeaders: req.headers, body: asked.body },
    targets: cfg.targets,
    health: ctx.health,
    stop: ctx.stop,
    // A crash can never leave a client holding a complete answer that was not charged. The pin goes
    // first: on another thread it rides in the settlement's message, so the session's next request,
    // sent once this answer is whole, finds it whichever thread takes it.
    beforeComplete: (item, outcome) => {
      pinAnswering(ctx, route, item);
      return settle(ctx, cfg.index, req, state, item, outcome, basis);
    },
    observe: watch,
  });
  // Half-open probes this request claimed while ordering but never reached go back at once, so the
  // next request that would reach the deployment probes it (instead of waiting out the lease).
  for (const id of plan.probes) if (!result.attempts.some((a) => a.deployment === id)) ctx.health.releaseProbe(id);
  return result;
}

/** Step 4: the requested models resolved, the workspace policy merged with the request's, the plan
 *  (a promise only when the session pin store answers with one). */
function routeFor(
  ctx: GatewayContext,
  index: ConfigIndex,
  endpoint: string,
  fields: RoutingFields,
  admitted: Admitted,
  sessionId: string | null,
  now: number,
): Route | Promise<Route> {
  const models = [resolveModel(index, fields.model, endpoint, now)];
  for (const name of fields.fallbacks) {
    const m = resolveModel(index, name, endpoint, now);
    if (!models.some((x) => x.id === m.id)) models.push(m);
  }
  const prefs =
    fields.provider === undefined || fields.provider === null ? null : parseProviderPreferences(fields.provider, index);
  const policy = mergePreferences(admitted.workspace.routing, prefs);
  const primary = models[0] as CompiledModel;
  const pin = sessionId ? pinKey(admitted.workspace.id, admitted.key.id, primary.id, sessionId) : null;
  const pinned = pin ? ctx.pins.get(pin) : null;
  if (pinned instanceof Promise)
    return pinned.then((p) => planFor(ctx, index, endpoint, models, policy, primary, pin, p, now));
  return planFor(ctx, index, endpoint, models, policy, primary, pin, pinned, now);
}

/** The plan of step 4 once the session pin (if any) is known. */
function planFor(
  ctx: GatewayContext,
  index: ConfigIndex,
  endpoint: string,
  models: CompiledModel[],
  policy: EffectivePolicy,
  primary: CompiledModel,
  pin: string | null,
  pinned: string | null,
  now: number,
): Route {
  const plan = planRoute({
    index,
    endpoint,
    models,
    policy,
    creds: ctx.view,
    health: ctx.health,
    nowMs: now,
    random: ctx.random,
    // A pin whose deployment stopped being eligible is dropped, not just skipped. Health is not
    // checked here: a pin to a down deployment is kept (ordering just does not put it first).
    pinnedFor: (modelId, eligible) => {
      if (pin === null || pinned === null || modelId !== primary.id) return null;
      if (eligible.some((d) => d.id === pinned)) return pinned;
      background(ctx, 'pin_drop_failed', ctx.pins.drop(pin));
      return null;
    },
  });
  return { plan, primary, pin, pinned: false };
}

/**
 * Step 7: records how the request ended. A complete answer was already settled by `beforeComplete`,
 * before its last bytes went out; a stream cut after its commit point (or abandoned by the client)
 * is settled here.
 */
function finish(
  ctx: GatewayContext,
  index: ConfigIndex,
  req: IncomingRequest,
  state: RequestRecord,
  final: FailoverFinal,
  route: Route,
  basis: SettleBasis,
): void {
  state.ended = requestEnd(final);
  if (final.kind === 'committed') {
    state.status = final.outcome.status;
    // Known before the settlement, so the log row committed with it already says how the stream ended.
    if (final.outcome.broken && final.outcome.broken !== 'client_aborted')
      state.errorCode = `stream_${final.outcome.broken}`;
    if (state.settledCost === null) void settle(ctx, index, req, state, final.item, final.outcome, basis);
    pinAnswering(ctx, route, final.item);
  } else recordUnanswered(state, final);
}

/** After a committed attempt, once: pins the session to the deployment that answered (a fallback
 *  model's deployment is not pinned: the pin belongs to the requested model). */
function pinAnswering(ctx: GatewayContext, route: Route, item: PlanItem): void {
  if (route.pinned || !route.pin || item.model.id !== route.primary.id) return;
  route.pinned = true;
  try {
    background(ctx, 'pin_set_failed', ctx.pins.set(route.pin, item.deployment.id));
  } catch (err) {
    // Never in the way of the settlement that follows it in beforeComplete: a lost pin only loses stickiness.
    ctx.log('pin_set_failed', { error: err instanceof Error ? err.message : String(err) });
  }
}

/**
 * Charges the answering attempt (exact usage, or the documented estimate) and records it for the log.
 * Resolves when the charge is committed: the answer's last bytes wait for it (beforeComplete), and
 * carry in their usage what it charged — only once the ledger holds it (a charge the store refused,
 * or no charge at all, adds nothing).
 */
function settle(
  ctx: GatewayContext,
  index: ConfigIndex,
  req: IncomingRequest,
  state: RequestRecord,
  item: PlanItem,
  outcome: CommittedOutcome,
  basis: SettleBasis,
): Promise<UsageAddition> | null {
  const platform = index.platformById.get(item.deployment.platform);
  if (!platform || state.settledCost !== null) return null;
  const bound = {
    promptTokens: promptTokenLimit(item.deployment, basis.promptBound),
    completionTokens: basis.outputBound(item.model, item.deployment),
  };
  const s = settlementFor({
    model: item.model,
    deployment: item.deployment,
    platform,
    outcome,
    holdNano: basis.holdNano,
    requestBytes: basis.requestBytes,
    pricedAtMs: basis.pricedAtMs,
    bound,
  });
  state.settledCost = s.costNano;
  if (s.capped) reportCapped(ctx, state, s);
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
  const row = settledRow(
    req,
    state,
    { model: item.model.id, platform: item.deployment.platform, deployment: item.deployment.id },
    outcome.status,
    outcome.firstByteMs,
    ctx.clock.now(),
  );
  return ctx.admission.settle(state.traceId, s.costNano, s.details, row).then(
    (charged) => (charged ? costMembers(s.costNano) : null),
    () => null,
  );
}

/** A charge cut to its bound (or an estimate to its hold): one log line, counted by the observers. */
function reportCapped(ctx: GatewayContext, state: RequestRecord, s: Settlement): void {
  const cap = s.capped;
  if (!cap) return;
  state.usageCapped = cap.cap;
  ctx.log('usage_capped', {
    trace_id: state.traceId,
    workspace: state.admitted?.workspace.id ?? null,
    model: s.details.model,
    provider: s.details.provider,
    deployment: s.details.deployment,
    cap: cap.cap,
    estimated: s.details.estimated === true,
    prompt_tokens: s.usage?.promptTokens ?? null,
    completion_tokens: s.usage?.completionTokens ?? null,
    reported_usd: attoToDecimal(cap.reportedAtto),
    charged_usd: nanoToDecimal(cap.chargedNano),
    bound_usd: nanoToDecimal(cap.boundNano),
  });
}

/** A state call nobody waits for (pins): a failure is logged, never thrown. */
function background(ctx: GatewayContext, event: string, r: void | Promise<void>): void {
  if (r instanceof Promise)
    r.catch((err: unknown) => ctx.log(event, { error: err instanceof Error ? err.message : String(err) }));
}
