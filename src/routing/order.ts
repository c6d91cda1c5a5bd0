// Attempt order of a model's eligible deployments: `order` tiers, then price or weighted random
// within a tier, down deployments last in their tier, and the session pin first.
import type { CompiledDeployment } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { effectivePricing, unitPriceForSort } from '../billing/price.ts';
import type { EffectivePolicy } from './preferences.ts';
import { type HealthView, isProbingHealthView } from '../availability/serving.ts';

function byId(a: CompiledDeployment, b: CompiledDeployment): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Weight as a sampling weight: anything not a positive finite number counts as 0 (never first). */
function weightOf(d: CompiledDeployment): number {
  return Number.isFinite(d.weight) && d.weight > 0 ? d.weight : 0;
}

/**
 * Weighted random permutation by Efraimidis–Spirakis: each positive-weight deployment draws
 * u ∈ [0,1) and gets the key u^(1/w), highest first — compared as ln(u)/w, which orders the same and
 * avoids underflow for large weights. The first element is then deployment i with probability
 * w_i / Σw, and each later position is again proportional among the rest (sampling without
 * replacement). Weight-0 deployments follow every positive one, by id: they serve only when the
 * others cannot. `random` is drawn once per positive deployment in id order, so a seeded source
 * gives a reproducible order.
 */
function weightedShuffle(tier: CompiledDeployment[], random: () => number): CompiledDeployment[] {
  const ids = [...tier].sort(byId);
  const keyed: { d: CompiledDeployment; key: number }[] = [];
  const zero: CompiledDeployment[] = [];
  for (const d of ids) {
    const w = weightOf(d);
    if (w === 0) {
      zero.push(d);
      continue;
    }
    const u = random();
    keyed.push({ d, key: u > 0 ? Math.log(u) / w : -Infinity });
  }
  keyed.sort((a, b) => b.key - a.key || byId(a.d, b.d));
  return [...keyed.map((k) => k.d), ...zero];
}

/**
 * Cheapest first by input-text plus output-text unit price of the channel's effective prices now
 * (discounts and channel price lists included, list once they end); ties by weight (higher first),
 * then id. A deployment whose model is missing from the index (cannot happen with a linked config)
 * sorts after every priced one.
 */
function priceSort(tier: CompiledDeployment[], index: ConfigIndex, nowMs: number): CompiledDeployment[] {
  const price = new Map<string, bigint | null>();
  for (const d of tier) {
    const model = index.modelById.get(d.model);
    price.set(d.id, model ? unitPriceForSort(effectivePricing(model, d, nowMs).pricing) : null);
  }
  return [...tier].sort((a, b) => {
    const pa = price.get(a.id) ?? null;
    const pb = price.get(b.id) ?? null;
    if (pa !== pb) {
      if (pa === null) return 1;
      if (pb === null) return -1;
      return pa < pb ? -1 : 1;
    }
    return weightOf(b) - weightOf(a) || byId(a, b);
  });
}

/**
 * Attempt order for one model's eligible deployments:
 * 1. Tiers by `policy.order`: deployments of the listed platforms first, in list order; every
 *    unlisted platform shares one last tier.
 * 2. Within a tier: with `sort: price`, cheapest effective channel price first (ties: weight desc,
 *    id asc); without sort, a weighted random permutation, so among equals traffic is shared in
 *    proportion to weight.
 * 3. Within each tier, deployments that are down go after the healthy ones, keeping their order
 *    (a down deployment stays a last resort: health is not part of eligibility).
 * 4. The session pin, when present in `deployments` and not down, moves to the very front.
 *
 * `health.isDown` is called exactly once per deployment: the health tracker hands out its single
 * half-open probe on that call, so asking twice would see a different answer. Every probe claimed
 * here is reported through `onProbe`: a request that never reaches that deployment (an earlier one
 * answered) must give it back, or the deployment stays down until the claim lapses.
 */
export function orderDeployments(args: {
  deployments: CompiledDeployment[];
  policy: EffectivePolicy;
  index: ConfigIndex;
  health: HealthView;
  nowMs: number;
  random: () => number;
  pinned?: string | null;
  /** Called for each deployment whose half-open probe this ordering claimed. */
  onProbe?: (d: CompiledDeployment) => void;
}): CompiledDeployment[] {
  const { deployments, policy, index, health, nowMs, random, pinned, onProbe } = args;
  const down = new Map<string, boolean>();
  for (const d of deployments) {
    if (down.has(d.id)) continue;
    const isDown = health.isDown(d, nowMs);
    down.set(d.id, isDown);
    // Up for this caller yet down without claiming: the tracker just handed this caller the probe.
    if (!isDown && onProbe && isProbingHealthView(health) && health.passive.isDown(d, nowMs)) onProbe(d);
  }

  const tierIndex = new Map<string, number>();
  for (const p of policy.order) if (!tierIndex.has(p)) tierIndex.set(p, tierIndex.size);
  const tiers: CompiledDeployment[][] = Array.from({ length: tierIndex.size + 1 }, () => []);
  for (const d of deployments) (tiers[tierIndex.get(d.platform) ?? tierIndex.size] as CompiledDeployment[]).push(d);

  const out: CompiledDeployment[] = [];
  for (const tier of tiers) {
    if (tier.length === 0) continue;
    const ranked = policy.sort === 'price' ? priceSort(tier, index, nowMs) : weightedShuffle(tier, random);
    out.push(...ranked.filter((d) => !down.get(d.id)), ...ranked.filter((d) => down.get(d.id)));
  }

  if (pinned) {
    const at = out.findIndex((d) => d.id === pinned);
    if (at > 0 && !down.get(pinned)) out.unshift(...out.splice(at, 1));
  }
  return out;
}
