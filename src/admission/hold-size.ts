// How much one request holds on its wallet: the worst case over every model and deployment its route
// plan may reach (fallback models and every deployment of each), at the prices in force when it was
// admitted. The arithmetic per price list is billing's (`worstCaseHoldNano`); this file only decides
// which price lists and which token bounds a request is held at.
import { worstCaseHoldNano } from '../billing/hold.ts';
import { effectivePricing } from '../billing/price.ts';
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import type { ModelPlan } from '../routing/plan.ts';

/** What the request itself bounds: its prompt tokens, and its output tokens per model — within one
 *  deployment's limits when given (a deployment may cap output below its model). */
export interface RequestBounds {
  promptTokens: number;
  outputTokens: (model: CompiledModel, deployment?: CompiledDeployment) => number;
}

/** Nano-USD to hold for a request over its route plan; 0 when nothing it may reach is priced. */
export function requestHoldNano(plans: readonly ModelPlan[], bounds: RequestBounds, nowMs: number): bigint {
  let hold = 0n;
  for (const p of plans) {
    for (const d of p.deployments) {
      const h = worstCaseHoldNano({
        pricings: [effectivePricing(p.model, d, nowMs).pricing],
        promptTokenBound: bounds.promptTokens,
        completionTokenBound: bounds.outputTokens(p.model, d),
      });
      if (h > hold) hold = h;
    }
  }
  return hold;
}
