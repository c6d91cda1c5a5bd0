// The usage numbers a simulated reply reports: scripted values verbatim, otherwise estimates.
import type { Behaviour } from './behaviour.ts';

export interface UsageNumbers {
  prompt: number;
  completion: number;
  cached: number;
  reasoning: number;
  cacheWrite: number;
}

/** Completion defaults to the reply's words plus any scripted reasoning tokens; the prompt estimate runs only when
 *  needed. */
export function resolveUsage(b: Behaviour, promptEstimate: () => number, outputTokens: number): UsageNumbers {
  const u = b.usage;
  const reasoning = u?.reasoning ?? 0;
  return {
    prompt: u?.prompt ?? promptEstimate(),
    completion: u?.completion ?? outputTokens + reasoning,
    cached: u?.cached ?? 0,
    reasoning,
    cacheWrite: u?.cacheWrite ?? 0,
  };
}
