// Property-based tests (fast-check) of the billing arithmetic: exact sums, unit conservation,
// monotonicity, discounts never raising a price, the hold dominating the charge, the settlement bound
// dominating the charge within it and every settlement (an estimate: the hold too), rendering
// round-trips and half-up rounding at exact .5 nano boundaries.
import fc from 'fast-check';
import t from 'tap';
import { computeCharge } from '../../src/billing/charge.ts';
import { settlementBoundNano } from '../../src/billing/bound.ts';
import { worstCaseHoldNano } from '../../src/billing/hold.ts';
import { INPUT_TOKEN_CLASSES, OUTPUT_TOKEN_CLASSES } from '../../src/billing/price-classes.ts';
import { effectivePricing, pricesAt, renderPricing } from '../../src/billing/price.ts';
import { settlementFor } from '../../src/billing/settlement.ts';
import type { Usage } from '../../src/billing/usage.ts';
import type { CompiledPlatform, PriceClass, PriceList, PriceSet } from '../../src/config/compiled.ts';
import { PRICE_CLASSES } from '../../src/config/compiled.ts';
import { ATTO_PER_NANO, attoToNanoRounded, decimalToAtto } from '../../src/money.ts';
import { configPrice, deployment, model, monotonePriceListArb, priceListArb } from './fixtures.ts';

const inputSet: ReadonlySet<PriceClass> = new Set(INPUT_TOKEN_CLASSES);
const outputSet: ReadonlySet<PriceClass> = new Set(OUTPUT_TOKEN_CLASSES);

const sub = (max: number) => fc.integer({ min: 0, max });

/** Any usage, with sub-counts that may exceed their totals (provider bugs) to exercise clamping. */
const usageArb: fc.Arbitrary<Usage> = fc.record(
  {
    promptTokens: sub(3_000_000),
    completionTokens: sub(300_000),
    cacheReadTokens: sub(3_000_000),
    cacheWriteTokens: sub(1_000_000),
    cacheWrite1hTokens: sub(1_000_000),
    reasoningTokens: sub(300_000),
    audioInputTokens: sub(100_000),
    cachedAudioInputTokens: sub(100_000),
    audioOutputTokens: sub(100_000),
    imageInputTokens: sub(100_000),
    inputImages: sub(20),
    imageOutputTokens: sub(100_000),
    webSearchCalls: sub(10),
  },
  { requiredKeys: ['promptTokens', 'completionTokens'] },
);

/** Runs a property; a counterexample throws out of the subtest, which tap reports with the seed. */
function assertProperty<Ts extends [unknown, ...unknown[]]>(
  t: { pass(msg: string): void },
  name: string,
  prop: fc.IRawProperty<Ts>,
): void {
  fc.assert(prop, { numRuns: 300 });
  t.pass(name);
}

/** Key-order-independent form of a price list, for equality. */
function canonical(list: PriceList): string {
  const set = (p: PriceSet) => PRICE_CLASSES.map((c) => `${c}=${p[c] ?? '-'}`).join(',');
  return [set(list.base), ...list.overrides.map((b) => `${b.minPromptTokens}:${set(b.prices)}`)].join('|');
}

t.test('total is the exact sum of lines; every line is units × unit price', async (t) => {
  assertProperty(
    t,
    'line arithmetic',
    fc.property(usageArb, priceListArb, (u, list) => {
      const c = computeCharge(u, list);
      const prices = pricesAt(list, u.promptTokens);
      let sum = 0n;
      for (const l of c.lines) {
        if (l.amountAtto !== BigInt(l.units) * l.unitPriceAtto) return false;
        if (l.unitPriceAtto !== prices[l.priceClass]) return false;
        if (l.units <= 0) return false;
        sum += l.amountAtto;
      }
      return sum === c.totalAtto && c.totalNano === attoToNanoRounded(c.totalAtto);
    }),
  );
});

t.test('input units sum to promptTokens and output units to completionTokens', async (t) => {
  assertProperty(
    t,
    'unit conservation after clamping',
    fc.property(usageArb, priceListArb, (u, list) => {
      const c = computeCharge(u, list);
      let input = 0;
      let output = 0;
      const seen = new Set<PriceClass>();
      for (const l of c.lines) {
        if (seen.has(l.priceClass)) return false; // one line per class
        seen.add(l.priceClass);
        if (inputSet.has(l.priceClass)) input += l.units;
        else if (outputSet.has(l.priceClass)) output += l.units;
        else if (l.priceClass === 'request' && l.units !== 1) return false;
      }
      return input === u.promptTokens && output === u.completionTokens;
    }),
  );
});

t.test('cost is monotone in every token and unit count', async (t) => {
  const fields = ['promptTokens', 'completionTokens', 'inputImages', 'webSearchCalls'] as const;
  assertProperty(
    t,
    'monotone (brackets never lower a price)',
    fc.property(usageArb, monotonePriceListArb, fc.constantFrom(...fields), sub(500_000), (u, list, field, more) => {
      const bigger: Usage = { ...u, [field]: (u[field] ?? 0) + more };
      return computeCharge(bigger, list).totalAtto >= computeCharge(u, list).totalAtto;
    }),
  );
  assertProperty(
    t,
    'monotone within one bracket for any list',
    fc.property(usageArb, priceListArb, fc.constantFrom(...fields), sub(500_000), (u, list, field, more) => {
      const bigger: Usage = { ...u, [field]: (u[field] ?? 0) + more };
      const a = computeCharge(u, list);
      const b = computeCharge(bigger, list);
      fc.pre(a.bracketMinPromptTokens === b.bracketMinPromptTokens);
      return b.totalAtto >= a.totalAtto;
    }),
  );
});

function everySet(list: PriceList): PriceSet[] {
  return [list.base, ...list.overrides.map((b) => b.prices)];
}

t.test('a percent discount never raises a price and is exact', async (t) => {
  assertProperty(
    t,
    'discount ≤ list per class, exact for config prices',
    fc.property(
      priceListArb,
      fc.integer({ min: 1, max: 100 }),
      fc.integer({ min: 0, max: 3_000_000 }),
      (list, percent, promptTokens) => {
        const e = effectivePricing(model(list), deployment({ kind: 'discount', percent, endsAt: null }), 0);
        const listSets = everySet(list);
        const effSets = everySet(e.pricing);
        if (listSets.length !== effSets.length) return false;
        for (let i = 0; i < listSets.length; i++) {
          const l = listSets[i] as PriceSet;
          const d = effSets[i] as PriceSet;
          for (const cls of PRICE_CLASSES) {
            const lp = l[cls];
            const dp = d[cls];
            if ((lp === undefined) !== (dp === undefined)) return false; // same classes priced
            if (lp === undefined || dp === undefined) continue;
            if (dp > lp) return false;
            if (dp * 100n !== lp * BigInt(100 - percent)) return false; // exact, no rounding
          }
        }
        const effAt = pricesAt(e.pricing, promptTokens);
        const listAt = pricesAt(list, promptTokens);
        for (const cls of PRICE_CLASSES) if ((effAt[cls] ?? 0n) > (listAt[cls] ?? 0n)) return false;
        // A discount is announced exactly when something got cheaper.
        const anythingPriced = listSets.some((s) => PRICE_CLASSES.some((c) => (s[c] ?? 0n) > 0n));
        return anythingPriced ? e.discount?.percentOff === percent : e.discount === null;
      },
    ),
  );
});

t.test('channel lists at or below list: effective ≤ list, sensible percent', async (t) => {
  assertProperty(
    t,
    'channel list scaled down per class',
    fc.property(
      priceListArb,
      fc.array(fc.integer({ min: 0, max: 100 }), { minLength: 64, maxLength: 64 }),
      sub(3_000_000),
      (list, keeps, promptTokens) => {
        let i = 0;
        const scale = (s: PriceSet): PriceSet => {
          const out: PriceSet = {};
          for (const cls of PRICE_CLASSES) {
            const v = s[cls];
            if (v !== undefined) out[cls] = (v * BigInt(keeps[i++ % keeps.length] ?? 100)) / 100n;
          }
          return out;
        };
        const channel: PriceList = {
          base: scale(list.base) as PriceList['base'],
          overrides: list.overrides.map((b) => ({ minPromptTokens: b.minPromptTokens, prices: scale(b.prices) })),
        };
        const e = effectivePricing(model(list), deployment({ kind: 'channel', prices: channel, endsAt: null }), 0);
        if (e.pricing !== channel) return false;
        const effAt = pricesAt(e.pricing, promptTokens);
        const listAt = pricesAt(list, promptTokens);
        for (const cls of PRICE_CLASSES) if ((effAt[cls] ?? 0n) > (listAt[cls] ?? 0n)) return false;
        // Every price ≤ list, so it is a discount exactly when some price differs.
        if (e.discount === null) return canonical(channel) === canonical(list);
        const p = e.discount.percentOff;
        return canonical(channel) !== canonical(list) && Number.isInteger(p) && p >= 0 && p <= 100;
      },
    ),
  );
});

t.test('the hold covers the charge for any usage within the bounds, at every candidate list', async (t) => {
  assertProperty(
    t,
    'hold ≥ charge',
    fc.property(
      fc.array(priceListArb, { minLength: 1, maxLength: 4 }),
      sub(3_000_000),
      sub(300_000),
      sub(20),
      usageArb,
      (pricings, promptBound, completionBound, imageBound, raw) => {
        // Bring the usage within the bounds; web search is not bounded by the hold.
        const u: Usage = {
          ...raw,
          promptTokens: Math.min(raw.promptTokens, promptBound),
          completionTokens: Math.min(raw.completionTokens, completionBound),
          inputImages: Math.min(raw.inputImages ?? 0, imageBound),
          webSearchCalls: 0,
        };
        const hold = worstCaseHoldNano({
          pricings,
          promptTokenBound: promptBound,
          completionTokenBound: completionBound,
          inputImages: imageBound,
        });
        return pricings.every((list) => {
          const c = computeCharge(u, list);
          return hold >= c.totalNano && hold * ATTO_PER_NANO >= c.totalAtto;
        });
      },
    ),
  );
});

t.test('the settlement bound covers the charge within it, and no settlement exceeds it', async (t) => {
  assertProperty(
    t,
    'bound ≥ charge; settlement ≤ bound',
    fc.property(
      priceListArb,
      sub(3_000_000),
      sub(300_000),
      usageArb,
      fc.bigInt({ min: 0n, max: 10n ** 12n }),
      fc.boolean(),
      (list, promptBound, completionBound, raw, holdNano, withUsage) => {
        const bound = { promptTokens: promptBound, completionTokens: completionBound };
        const boundNano = settlementBoundNano(list, bound);
        // Within the bound: images at most one per prompt token, web searches one per output token.
        const within: Usage = {
          ...raw,
          promptTokens: Math.min(raw.promptTokens, promptBound),
          completionTokens: Math.min(raw.completionTokens, completionBound),
          inputImages: Math.min(raw.inputImages ?? 0, promptBound),
          webSearchCalls: Math.min(raw.webSearchCalls ?? 0, completionBound),
        };
        const c = computeCharge(within, list);
        if (!(boundNano >= c.totalNano && boundNano * ATTO_PER_NANO >= c.totalAtto)) return false;
        // Whatever a provider reports (here: up to 1,000 × the bounds), the settlement never exceeds it.
        const reported: Usage = {
          ...raw,
          promptTokens: raw.promptTokens * 1000,
          completionTokens: raw.completionTokens * 1000,
          webSearchCalls: (raw.webSearchCalls ?? 0) * 1000,
        };
        const m = model(list);
        const s = settlementFor({
          model: m,
          deployment: deployment({ kind: 'list' }),
          platform: { id: 'p', supportsStreamCancellation: true } as CompiledPlatform,
          outcome: {
            usage: withUsage ? reported : null,
            inputUsage: null,
            stream: false,
            completed: true,
            clientAborted: false,
            contentEvents: 0,
            contentBytes: raw.completionTokens * 4000,
          },
          holdNano,
          requestBytes: raw.promptTokens,
          pricedAtMs: 0,
          bound,
        });
        return (
          s.costNano <= boundNano &&
          (withUsage || s.costNano <= holdNano) &&
          (s.capped === null) === (s.details.capped === undefined)
        );
      },
    ),
  );
});

t.test('renderPricing round-trips through decimalToAtto', async (t) => {
  assertProperty(
    t,
    'render → parse = identity',
    fc.property(priceListArb, (list) => {
      const r = renderPricing(list);
      const parseSet = (o: Record<string, unknown>): PriceSet => {
        const s: PriceSet = {};
        for (const cls of PRICE_CLASSES) {
          const v = o[cls];
          if (v !== undefined) {
            if (typeof v !== 'string') throw new Error(`${cls} not a string`);
            s[cls] = decimalToAtto(v);
          }
        }
        return s;
      };
      const overrides = (r['overrides'] ?? []) as Record<string, unknown>[];
      if (list.overrides.length === 0 && 'overrides' in r) return false;
      const back: PriceList = {
        base: parseSet(r) as PriceList['base'],
        overrides: overrides.map((o) => ({ minPromptTokens: o['min_prompt_tokens'] as number, prices: parseSet(o) })),
      };
      const keysOk = Object.keys(r).every((k) => k === 'overrides' || (PRICE_CLASSES as readonly string[]).includes(k));
      return keysOk && canonical(back) === canonical(list);
    }),
  );
});

t.test('rounding to nano is half up at exact .5 boundaries', async (t) => {
  assertProperty(
    t,
    'k + 0.5 nano → k + 1; one atto less → k',
    fc.property(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.integer({ min: 1, max: 1000 }), (k, tokens) => {
      // tokens × price = (k + ½) nano exactly requires the price to divide it; use one token for
      // the exact boundary and `tokens` tokens of a price whose product lands on it.
      const half = k * ATTO_PER_NANO + ATTO_PER_NANO / 2n;
      const at = (price: bigint, n: number) =>
        computeCharge(
          { promptTokens: n, completionTokens: 0 },
          { base: { prompt: price, completion: 0n }, overrides: [] },
        ).totalNano;
      const n = BigInt(tokens);
      const exact = half * n; // n tokens at `half` atto each = n × (k + ½) nano
      const wantExact = (exact + ATTO_PER_NANO / 2n) / ATTO_PER_NANO;
      return (
        at(half, 1) === k + 1n &&
        at(half - 1n, 1) === k &&
        at(half, tokens) === wantExact &&
        wantExact * ATTO_PER_NANO - exact <= ATTO_PER_NANO / 2n
      );
    }),
  );
  assertProperty(
    t,
    'totalNano is the nearest nano, ties up',
    fc.property(usageArb, priceListArb, (u, list) => {
      const c = computeCharge(u, list);
      const diff = c.totalNano * ATTO_PER_NANO - c.totalAtto; // rounding error, atto
      return diff > -(ATTO_PER_NANO / 2n) && diff <= ATTO_PER_NANO / 2n;
    }),
  );
});

t.test('config-shaped prices are whole micro-atto', async (t) => {
  // Guards the fixture the exactness property relies on.
  assertProperty(
    t,
    'multiple of 10^6',
    fc.property(configPrice, (p) => p % 10n ** 6n === 0n),
  );
});
