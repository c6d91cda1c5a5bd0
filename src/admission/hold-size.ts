// How much one request holds on its wallet: the worst case over every model and deployment its route
// plan may reach (fallback models and every deployment of each), at the prices in force when it was
// admitted. The arithmetic per price list is billing's (`worstCaseHoldNano`); this file only decides
// which price lists and which token bounds a request is held at — and, for a refused request, the
// largest output limit that would have been held within the wallet's available amount.
import { worstCaseHoldNano } from '../billing/hold.ts';
import { effectivePricing } from '../billing/price.ts';
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import { nanoToDecimal } from '../money.ts';
import type { InboundRequest } from '../protocols/types.ts';
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

/**
 * What a 402 tells the caller about its output limit: the largest value of the request's output-limit
 * field whose hold fits `availableNano`, found by the same hold computation that refused it (a hold
 * never shrinks as the limit grows, so a binary search over it is exact); or, when not even one
 * output token fits, that — and what its input alone holds when even zero output tokens do not.
 */
export function outputLimitAdvice(
  plans: readonly ModelPlan[],
  asked: Pick<InboundRequest, 'promptBound' | 'outputBound' | 'outputLimit'>,
  availableNano: bigint,
  nowMs: number,
): string {
  const field = asked.outputLimit;
  if (field === undefined) return '';
  const fits = (tokens: number): boolean => {
    const at = field.boundsAt(tokens);
    return (
      requestHoldNano(plans, { promptTokens: at.promptTokens, outputTokens: (m, d) => at.outputBound(m, d) }, nowMs) <=
      availableNano
    );
  };
  // No advice above what the request was held at (its largest output bound): past it a larger value
  // changes nothing but the body's length.
  let top = 0;
  for (const p of plans) for (const d of p.deployments) top = Math.max(top, asked.outputBound(p.model, d));
  if (fits(top)) return top >= 1 ? `; it fits with ${field.name} at most ${top}` : '';
  // Invariant: lo fits (0 counts as fitting here), hi does not.
  let lo = 0;
  let hi = top;
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  if (lo >= 1) return `; it fits with ${field.name} at most ${lo}`;
  const inputOnly = requestHoldNano(plans, { promptTokens: asked.promptBound, outputTokens: () => 0 }, nowMs);
  if (inputOnly > availableNano)
    return `; it does not fit even with no output tokens: its input alone needs up to $${nanoToDecimal(inputOnly)} held`;
  return `; it does not fit even with ${field.name} 1`;
}
