// The most a request could possibly have cost on the channel that answered it: the bound no
// settlement exceeds (src/billing/settlement.ts caps a provider's report at it). It is wider than the
// hold (src/billing/hold.ts), which stays the admission estimate — a provider may legitimately report
// more than the hold (images by URL or files the provider expands into many prompt tokens, web
// searches), never more than this:
//
//   promptTokenBound     × the highest input-class price in any bracket (cache writes, audio, image
//                          tokens… — whichever input class the prompt could be billed at)
// + completionTokenBound × the highest output-class price in any bracket (reasoning, audio, image
//                          output…)
// + the highest request fee in any bracket
// + promptTokenBound     × the highest per-image price (a whole input image is at least one token of
//                          the prompt it is part of)
// + completionTokenBound × the highest web-search price (the model asks for each call in its output,
//                          at least one output token a call)
// rounded UP to nano-USD. It dominates `computeCharge` for every usage whose prompt and output stay
// within the two token bounds, for the same reasons the hold dominates it (see hold.ts).
//
// The token bounds (chosen by the caller, src/api/inference.ts):
//   prompt  the deployment's prompt limit — its max prompt tokens, else its context length (the
//           model's when the deployment states none): no provider reads more than its window. With
//           neither declared, the request's own prompt bound (its body size) is all there is.
//   output  the request's output limit as its protocol computed it for the hold (max_tokens and its
//           kin, capped at what the deployment or model can write).
import type { CompiledDeployment, PriceList } from '../config/compiled.ts';
import { attoToNanoCeil } from '../money.ts';
import { priceMaxima } from './hold.ts';

export interface UsageBound {
  promptTokens: number;
  completionTokens: number;
}

function count(v: number, name: string): bigint {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${name} must be a non-negative integer, got ${v}`);
  return BigInt(v);
}

/** The most a request within `bound` can cost under `list`, nano-USD (rounded up). */
export function settlementBoundNano(list: PriceList, bound: UsageBound): bigint {
  const prompt = count(bound.promptTokens, 'promptTokens');
  const completion = count(bound.completionTokens, 'completionTokens');
  const m = priceMaxima(list);
  const atto = prompt * (m.input + m.image) + completion * (m.output + m.webSearch) + m.request;
  return attoToNanoCeil(atto);
}

/** The most prompt tokens a deployment reads: its prompt limit, else its context window, else
 *  `fallback` (the request's own bound) when it declares neither. */
export function promptTokenLimit(
  deployment: Pick<CompiledDeployment, 'maxPromptTokens' | 'contextLength'>,
  fallback: number,
): number {
  const { maxPromptTokens, contextLength } = deployment;
  if (maxPromptTokens !== null && contextLength !== null) return Math.min(maxPromptTokens, contextLength);
  return maxPromptTokens ?? contextLength ?? fallback;
}
