// The cost of one request: a normalised Usage priced against a channel's PriceList, exactly.
//
// Billing contract:
// 1. Bracket: chosen by `usage.promptTokens` (pricesAt): the bracket with the largest
//    min_prompt_tokens not above it, laid over the base; below the first bracket, the base.
// 2. Input split of promptTokens, in this order, each part taking at most what is left:
//      cacheReadTokens        → input_cache_read
//      cacheWriteTokens       → input_cache_write
//      cacheWrite1hTokens     → input_cache_write_1h (unpriced: input_cache_write, then prompt)
//      cachedAudioInputTokens → input_audio_cache
//      audioInputTokens       → audio
//      imageInputTokens       → image_token
//      the remainder          → prompt
//    A class that is not priced bills its tokens at `prompt`: they are input tokens the vendor did
//    not price separately.
// 3. Output split of completionTokens, same way:
//      reasoningTokens → internal_reasoning, audioOutputTokens → audio_output,
//      imageOutputTokens → image_output, the remainder → completion;
//    an unpriced class bills at `completion`.
// 4. Per-unit fees: `request` once per request when priced; `image` × inputImages; `web_search` ×
//    webSearchCalls. Unpriced per-unit classes are free (there is no text class to fall back to).
// 5. Clamping: a sub-count larger than what is left of its total is cut to it (a provider bug must
//    never create a negative remainder), so input units always sum to promptTokens and output units
//    to completionTokens. The order in 2 and 3 decides which part is cut first.
// 6. Lines: one per billed class, in the API's class order; units billed at a fallback class are
//    merged into that class's line; zero-unit lines are omitted (zero-price lines are kept: they show
//    what was consumed).
// 7. Total: exact sum of line amounts in atto-USD, rounded once, half up, to nano-USD.
import type { PriceClass, PriceList } from '../config/compiled.ts';
import { PRICE_CLASSES } from '../config/compiled.ts';
import { attoToNanoRounded } from '../money.ts';
import { billedClass } from './price-classes.ts';
import { bracketAt, pricesAt } from './price.ts';
import type { Usage } from './usage.ts';

export interface ChargeLine {
  priceClass: PriceClass;
  units: number;
  unitPriceAtto: bigint;
  amountAtto: bigint;
}

export interface Charge {
  lines: ChargeLine[];
  totalAtto: bigint;
  /** attoToNanoRounded(totalAtto). */
  totalNano: bigint;
  /** min_prompt_tokens of the bracket billed, null for the base prices. */
  bracketMinPromptTokens: number | null;
}

type CountField = Exclude<keyof Usage, 'promptTokens' | 'completionTokens'>;

const INPUT_PARTS: readonly [CountField, PriceClass][] = [
  ['cacheReadTokens', 'input_cache_read'],
  ['cacheWriteTokens', 'input_cache_write'],
  ['cacheWrite1hTokens', 'input_cache_write_1h'],
  ['cachedAudioInputTokens', 'input_audio_cache'],
  ['audioInputTokens', 'audio'],
  ['imageInputTokens', 'image_token'],
];

const OUTPUT_PARTS: readonly [CountField, PriceClass][] = [
  ['reasoningTokens', 'internal_reasoning'],
  ['audioOutputTokens', 'audio_output'],
  ['imageOutputTokens', 'image_output'],
];

/** A count as a non-negative integer; anything else is a caller bug, not a provider quirk. */
function count(v: number | undefined, name: string): number {
  if (v === undefined) return 0;
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`usage.${name} must be a non-negative integer, got ${v}`);
  return v;
}

export function computeCharge(usage: Usage, pricing: PriceList): Charge {
  const promptTokens = count(usage.promptTokens, 'promptTokens');
  const completionTokens = count(usage.completionTokens, 'completionTokens');
  const prices = pricesAt(pricing, promptTokens);
  const bracket = bracketAt(pricing, promptTokens);
  const units = new Map<PriceClass, number>();
  const add = (cls: PriceClass | null, n: number): void => {
    if (cls !== null && n > 0) units.set(cls, (units.get(cls) ?? 0) + n);
  };

  const split = (total: number, parts: readonly [CountField, PriceClass][], rest: PriceClass): void => {
    let left = total;
    for (const [field, cls] of parts) {
      const n = Math.min(count(usage[field], field), left);
      left -= n;
      add(billedClass(prices, cls), n);
    }
    add(rest, left);
  };
  split(promptTokens, INPUT_PARTS, 'prompt');
  split(completionTokens, OUTPUT_PARTS, 'completion');

  if (prices.request !== undefined) add('request', 1);
  add(billedClass(prices, 'image'), count(usage.inputImages, 'inputImages'));
  add(billedClass(prices, 'web_search'), count(usage.webSearchCalls, 'webSearchCalls'));

  const lines: ChargeLine[] = [];
  let totalAtto = 0n;
  for (const cls of PRICE_CLASSES) {
    const n = units.get(cls);
    const unitPriceAtto = prices[cls];
    if (n === undefined || unitPriceAtto === undefined) continue;
    const amountAtto = BigInt(n) * unitPriceAtto;
    totalAtto += amountAtto;
    lines.push({ priceClass: cls, units: n, unitPriceAtto, amountAtto });
  }
  return {
    lines,
    totalAtto,
    totalNano: attoToNanoRounded(totalAtto),
    bracketMinPromptTokens: bracket === null ? null : bracket.minPromptTokens,
  };
}
