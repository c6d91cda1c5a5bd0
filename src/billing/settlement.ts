// What a finished request costs, from the attempt that answered. Only a committed attempt is billed.
//   final usage reported        → exact cost at the channel's effective price when the answer began
//   no final usage (a stream cut by the provider, the client, a write stall or the drain deadline;
//   a provider that reports none) → an estimate, flagged `estimated` in the ledger: input = the
//                                 provider's own input counts when it stated them before its end
//                                 (Messages' message_start), else request bytes / 4; output = one token
//                                 per content event (a JSON answer: its bytes / 4). A provisional
//                                 output figure (message_start's `output_tokens: 1`) is never used.
//   the client side ended a stream (went away, or stopped reading: write stall) on a platform without
//   stream cancellation → the hold (the provider keeps generating and billing us for up to the worst
//                                 case the hold was sized for)
//   drained (the gateway ended the stream at its drain deadline) → the estimate on every platform:
//                                 the client did not choose to stop
//   no committed attempt        → the hold is released: nothing is charged
//
// Bounds — a settlement is never above what the request could possibly have cost:
//   - every settlement is at most the request's bound on the answering channel (src/billing/bound.ts:
//     its prompt at most the deployment's context, its output at most the request's output limit, at
//     the highest price of every class either could be billed at, plus the request fee and what web
//     search and whole images can add). A provider report priced above it is charged the bound and
//     flagged `capped` in the ledger with what it priced at as reported (`reportedCostAtto`); the
//     caller logs and counts it. Never billed blind. The bound is wider than the hold: a provider may
//     report more than the hold and is billed in full, up to the bound.
//   - an estimate is the gateway's own figure, not the provider's word: what it adds beyond what the
//     provider stated (the output, and the prompt when no input count came) never takes the charge
//     above the hold, the most the request was admitted for. Flagged `capped` (`cap: 'hold'`) when
//     it would have.
import type { CompiledDeployment, CompiledModel, CompiledPlatform, PriceList } from '../config/compiled.ts';
import { ATTO_PER_NANO } from '../money.ts';
import { settlementBoundNano, type UsageBound } from './bound.ts';
import { computeCharge } from './charge.ts';
import { effectivePricing } from './price.ts';
import type { InputUsage, Usage } from './usage.ts';

/** Prompt tokens estimated from the request size when the provider reports none (≈ 4 bytes a token). */
export function estimatedPromptTokens(requestBytes: number): number {
  return Math.ceil(requestBytes / 4);
}

/** What settlement reads of the answering attempt (a committed attempt outcome). */
export interface SettledAnswer {
  /** The provider's count for the whole answer, or null. */
  usage: Usage | null;
  /** Input counts the provider stated before its end (null when none). */
  inputUsage: InputUsage | null;
  /** A stream (estimates count content events) rather than a JSON answer (content bytes). */
  stream: boolean;
  /** The answer reached its normal end. */
  completed: boolean;
  /** The client side ended the answer: it went away, or stopped reading (a write stall). */
  clientAborted: boolean;
  contentEvents: number;
  contentBytes: number;
}

/** The ledger row's details: what was charged for, and on which basis. */
export type SettlementDetails = {
  model: string;
  provider: string;
  deployment: string;
  basis?: 'hold_uncancellable_abort';
  promptTokens?: number;
  completionTokens?: number;
  reasoningTokens?: number;
  cachedTokens?: number;
  bracket?: number;
  estimated?: boolean;
  /** An estimate whose input counts are the provider's own (stated before its end): only what the
   *  gateway added is held to the hold. */
  inputReported?: boolean;
  costAtto?: string;
  /** The charge was cut: to the request's bound (`cap: 'bound'`), or an estimate to its hold (`'hold'`). */
  capped?: boolean;
  cap?: 'bound' | 'hold';
  /** What the usage (as reported, or as estimated) priced at before the cut, atto-USD. */
  reportedCostAtto?: string;
  /** The request's bound on the answering channel, nano-USD. */
  boundNano?: string;
};

/** How a settlement was cut (null when it was not). */
export interface SettlementCap {
  cap: 'bound' | 'hold';
  /** The uncut charge of the usage, atto-USD. */
  reportedAtto: bigint;
  /** What was charged instead, nano-USD. */
  chargedNano: bigint;
  boundNano: bigint;
}

export interface Settlement {
  costNano: bigint;
  usage: Usage | null;
  details: SettlementDetails;
  capped: SettlementCap | null;
}

export function settlementFor(args: {
  model: CompiledModel;
  deployment: CompiledDeployment;
  platform: CompiledPlatform;
  outcome: SettledAnswer;
  holdNano: bigint;
  requestBytes: number;
  pricedAtMs: number;
  /** The most prompt and output tokens the request could have used on this deployment. */
  bound: UsageBound;
}): Settlement {
  const { model, deployment, platform, outcome } = args;
  const { pricing } = effectivePricing(model, deployment, args.pricedAtMs);
  const boundNano = settlementBoundNano(pricing, args.bound);

  if (outcome.clientAborted && !outcome.completed && !platform.supportsStreamCancellation) {
    // The hold is sized on the body, the bound on the context window: a body larger than the window
    // holds more than the request could cost.
    // biome-ignore lint/complexity/useMathMinMax: bigints; Math.min throws a TypeError on them.
    const costNano = args.holdNano < boundNano ? args.holdNano : boundNano;
    return {
      costNano,
      usage: outcome.usage,
      details: { model: model.id, provider: platform.id, deployment: deployment.id, basis: 'hold_uncancellable_abort' },
      capped: null,
    };
  }
  let usage = outcome.usage;
  let estimated = false;
  if (usage === null) {
    estimated = true;
    usage = {
      ...(outcome.inputUsage ?? { promptTokens: estimatedPromptTokens(args.requestBytes) }),
      completionTokens: outcome.stream ? outcome.contentEvents : Math.ceil(outcome.contentBytes / 4),
    };
  }
  const charge = computeCharge(usage, pricing);
  const limit = estimated
    ? estimateLimit(args.holdNano, boundNano, outcome.inputUsage, pricing)
    : { nano: boundNano, cap: 'bound' as const };
  // Built field by field (this runs once per answered request): conditional object spreads took
  // V8's generic copy path. The key order is the ledger row's, as before.
  const details: SettlementDetails = {
    model: model.id,
    provider: platform.id,
    deployment: deployment.id,
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
  };
  if (usage.reasoningTokens !== undefined) details.reasoningTokens = usage.reasoningTokens;
  if (usage.cacheReadTokens !== undefined) details.cachedTokens = usage.cacheReadTokens;
  if (charge.bracketMinPromptTokens !== null) details.bracket = charge.bracketMinPromptTokens;
  if (estimated) details.estimated = true;
  if (estimated && outcome.inputUsage) details.inputReported = true;
  if (charge.totalNano <= limit.nano) {
    details.costAtto = charge.totalAtto.toString();
    return { costNano: charge.totalNano, usage, details, capped: null };
  }
  details.costAtto = (limit.nano * ATTO_PER_NANO).toString();
  details.capped = true;
  details.cap = limit.cap;
  details.reportedCostAtto = charge.totalAtto.toString();
  details.boundNano = boundNano.toString();
  return {
    costNano: limit.nano,
    usage,
    details,
    capped: { cap: limit.cap, reportedAtto: charge.totalAtto, chargedNano: limit.nano, boundNano },
  };
}

/**
 * The most an estimate may charge: what the provider itself stated (its input counts, priced alone)
 * or the hold, whichever is more — the gateway's own guesses never add beyond the hold — and never
 * above the bound.
 */
function estimateLimit(
  holdNano: bigint,
  boundNano: bigint,
  stated: InputUsage | null,
  pricing: PriceList,
): { nano: bigint; cap: 'bound' | 'hold' } {
  let limit = holdNano;
  if (stated !== null) {
    const statedNano = computeCharge({ ...stated, completionTokens: 0 }, pricing).totalNano;
    if (statedNano > limit) limit = statedNano;
  }
  return limit < boundNano ? { nano: limit, cap: 'hold' } : { nano: boundNano, cap: 'bound' };
}
