// The route of one request: for the primary model and each fallback model, its eligible
// deployments in attempt order; or `no_eligible_provider` with every model's funnel.
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { GatewayError } from '../errors.ts';
import { type FunnelStage, eligibleDeployments, eligibleOnly } from './candidates.ts';
import { orderDeployments } from './order.ts';
import type { EffectivePolicy } from './preferences.ts';
import type { CredentialView, HealthView } from '../availability/serving.ts';

export interface ModelPlan {
  model: CompiledModel;
  /** Attempt order. */
  deployments: CompiledDeployment[];
}

export interface RoutePlan {
  /** Only models with at least one eligible deployment, in request order (primary first). */
  plans: ModelPlan[];
  /**
   * Deployment ids whose half-open probe this plan claimed from the health tracker (see
   * orderDeployments). The caller gives back (`HealthTracker.releaseProbe`) each one its attempts
   * never reached; only these, since another request may hold the probe of any other deployment.
   */
  probes: string[];
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
  const nor =
    fallbacks.length === 0 ? '' : ` nor its fallback${fallbacks.length > 1 ? 's' : ''} ${fallbacks.join(', ')}`;
  return `no provider can serve ${primary}${nor} under the routing settings of this request and workspace`;
}

/**
 * Plans the route of one request. `models` is the primary then the fallbacks, already resolved and
 * validated by the caller. Models with no eligible deployment are skipped (their fallbacks may
 * still serve); when none has any, throws `no_eligible_provider` whose metadata carries the funnel
 * of every model so an operator can read why. `pinnedFor` gives a model's session pin and gets the
 * model's eligible deployments, so the caller (who owns the pin store) can answer with
 * `SessionPins.resolve(key, eligible)`, which drops a pin whose deployment stopped being eligible.
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
  pinnedFor?: (modelId: string, eligible: readonly CompiledDeployment[]) => string | null;
}): RoutePlan {
  const { index, endpoint, models, policy, creds, health, nowMs, random, pinnedFor } = args;
  if (models.length === 0) throw new Error('planRoute needs at least one model');
  const plans: ModelPlan[] = [];
  const probes: string[] = [];
  const onProbe = (d: CompiledDeployment): void => {
    if (!probes.includes(d.id)) probes.push(d.id);
  };
  for (const model of models) {
    const deployments = eligibleOnly({ index, model, endpoint, policy, creds, nowMs });
    // Asked even when nothing is eligible, so the caller can drop a pin whose deployment no longer
    // meets the routing rules (SessionPins.resolve) in that case too.
    const pinned = pinnedFor?.(model.id, deployments) ?? null;
    if (deployments.length === 0) continue;
    plans.push({
      model,
      deployments: orderDeployments({ deployments, policy, index, health, nowMs, random, pinned, onProbe }),
    });
  }
  if (plans.length > 0) return { plans, probes };

  // Nothing can serve: now spend the funnel's bookkeeping, to explain why.
  const funnels = models.map((model) => ({
    model: model.id,
    funnel: eligibleDeployments({ index, model, endpoint, policy, creds, nowMs }).funnel,
  }));
  const [primary, ...rest] = funnels as [(typeof funnels)[number], ...typeof funnels];
  const metadata: NoEligibleProviderMetadata = { model: primary.model, funnel: primary.funnel };
  if (rest.length > 0) metadata.fallbacks = rest;
  throw new GatewayError('no_eligible_provider', noEligibleMessage(models), { metadata });
}
