// Output-token bounds for the wallet hold (docs/api.md: the hold covers the worst case): the limit a request
// sets in its protocol's own fields — capped at what the model (or the deployment) can produce at
// most — else the model's, else a documented default.
import type { JsonObject, OutputLimits } from './types.ts';

/** Output-token bound when neither the request nor the model states one. */
export const DEFAULT_OUTPUT_BOUND = 32_768;

/** The model's own output bound: its completion limit, else its context length, else the default. */
export function modelOutputBound(limits: OutputLimits): number {
  return limits.maxCompletionTokens ?? limits.contextLength ?? DEFAULT_OUTPUT_BOUND;
}

/**
 * The first of `fields` the request sets to a positive integer, capped at the most the model can
 * produce (its completion limit, else its context length: no answer is longer than either), else the
 * model's bound. The cap is why a request asking for more than the model can write is held at what
 * the model can write — a wallet that covers that is admitted.
 */
export function requestedOutputLimit(body: JsonObject, fields: readonly string[], limits: OutputLimits): number {
  for (const f of fields) {
    const v = body[f];
    if (typeof v === 'number' && Number.isInteger(v) && v > 0) {
      const ceiling = limits.maxCompletionTokens ?? limits.contextLength;
      return ceiling !== null && ceiling < v ? ceiling : v;
    }
  }
  return modelOutputBound(limits);
}

/** An image count (`n`) when it is a positive integer, else 1 (what the provider defaults to). */
export function imageCount(n: unknown): number {
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 1;
}

/**
 * `count` answers of up to `perAnswer` tokens each, saturating at 2^53 − 1: with `n` near the safe
 * limit the exact product is not representable, and a hold of 2^53 − 1 tokens is already more than
 * any wallet covers at a non-zero price, so the request is refused 402 rather than failing 500.
 */
export function timesBound(count: number, perAnswer: number): number {
  const v = count * perAnswer;
  return Math.min(v, Number.MAX_SAFE_INTEGER);
}
