// Token counting (POST /v1/messages/count_tokens): authenticate and rate-limit like inference, read
// the Messages count body, route the model's Messages deployments keeping those whose platform can
// count (PlatformAdapter.countTokens), and ask them in order with the inference failover loop. No
// hold and no settlement (counting is free on every platform that offers it); the request log keeps
// a row per count, of endpoint `count_tokens`, whose cost is null. When no eligible provider can
// count: 400 count_tokens_unsupported, saying so. Business rules live in the modules called here.
import type { CompiledModel } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { GatewayError } from '../errors.ts';
import { unforwardableHeader } from '../http/header-text.ts';
import type { Reply } from '../http/reply.ts';
import type { IncomingRequest } from '../http/request.ts';
import type { RequestWatch } from '../observe/observer.ts';
import { COUNT_TOKENS_ENDPOINT } from '../observe/request-row.ts';
import { countTokens } from '../protocols/count-tokens.ts';
import type { RoutingFields } from '../protocols/types.ts';
import { type PlanItem, runWithFailover } from '../proxy/failover.ts';
import { mergePreferences, parseProviderPreferences } from '../routing/preferences.ts';
import { planRoute, type RoutePlan } from '../routing/plan.ts';
import { resolveModel } from '../routing/resolve-model.ts';
import type { Admitted } from '../admission/admission.ts';
import type { ConfigSnapshot } from './config-snapshot.ts';
import type { GatewayContext } from './context.ts';
import { admitCaller, framedHandler } from './request-frame.ts';
import { type RequestRecord, recordUnanswered, requestEnd } from './request-record.ts';

/** A count is routed like a Messages request: the models and deployments serving Messages. */
const ROUTED_AS = 'messages';

export function countTokensHandler(ctx: GatewayContext) {
  return framedHandler(ctx, COUNT_TOKENS_ENDPOINT, (cfg, req, reply, state, watch) =>
    handle(ctx, cfg, req, reply, state, watch),
  );
}

async function handle(
  ctx: GatewayContext,
  cfg: ConfigSnapshot,
  req: IncomingRequest,
  reply: Reply,
  state: RequestRecord,
  watch: RequestWatch,
): Promise<void> {
  const now = ctx.clock.now();
  // 1. Who is calling, 2. how fast: the same checks, keys, errors and per-key limit as inference.
  const caller = admitCaller(ctx, cfg, req, state, now);
  const admitted = caller instanceof Promise ? await caller : caller;
  const pendingRate = ctx.admission.rateLimit(admitted);
  if (pendingRate) await pendingRate.settled();

  // 3. What is asked.
  const badHeader = unforwardableHeader(req.headers);
  if (badHeader !== null) throw new GatewayError('invalid_request', badHeader);
  const asked = countTokens.read(req, COUNT_TOKENS_ENDPOINT, cfg.settings.limits);
  const { fields, body } = asked instanceof Promise ? await asked : asked;
  state.fields = fields;
  watch.read(false, fields.model);

  // 4. Which deployments can count.
  const plan = routeFor(ctx, cfg.index, fields, admitted, now);
  state.routedModel = plan.plans[0]?.model.id ?? null;
  const items = countingItems(cfg, plan);
  if (items.length === 0) {
    for (const id of plan.probes) ctx.health.releaseProbe(id);
    throw unsupported(plan.plans.map((p) => p.model));
  }

  // 5. Ask them in order until one answers.
  const result = await runWithFailover({
    client: ctx.client,
    protocol: countTokens,
    reply,
    limits: cfg.settings.limits,
    items,
    maxAttempts: cfg.settings.limits.maxAttempts,
    request: { endpoint: COUNT_TOKENS_ENDPOINT, stream: false, clientHeaders: req.headers, body },
    targets: cfg.targets,
    health: ctx.health,
    stop: ctx.stop,
    observe: watch,
  });
  state.result = result;
  for (const id of plan.probes) if (!result.attempts.some((a) => a.deployment === id)) ctx.health.releaseProbe(id);
  const final = result.final;
  state.ended = requestEnd(final);
  if (final.kind === 'committed') state.status = final.outcome.status;
  else recordUnanswered(state, final);
}

/** The models resolved as Messages models, the workspace policy merged with the request's, the plan.
 *  Session pins are neither read nor written: a count is not a turn of the session. */
function routeFor(
  ctx: GatewayContext,
  index: ConfigIndex,
  fields: RoutingFields,
  admitted: Admitted,
  now: number,
): RoutePlan {
  const models = [resolveModel(index, fields.model, ROUTED_AS, now)];
  for (const name of fields.fallbacks) {
    const m = resolveModel(index, name, ROUTED_AS, now);
    if (!models.some((x) => x.id === m.id)) models.push(m);
  }
  const prefs =
    fields.provider === undefined || fields.provider === null ? null : parseProviderPreferences(fields.provider, index);
  const policy = mergePreferences(admitted.workspace.routing, prefs);
  return planRoute({
    index,
    endpoint: ROUTED_AS,
    models,
    policy,
    creds: ctx.view,
    health: ctx.health,
    nowMs: now,
    random: ctx.random,
  });
}

/** The planned deployments, in order, whose platform's adapter can count tokens. */
function countingItems(cfg: ConfigSnapshot, plan: RoutePlan): PlanItem[] {
  const counts = (platformId: string): boolean => {
    const platform = cfg.index.platformById.get(platformId);
    return platform !== undefined && cfg.targets.adapter(platform.adapter)?.countTokens !== undefined;
  };
  return plan.plans.flatMap((p) =>
    p.deployments.filter((d) => counts(d.platform)).map((deployment) => ({ model: p.model, deployment })),
  );
}

function unsupported(models: CompiledModel[]): GatewayError {
  const names = models.map((m) => `"${m.id}"`).join(', ');
  return new GatewayError(
    'count_tokens_unsupported',
    `token counting is not available for ${names}: none of the providers that may serve this request can count tokens (counting is served through Anthropic's API, Vertex AI and Amazon Bedrock)`,
  );
}
