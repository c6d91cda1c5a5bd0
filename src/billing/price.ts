// Effective channel prices: what a deployment bills now (list, percent discount or channel price
// list, within its time window), bracket selection by prompt length, and the catalog rendering of
// a price list. All amounts are exact bigint atto-USD per unit; nothing here touches a float.
import type {
  CompiledDeployment,
  CompiledModel,
  PriceBracket,
  PriceClass,
  PriceList,
  PriceSet,
} from '../config/compiled.ts';
import { PRICE_CLASSES } from '../config/compiled.ts';
import { attoToDecimal } from '../money.ts';
import { type ResolvedPrices, billedUnitPrice } from './price-classes.ts';

export interface Discount {
  percentOff: number;
  endsAt: string | null;
}

export interface EffectivePricing {
  pricing: PriceList;
  list: PriceList;
  discount: Discount | null;
}

/** Only the keys with a defined price (a Partial may carry explicit undefineds; they must not blank the base). */
function definedPrices(set: PriceSet): PriceSet {
  const out: PriceSet = {};
  for (const cls of PRICE_CLASSES) {
    const v = set[cls];
    if (v !== undefined) out[cls] = v;
  }
  return out;
}

/** The bracket that applies to a prompt context length, or null below the first one. */
export function bracketAt(list: PriceList, promptTokens: number): PriceBracket | null {
  // Scans all brackets instead of trusting the ascending order: the answer must not depend on it.
  let best: PriceBracket | null = null;
  for (const b of list.overrides) {
    if (b.minPromptTokens <= promptTokens && (best === null || b.minPromptTokens > best.minPromptTokens)) best = b;
  }
  return best;
}

/**
 * Prices that apply to a prompt context length: the bracket with the largest minPromptTokens not
 * above it, laid over the base (brackets replace, never merge to zero: a class the bracket does
 * not restate keeps the base price); below the first bracket, the base.
 */
export function pricesAt(list: PriceList, promptTokens: number): ResolvedPrices {
  const bracket = bracketAt(list, promptTokens);
  const base = definedPrices(list.base) as ResolvedPrices;
  return bracket === null ? base : { ...base, ...definedPrices(bracket.prices) };
}

/** Every distinct resolved price set of a list: the base and each bracket laid over it. */
export function allResolvedPrices(list: PriceList): ResolvedPrices[] {
  return [pricesAt(list, 0), ...list.overrides.map((b) => pricesAt(list, b.minPromptTokens))];
}

/** Whether a window ending at `endsAt` (exclusive) is still open at `nowMs`. */
function isActive(endsAt: string | null, nowMs: number): boolean {
  if (endsAt === null) return true;
  // An unparseable end (the config schema rejects it) counts as ended: list prices are the safe default.
  const end = Date.parse(endsAt);
  return Number.isFinite(end) && nowMs < end;
}

/**
 * One price reduced by a whole percent. Exact for config prices: they have at most 12 decimals,
 * so the atto value is a multiple of 10^6 and divisible by 100. For any other value the division
 * rounds down — in the customer's favour, so the promised percentage is always honoured.
 */
function discounted(atto: bigint, percent: number): bigint {
  return (atto * BigInt(100 - percent)) / 100n;
}

function discountedSet<T extends PriceSet>(set: T, percent: number): T {
  const out: PriceSet = {};
  for (const cls of PRICE_CLASSES) {
    const v = set[cls];
    if (v !== undefined) out[cls] = discounted(v, percent);
  }
  return out as T;
}

/** A percent discount applied to every class of the base and of every bracket. */
export function discountedList(list: PriceList, percent: number): PriceList {
  if (!Number.isInteger(percent) || percent < 0 || percent > 100) {
    throw new RangeError(`discount percent must be an integer 0..100, got ${percent}`);
  }
  return {
    base: discountedSet(list.base, percent),
    overrides: list.overrides.map((b) => ({
      minPromptTokens: b.minPromptTokens,
      prices: discountedSet(b.prices, percent),
    })),
  };
}

type Comparison = 'equal' | 'below' | 'above' | 'mixed';

/**
 * Compares what every unit would be billed at under `channel` vs `list`, at every context length.
 * Resolved prices only change at a bracket threshold of either list, so checking length 0 and each
 * threshold covers all lengths. Billed prices (with fallbacks) are compared, not raw keys: a channel
 * that drops a cheap cache-read price bills those tokens at `prompt`, which is not cheaper.
 */
function compareToList(channel: PriceList, list: PriceList): Comparison {
  const thresholds = new Set<number>([0]);
  for (const b of list.overrides) thresholds.add(b.minPromptTokens);
  for (const b of channel.overrides) thresholds.add(b.minPromptTokens);
  let lower = false;
  let higher = false;
  for (const t of thresholds) {
    const c = pricesAt(channel, t);
    const l = pricesAt(list, t);
    for (const cls of PRICE_CLASSES) {
      const cp = billedUnitPrice(c, cls);
      const lp = billedUnitPrice(l, cls);
      if (cp < lp) lower = true;
      else if (cp > lp) higher = true;
    }
  }
  if (lower && higher) return 'mixed';
  if (lower) return 'below';
  if (higher) return 'above';
  return 'equal';
}

/** round(100 × (1 − channel / list)) with integer math, half up; list > 0 and channel ≤ list. */
function percentBelow(channel: bigint, list: bigint): number {
  const saved = list - channel;
  return Number((200n * saved + list) / (2n * list));
}

/** Sum of the billed unit prices of `classes` over the given resolved sets. */
function basket(sets: ResolvedPrices[], classes: readonly PriceClass[]): bigint {
  let sum = 0n;
  for (const s of sets) for (const cls of classes) sum += billedUnitPrice(s, cls);
  return sum;
}

/**
 * The headline percent off for a channel price list below list. Reading chosen: the saving on the
 * base input-text plus output-text unit prices (prompt + completion), the same figure `sort: price`
 * ranks by. When the list's base text is free (sum 0) the saving must lie elsewhere; then the
 * basket widens to every base class, and if that is free too, to every class of every bracket
 * (one unit each). The last basket is non-zero whenever the channel is below list.
 */
function channelPercentOff(channel: PriceList, list: PriceList): number {
  const baskets: [ResolvedPrices[], ResolvedPrices[], readonly PriceClass[]][] = [
    [[pricesAt(channel, 0)], [pricesAt(list, 0)], ['prompt', 'completion']],
    [[pricesAt(channel, 0)], [pricesAt(list, 0)], PRICE_CLASSES],
  ];
  // Evaluate both lists at the union of thresholds so the widest basket compares like with like.
  const thresholds = [
    ...new Set([
      0,
      ...list.overrides.map((b) => b.minPromptTokens),
      ...channel.overrides.map((b) => b.minPromptTokens),
    ]),
  ];
  baskets.push([thresholds.map((t) => pricesAt(channel, t)), thresholds.map((t) => pricesAt(list, t)), PRICE_CLASSES]);
  for (const [ch, li, classes] of baskets) {
    const l = basket(li, classes);
    if (l > 0n) {
      const c = basket(ch, classes);
      return c >= l ? 0 : percentBelow(c, l);
    }
  }
  return 0;
}

/**
 * The channel's prices now: `list` = model list prices; `pricing` = what a request routed here is
 * billed (discount applied to every class and bracket, or the channel price list), while active
 * (ends_at exclusive, compared with nowMs); `discount` non-null only while the effective price is
 * below list — every unit billed at most its list price and at least one strictly less. A channel
 * list that is dearer anywhere (the config linker forbids it) is still billed, but never shown as
 * a discount.
 */
export function effectivePricing(
  model: CompiledModel,
  deployment: CompiledDeployment,
  nowMs: number,
): EffectivePricing {
  const ch = deployment.pricing;
  const active = ch.kind !== 'list' && isActive(ch.endsAt, nowMs);
  // The answer depends only on (model, deployment, active): both are immutable config, so it is
  // computed once per state instead of on every request (a discounted list and the comparison with
  // list prices are not cheap).
  let memo = MEMO.get(deployment);
  if (!memo || memo.model !== model) MEMO.set(deployment, (memo = { model, active: null, inactive: null }));
  const hit = active ? memo.active : memo.inactive;
  if (hit) return hit;
  const value = computeEffectivePricing(model, deployment, active);
  if (active) memo.active = value;
  else memo.inactive = value;
  return value;
}

const MEMO = new WeakMap<
  CompiledDeployment,
  { model: CompiledModel; active: EffectivePricing | null; inactive: EffectivePricing | null }
>();

function computeEffectivePricing(
  model: CompiledModel,
  deployment: CompiledDeployment,
  active: boolean,
): EffectivePricing {
  const list = model.listPricing;
  const ch = deployment.pricing;
  if (ch.kind === 'list' || !active) return { pricing: list, list, discount: null };
  const pricing = ch.kind === 'discount' ? discountedList(list, ch.percent) : ch.prices;
  if (compareToList(pricing, list) !== 'below') return { pricing, list, discount: null };
  const percentOff = ch.kind === 'discount' ? ch.percent : channelPercentOff(pricing, list);
  return { pricing, list, discount: { percentOff, endsAt: ch.endsAt } };
}

function renderSet(set: PriceSet, out: Record<string, unknown>): void {
  for (const cls of PRICE_CLASSES) {
    const v = set[cls];
    if (v !== undefined) out[cls] = attoToDecimal(v);
  }
}

/**
 * Catalog rendering of a PriceList: the API's key order, decimal strings via attoToDecimal, optional
 * classes absent when not priced, `overrides` only when non-empty, each bracket
 * `{min_prompt_tokens, ...restated classes}`.
 */
export function renderPricing(list: PriceList): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  renderSet(list.base, out);
  if (list.overrides.length > 0) {
    out['overrides'] = list.overrides.map((b) => {
      const o: Record<string, unknown> = { min_prompt_tokens: b.minPromptTokens };
      renderSet(b.prices, o);
      return o;
    });
  }
  return out;
}

/** Input-text plus output-text unit price (prompt + completion of the base), for `sort: price`. */
export function unitPriceForSort(list: PriceList): bigint {
  return list.base.prompt + list.base.completion;
}
