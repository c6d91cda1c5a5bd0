// POST /admin/route-preview {workspace, model, fallbacks?, provider?, endpoint?}: what the router
// would do with such a request now — for each model, the deployments in attempt order with their
// effective prices, and the funnel of why every other provider was filtered (the funnel
// `no_eligible_provider` carries). It runs the router's own functions, as the inference handler
// does (resolveModel, parseProviderPreferences, mergePreferences, planRoute, eligibleDeployments),
// reading health passively (no half-open probe is claimed) and calling no upstream. Without a session
// id no pin applies. Without `sort: price` the gateway draws the order within a tier at random in
// proportion to weight; the preview does not draw (a preview that reshuffled on every click would
// say nothing): it lists each tier by share of the first place, largest first, and gives the shares.
import type { OperatorView } from '../admin/operator-view.ts';
import { effectivePricing } from '../billing/price.ts';
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { GatewayError } from '../errors.ts';
import { attoToDecimal } from '../money.ts';
import { eligibleDeployments } from '../routing/candidates.ts';
import { planRoute } from '../routing/plan.ts';
import { type EffectivePolicy, mergePreferences, parseProviderPreferences } from '../routing/preferences.ts';
import { resolveModel } from '../routing/resolve-model.ts';
import { badRequest, ConsoleError, stringField } from './http.ts';

const PER_MILLION = 1_000_000n;

/** USD per million tokens of an atto-USD per-token price. */
const perMillion = (atto: bigint | undefined): string | null =>
  atto === undefined ? null : attoToDecimal(atto * PER_MILLION);

function deploymentJson(
  d: CompiledDeployment,
  model: CompiledModel,
  policy: EffectivePolicy,
  view: OperatorView,
  tierTotals: Map<number, number>,
  now: number,
) {
  const p = effectivePricing(model, d, now);
  const tierNo = tierOf(d, policy);
  const weight = weightOf(d);
  const total = tierTotals.get(tierNo) ?? 0;
  return {
    deployment: d.id,
    provider: d.platform,
    upstream_model: d.upstreamModel,
    tier: tierNo,
    weight: d.weight,
    share_of_tier: policy.sort === 'price' || total === 0 ? null : weight / total,
    down: view.health.passive.isDown(d, now),
    breaker: view.health.state(d.id).state,
    quantization: d.quantization,
    price: {
      prompt_usd_per_mtok: perMillion(p.pricing.base.prompt),
      completion_usd_per_mtok: perMillion(p.pricing.base.completion),
      list_prompt_usd_per_mtok: perMillion(p.list.base.prompt),
      list_completion_usd_per_mtok: perMillion(p.list.base.completion),
      discount_percent: p.discount?.percentOff ?? null,
    },
  };
}

const tierOf = (d: CompiledDeployment, policy: EffectivePolicy): number => {
  const t = policy.order.indexOf(d.platform);
  return t === -1 ? policy.order.length : t;
};
const weightOf = (d: CompiledDeployment): number => (Number.isFinite(d.weight) && d.weight > 0 ? d.weight : 0);

/**
 * The planned order with each weighted tier by share, deterministically: tiers as planned, healthy
 * before down (as the router keeps them), then weight (the share of the first place) largest first,
 * then id. A price-sorted order is already deterministic and stays as planned.
 */
function byShare(
  planned: CompiledDeployment[],
  policy: EffectivePolicy,
  view: OperatorView,
  now: number,
): CompiledDeployment[] {
  if (policy.sort === 'price') return planned;
  const down = (d: CompiledDeployment) => (view.health.passive.isDown(d, now) ? 1 : 0);
  return [...planned].sort(
    (a, b) =>
      tierOf(a, policy) - tierOf(b, policy) ||
      down(a) - down(b) ||
      weightOf(b) - weightOf(a) ||
      (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
}

function modelsOf(index: ConfigIndex, body: Record<string, unknown>, endpoint: string, now: number): CompiledModel[] {
  const name = stringField(body, 'model');
  if (name === undefined || name === '') throw badRequest('model is required: a catalog slug such as acme/chat-small');
  const fallbacks = body['fallbacks'] ?? [];
  if (!Array.isArray(fallbacks) || !fallbacks.every((f): f is string => typeof f === 'string'))
    throw badRequest('fallbacks must be a list of model slugs');
  const models = [resolveModel(index, name, endpoint, now)];
  for (const f of fallbacks) {
    const m = resolveModel(index, f, endpoint, now);
    if (!models.some((x) => x.id === m.id)) models.push(m);
  }
  return models;
}

function policyJson(policy: EffectivePolicy): Record<string, unknown> {
  const list = (s: Set<string> | null) => (s === null ? null : [...s].sort());
  return {
    allow: list(policy.allow),
    ignore: [...policy.ignore].sort(),
    order: policy.order,
    sort: policy.sort,
    allow_fallbacks: policy.allowFallbacks,
    data_collection: policy.dataCollection,
    zdr: policy.zdr,
    quantizations: policy.quantizations === null ? null : [...policy.quantizations].sort(),
  };
}

export function routePreview(view: OperatorView, body: Record<string, unknown>): unknown {
  const index = view.index();
  const now = view.now();
  const wsId = stringField(body, 'workspace');
  const workspace = wsId === undefined ? undefined : index.workspaceById.get(wsId);
  if (!workspace) throw badRequest(`workspace must be a workspace of the config, got ${JSON.stringify(wsId ?? null)}`);
  const endpoint = stringField(body, 'endpoint') ?? 'chat_completions';
  if (!index.endpointById.has(endpoint))
    throw badRequest(`endpoint must be one of ${[...index.endpointById.keys()].join(', ')}; got "${endpoint}"`);
  try {
    const models = modelsOf(index, body, endpoint, now);
    const raw = body['provider'];
    const prefs = raw === undefined || raw === null ? null : parseProviderPreferences(raw, index);
    const policy = mergePreferences(workspace.routing, prefs);
    let planned: Map<string, CompiledDeployment[]>;
    try {
      const plan = planRoute({
        index,
        endpoint,
        models,
        policy,
        creds: view.creds,
        health: view.health.passive,
        nowMs: now,
        // Unused by the order below; fixed so that nothing here is random.
        random: () => 0.5,
      });
      planned = new Map(plan.plans.map((p) => [p.model.id, byShare(p.deployments, policy, view, now)]));
    } catch (err) {
      if (!(err instanceof GatewayError && err.code === 'no_eligible_provider')) throw err;
      planned = new Map();
    }
    const maxAttempts = index.config.settings.limits.maxAttempts;
    let attemptNo = 0;
    const out = models.map((model) => {
      const ordered = planned.get(model.id) ?? [];
      const tierTotals = new Map<number, number>();
      for (const d of ordered)
        tierTotals.set(tierOf(d, policy), (tierTotals.get(tierOf(d, policy)) ?? 0) + weightOf(d));
      const deployments = ordered.map((d) => ({
        attempt: ++attemptNo <= maxAttempts ? attemptNo : null,
        ...deploymentJson(d, model, policy, view, tierTotals, now),
      }));
      return {
        model: model.id,
        deployments,
        funnel: eligibleDeployments({ index, model, endpoint, policy, creds: view.creds, nowMs: now }).funnel,
      };
    });
    return {
      workspace: workspace.id,
      endpoint,
      ordering: policy.sort === 'price' ? 'price' : 'weighted_random',
      max_attempts: maxAttempts,
      policy: policyJson(policy),
      eligible: out.some((m) => m.deployments.length > 0),
      models: out,
    };
  } catch (err) {
    if (err instanceof GatewayError) throw new ConsoleError(err.status, err.code, err.message);
    throw err;
  }
}
