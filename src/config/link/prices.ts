// Rules of a price list, shared by a model's list prices and a deployment's channel prices: bracket
// order, no zero optional class, no class a bracket adds; and a channel price above list only when the
// deployment says so.
import { PRICE_CLASSES, type PriceClass } from '../compiled.ts';
import { decimalToAtto } from '../../money.ts';
import type { PriceBracket, Pricing } from '../../generated/config-types.ts';
import type { PathSegment } from '../issues.ts';
import type { CheckedFile, LinkContext } from './context.ts';

const OPTIONAL_CLASSES = PRICE_CLASSES.filter((c) => c !== 'prompt' && c !== 'completion');

/** True for a price that is exactly 0 (an unreadable one is the schema's to report). */
function zero(v: string | undefined): boolean {
  try {
    return v !== undefined && decimalToAtto(v) === 0n;
  } catch {
    return false;
  }
}

/** Rules of one price list (list prices or a channel's): bracket order, no zero optional class, no new class in a
 *  bracket. */
export function priceListRules(ctx: LinkContext, c: CheckedFile, path: PathSegment[], p: Pricing): void {
  for (const cls of OPTIONAL_CLASSES) {
    if (zero(p[cls])) ctx.report(c, [...path, cls], 'optional price classes must be absent, not 0');
  }
  (p.overrides ?? []).forEach((b, k) => {
    const bp = [...path, 'overrides', k];
    const prev = p.overrides?.[k - 1];
    if (prev && b.min_prompt_tokens <= prev.min_prompt_tokens) {
      ctx.report(
        c,
        [...bp, 'min_prompt_tokens'],
        `overrides must be strictly ascending by min_prompt_tokens: ${b.min_prompt_tokens} does not follow ${prev.min_prompt_tokens}`,
      );
    }
    for (const cls of PRICE_CLASSES) {
      const val = b[cls];
      if (val === undefined) continue;
      if (p[cls] === undefined) {
        ctx.report(
          c,
          [...bp, cls],
          `bracket prices "${cls}" but the base prices do not (a bracket only restates base classes)`,
        );
      } else if (cls !== 'prompt' && cls !== 'completion' && zero(val)) {
        ctx.report(c, [...bp, cls], 'optional price classes must be absent, not 0');
      }
    }
  });
}

/** One class of a channel price list above list: where it is written, and the first length it is above at. */
interface Above {
  path: PathSegment[];
  cls: PriceClass;
  price: string;
  listPrice: string;
  promptTokens: number;
}

/** Where the channel's price of `cls` at `promptTokens` is written: its bracket there when it restates the class, else
 *  its base. */
function sourceOf(path: PathSegment[], ch: Pricing, cls: PriceClass, promptTokens: number): PathSegment[] {
  let k = -1;
  (ch.overrides ?? []).forEach((b, i) => {
    if (b.min_prompt_tokens <= promptTokens) k = i;
  });
  const b = ch.overrides?.[k];
  return b !== undefined && b[cls] !== undefined ? [...path, 'overrides', k, cls] : [...path, cls];
}

/**
 * Every class the channel bills above list, once per place it is written. Prices in effect only change
 * at a bracket threshold of either list, so comparing at 0 and at each threshold covers every prompt
 * length (a list bracket that lowers a class counts as much as a channel bracket that raises one).
 */
function aboveList(path: PathSegment[], ch: Pricing, list: Pricing): Above[] {
  const starts = (p: Pricing) => (p.overrides ?? []).map((b) => b.min_prompt_tokens);
  const thresholds = [...new Set([0, ...starts(list), ...starts(ch)])].sort((a, b) => a - b);
  const found = new Map<string, Above>();
  for (const t of thresholds) {
    const c = effectiveAt(ch, t);
    const l = effectiveAt(list, t);
    for (const cls of PRICE_CLASSES) {
      const price = c[cls];
      const listPrice = l[cls];
      if (price === undefined || listPrice === undefined || decimalToAtto(price) <= decimalToAtto(listPrice)) continue;
      const at = sourceOf(path, ch, cls, t);
      const key = at.join('.');
      if (!found.has(key)) found.set(key, { path: at, cls, price, listPrice, promptTokens: t });
    }
  }
  return [...found.values()];
}

/**
 * A channel price list against the model's list: it prices only classes the list prices, and it is
 * above list (anywhere, at any prompt length) exactly when it says `above_list: true` — a dearer
 * channel is a fact to state, never a typo to bill.
 */
export function channelAgainstList(
  ctx: LinkContext,
  c: CheckedFile,
  path: PathSegment[],
  ch: Pricing,
  list: Pricing,
  acknowledged: boolean,
): void {
  const pricesPath = [...path, 'prices'];
  const unpriced = (p: PathSegment[], prices: Partial<Record<PriceClass, string>>) => {
    for (const cls of PRICE_CLASSES) {
      if (prices[cls] !== undefined && list[cls] === undefined)
        ctx.report(c, [...p, cls], `the model's list prices do not price "${cls}"`);
    }
  };
  unpriced(pricesPath, ch);
  for (const [k, b] of (ch.overrides ?? []).entries()) unpriced([...pricesPath, 'overrides', k], b);
  const above = aboveList(pricesPath, ch, list);
  if (acknowledged && above.length === 0) {
    ctx.report(c, [...path, 'above_list'], 'above_list is set but no price is above the list price; remove it');
  }
  if (acknowledged) return;
  for (const a of above) {
    const where = a.promptTokens > 0 ? ` at ${a.promptTokens} prompt tokens` : '';
    ctx.report(
      c,
      a.path,
      `${a.cls} ${a.price} is above the list price ${a.listPrice}${where} (set above_list: true if this channel charges more than list)`,
    );
  }
}

/** List prices in effect at a prompt context length: the base, overlaid by the last bracket at or below it. */
export function effectiveAt(p: Pricing, promptTokens: number): Partial<Record<PriceClass, string>> {
  const out: Partial<Record<PriceClass, string>> = {};
  for (const cls of PRICE_CLASSES) if (p[cls] !== undefined) out[cls] = p[cls];
  let bracket: PriceBracket | undefined;
  for (const b of p.overrides ?? []) if (b.min_prompt_tokens <= promptTokens) bracket = b;
  if (bracket) for (const cls of PRICE_CLASSES) if (bracket[cls] !== undefined) out[cls] = bracket[cls];
  return out;
}
