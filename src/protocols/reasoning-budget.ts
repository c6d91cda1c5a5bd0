// Chat Completions rewrite 5 (docs/api.md): for platforms that limit reasoning only by a token budget, the requested
// level becomes a budget, and the output limit is split so that reasoning + reply never exceed it.
import type { ReasoningLevel } from '../config/compiled.ts';

export interface BudgetPolicy {
  tokens: Partial<Record<ReasoningLevel, number>>;
  minReplyTokens: number;
}

export interface BudgetSplit {
  /** Reasoning token budget to send, or 0 for "reasoning off". */
  reasoningTokens: number;
  /** The new output limit for the reply, or null when the request set none. */
  replyLimit: number | null;
}

/**
 * `limit` is the request's output limit (max_tokens), or null. With a limit, the budget is capped so
 * that at least `minReplyTokens` (or the whole limit, if smaller) stay for the reply, and the reply
 * limit becomes limit − budget: budget + reply == limit, never more.
 * Returns null when the level has no budget on this platform (the level is then forwarded as is).
 */
export function splitBudget(level: ReasoningLevel, limit: number | null, policy: BudgetPolicy): BudgetSplit | null {
  if (level === 'none') return { reasoningTokens: 0, replyLimit: limit };
  const budget = policy.tokens[level];
  if (budget === undefined) return null;
  if (limit === null) return { reasoningTokens: budget, replyLimit: null };
  const keep = Math.min(policy.minReplyTokens, limit);
  const reasoningTokens = Math.max(0, Math.min(budget, limit - keep));
  return { reasoningTokens, replyLimit: limit - reasoningTokens };
}
