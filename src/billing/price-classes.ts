// Which price class a unit is actually billed at: the class groups (input tokens, output tokens,
// per-unit fees) and the fallback when a token class is not priced. Shared by the charge, the hold
// and the "is this channel below list" comparison, so all three agree on what a unit costs.
import type { PriceClass, PriceSet } from '../config/compiled.ts';

/** A price set resolved for one context length: base with the bracket laid over it. */
export type ResolvedPrices = PriceSet & { prompt: bigint; completion: bigint };

/** Token classes that are parts of the prompt; an unpriced one is billed as input text. */
export const INPUT_TOKEN_CLASSES = [
  'prompt',
  'input_cache_read',
  'input_cache_write',
  'input_cache_write_1h',
  'input_audio_cache',
  'audio',
  'image_token',
] as const satisfies readonly PriceClass[];

/** Token classes that are parts of the completion; an unpriced one is billed as output text. */
export const OUTPUT_TOKEN_CLASSES = [
  'completion',
  'internal_reasoning',
  'audio_output',
  'image_output',
] as const satisfies readonly PriceClass[];

/** Classes counted in whole units (requests, images, calls); unpriced means free, no fallback. */
export const PER_UNIT_CLASSES = ['request', 'image', 'web_search'] as const satisfies readonly PriceClass[];

const INPUT_SET: ReadonlySet<PriceClass> = new Set(INPUT_TOKEN_CLASSES);

/**
 * The class whose price a unit of `cls` is billed at under `prices`, or null when it is not billed.
 * Token classes fall back to the text class of their side: those tokens are input or output text
 * the vendor did not price separately. A one-hour cache write falls back to the default-TTL write
 * first, because a vendor that prices writes but not a 1h tier charges 1h writes as writes.
 */
export function billedClass(prices: ResolvedPrices, cls: PriceClass): PriceClass | null {
  if (prices[cls] !== undefined) return cls;
  if (cls === 'input_cache_write_1h' && prices.input_cache_write !== undefined) return 'input_cache_write';
  if (INPUT_SET.has(cls)) return 'prompt';
  if ((OUTPUT_TOKEN_CLASSES as readonly PriceClass[]).includes(cls)) return 'completion';
  return null;
}

/** What one unit of `cls` costs under `prices`, atto-USD (0 for an unpriced per-unit class). */
export function billedUnitPrice(prices: ResolvedPrices, cls: PriceClass): bigint {
  const billed = billedClass(prices, cls);
  return billed === null ? 0n : (prices[billed] ?? 0n);
}
