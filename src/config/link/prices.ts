// Rules of a price list, shared by a model's list prices and a deployment's channel prices: bracket
// order, no zero optional class, no class a bracket adds; and a channel price never above list.
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

/** Rules of one price list (list prices or a channel's): bracket order, no zero optional class, no new class in a bracket. */
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
        ctx.report(c, [...bp, cls], `bracket prices "${cls}" but the base prices do not (a bracket only restates base classes)`);
      } else if (cls !== 'prompt' && cls !== 'completion' && zero(val)) {
        ctx.report(c, [...bp, cls], 'optional price classes must be absent, not 0');
      }
    }
  });
}

/** A channel price list never exceeds list, class by class, at every bracket it declares. */
export function notAboveList(ctx: LinkContext, c: CheckedFile, path: PathSegment[], ch: Pricing, list: Pricing): void {
  const compare = (p: PathSegment[], prices: Partial<Record<PriceClass, string>>, listPrices: Partial<Record<PriceClass, string>>, where: string) => {
    for (const cls of PRICE_CLASSES) {
      const val = prices[cls];
      if (val === undefined) continue;
      const lv = listPrices[cls];
      if (lv === undefined) ctx.report(c, [...p, cls], `the model's list prices do not price "${cls}"${where}`);
      else if (decimalToAtto(val) > decimalToAtto(lv)) ctx.report(c, [...p, cls], `${cls} ${val} is above the list price ${lv}${where}`);
    }
  };
  compare(path, ch, list, '');
  (ch.overrides ?? []).forEach((b, k) => {
    compare([...path, 'overrides', k], b, effectiveAt(list, b.min_prompt_tokens), ` at ${b.min_prompt_tokens} prompt tokens`);
  });
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
