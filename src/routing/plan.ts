// The route of one request: for the primary model and each fallback model, its eligible
// deployments in attempt order; or `no_eligible_provider` with every model's funnel.
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { GatewayError } from '../errors.ts';
import { type FunnelStage, eligibleDeployments } from './candidates.ts';
import { orderDeployments } from './order.ts';
import type { EffectivePolicy } from './preferences.ts';
import type { CredentialView, HealthView } from './serving.ts';

export interface ModelPlan {
  model: CompiledModel;
  /** Attempt order. */
  deployments: CompiledDeployment[];
}

export interface RoutePlan {
  /** Only models with at least one eligible deployment, in request order (primary first). */
  plans: ModelPlan[];
}

export interface NoEligibleProviderMetadata {
  /** The primary model's slug. */
  model: string;
  funnel: FunnelStage[];
  /** Present when the request named fallback models. */
  fallbacks?: { model: string; funnel: FunnelStage[] }[];
}

function noEligibleMessage(models: readonly CompiledModel[]): string {
  const [primary, ...fallbacks] = models.map((m) => `"${m.id}"`);
  const nor = fallbacks.length === 0 ? '' : ` nor its fallback${fallbacks.length > 1 ? 's' : ''} ${fallbacks.join(', ')}`;
  return `no provider can serve ${primary}${nor} under the routing settings of this request and workspace`;
}

/**
 * Plans the route of one request. `models` is the primary then the fallbacks, already resolved and
 * validated by the caller. Models with no eligible deployment are skipped (their fallbacks may
 * still serve); when none has any, throws `no_eligible_provider` whose metadata carries the funnel
 * of every model so an operator can read why. `pinnedFor` gives a model's session pin (the caller
 * owns the pin store; see SessionPins.resolve for dropping pins that stopped being eligible).
 */
export function planRoute(args: {
  index: ConfigIndex;
  endpoint: string;
  models: CompiledModel[];
  policy: EffectivePolicy;
  creds: CredentialView;
  health: HealthView;
  nowMs: number;
  random: () => number;
  pinnedFor?: (modelId: string) => string | null;
}): RoutePlan {
  const { index, endpoint, models, policy, creds, health, nowMs, random, pinnedFor } = args;
  if (models.length === 0) throw new Error('planRoute needs at least one model');
  const plans: ModelPlan[] = [];
  const funnels: { model: string; funnel: FunnelStage[] }[] = [];
  for (const model of models) {
    const { deployments, funnel } = eligibleDeployments({ index, model, endpoint, policy, creds, nowMs });
    funnels.push({ model: model.id, funnel });
    if (deployments.length === 0) continue;
    const pinned = pinnedFor?.(model.id) ?? null;
    plans.push({ model, deployments: orderDeployments({ deployments, policy, index, health, nowMs, random, pinned }) });
  }
  if (plans.length > 0) return { plans };

  const [primary, ...rest] = funnels as [(typeof funnels)[number], ...typeof funnels];
  const metadata: NoEligibleProviderMetadata = { model: primary.model, funnel: primary.funnel };
  if (rest.length > 0) metadata.fallbacks = rest;
  throw new GatewayError('no_eligible_provider', noEligibleMessage(models), { metadata });
}
