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
import { computeCharge } from './charge.ts';
import { effectivePricing } from './price.ts';
import type { InputUsage, Usage } from './usage.ts';
import type { CompiledDeployment, CompiledModel, CompiledPlatform } from '../config/compiled.ts';

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
  costAtto?: string;
};

export interface Settlement {
  costNano: bigint;
  usage: Usage | null;
  details: SettlementDetails;
}

export function settlementFor(args: {
  model: CompiledModel;
  deployment: CompiledDeployment;
  platform: CompiledPlatform;
  outcome: SettledAnswer;
  holdNano: bigint;
  requestBytes: number;
  pricedAtMs: number;
}): Settlement {
  const { model, deployment, platform, outcome } = args;
  const base: SettlementDetails = { model: model.id, provider: platform.id, deployment: deployment.id };

  if (outcome.clientAborted && !outcome.completed && !platform.supportsStreamCancellation) {
    return { costNano: args.holdNano, usage: outcome.usage, details: { ...base, basis: 'hold_uncancellable_abort' } };
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
  const { pricing } = effectivePricing(model, deployment, args.pricedAtMs);
  const charge = computeCharge(usage, pricing);
  // Built field by field (this runs once per answered request): conditional object spreads took
  // V8's generic copy path. The key order is the ledger row's, as before.
  const details: SettlementDetails = { model: base.model, provider: base.provider, deployment: base.deployment, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens };
  if (usage.reasoningTokens !== undefined) details.reasoningTokens = usage.reasoningTokens;
  if (usage.cacheReadTokens !== undefined) details.cachedTokens = usage.cacheReadTokens;
  if (charge.bracketMinPromptTokens !== null) details.bracket = charge.bracketMinPromptTokens;
  if (estimated) details.estimated = true;
  details.costAtto = charge.totalAtto.toString();
  return { costNano: charge.totalNano, usage, details };
}
