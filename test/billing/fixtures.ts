// Hand-built billing fixtures (the config compiler is not used here): price lists from decimal
// strings, a minimal CompiledModel and CompiledDeployment, and fast-check arbitraries for prices.
import fc from 'fast-check';
import type {
  ChannelPricing,
  CompiledDeployment,
  CompiledModel,
  PriceClass,
  PriceList,
  PriceSet,
} from '../../src/config/compiled.ts';
import { PRICE_CLASSES } from '../../src/config/compiled.ts';
import { decimalToAtto } from '../../src/money.ts';

export type Prices = Partial<Record<PriceClass, string>>;

export function priceSet(p: Prices): PriceSet {
  const out: PriceSet = {};
  for (const cls of PRICE_CLASSES) {
    const v = p[cls];
    if (v !== undefined) out[cls] = decimalToAtto(v);
  }
  return out;
}

/** A PriceList from decimal strings; brackets as [min_prompt_tokens, prices]. */
export function priceList(
  base: Prices & { prompt: string; completion: string },
  overrides: [number, Prices][] = [],
): PriceList {
  return {
    base: priceSet(base) as PriceList['base'],
    overrides: overrides.map(([minPromptTokens, p]) => ({ minPromptTokens, prices: priceSet(p) })),
  };
}

export function model(listPricing: PriceList): CompiledModel {
  return {
    id: 'acme/model-1',
    vendor: 'acme',
    canonicalSlug: 'acme/model-1',
    aliases: [],
    name: 'Acme: Model 1',
    description: 'A test model.',
    mode: 'chat',
    tokenizer: 'acme',
    capabilities: [],
    inputModalities: ['text'],
    outputModalities: ['text'],
    supportedParameters: [],
    reasoning: null,
    defaultParameters: {},
    contextLength: 1_000_000,
    maxCompletionTokens: 64_000,
    knowledgeCutoff: null,
    releaseDate: null,
    expirationDate: null,
    openness: 'proprietary',
    modelPageUrl: null,
    enabled: true,
    listPricing,
  };
}

export function deployment(pricing: ChannelPricing): CompiledDeployment {
  return {
    id: 'acme-cloud/model-1',
    model: 'acme/model-1',
    platform: 'acme-cloud',
    resource: 'acme-cloud-eu',
    upstreamModel: 'model-1-2026',
    weight: 100,
    active: true,
    status: 'up',
    quantization: null,
    contextLength: 1_000_000,
    maxPromptTokens: null,
    maxCompletionTokens: null,
    endpoints: ['chat_completions'],
    protocols: ['openai'],
    capabilities: [],
    pricing,
  };
}

// ---- fast-check arbitraries ----

/** A config-shaped price: at most 12 decimals (a multiple of 10^6 atto), up to $1000 per unit. */
export const configPrice: fc.Arbitrary<bigint> = fc
  .oneof(fc.bigInt({ min: 0n, max: 10n ** 6n }), fc.bigInt({ min: 0n, max: 10n ** 15n }))
  .map((k) => k * 10n ** 6n);

const optionalClasses = PRICE_CLASSES.filter((c) => c !== 'prompt' && c !== 'completion');

function partialSet(): fc.Arbitrary<PriceSet> {
  const model: Partial<Record<PriceClass, fc.Arbitrary<bigint>>> = {};
  for (const cls of PRICE_CLASSES) model[cls] = configPrice;
  return fc.record(model as Record<PriceClass, fc.Arbitrary<bigint>>, { requiredKeys: [] }) as fc.Arbitrary<PriceSet>;
}

function baseSet(): fc.Arbitrary<PriceList['base']> {
  return fc.tuple(configPrice, configPrice, partialSet()).map(([prompt, completion, rest]) => {
    const base: PriceSet = {};
    for (const cls of optionalClasses) if (rest[cls] !== undefined) base[cls] = rest[cls];
    return { ...base, prompt, completion };
  });
}

/** Any valid price list: base plus 0..3 brackets restating arbitrary subsets of classes. */
export const priceListArb: fc.Arbitrary<PriceList> = fc
  .tuple(
    baseSet(),
    fc.uniqueArray(fc.integer({ min: 1, max: 2_000_000 }), { maxLength: 3 }),
    fc.array(partialSet(), { minLength: 3, maxLength: 3 }),
  )
  .map(([base, mins, sets]) => ({
    base,
    overrides: [...mins]
      .sort((a, b) => a - b)
      .map((minPromptTokens, i) => ({ minPromptTokens, prices: sets[i] ?? {} })),
  }));

/**
 * A price list whose resolved prices never drop as the prompt grows (each bracket restates every
 * priced class at or above the previous price): the setting where cost is monotone in promptTokens.
 */
export const monotonePriceListArb: fc.Arbitrary<PriceList> = fc
  .tuple(
    baseSet(),
    fc.uniqueArray(fc.integer({ min: 1, max: 2_000_000 }), { maxLength: 3 }),
    fc.array(fc.array(configPrice, { minLength: PRICE_CLASSES.length, maxLength: PRICE_CLASSES.length }), {
      minLength: 3,
      maxLength: 3,
    }),
  )
  .map(([base, mins, bumps]) => {
    const sorted = [...mins].sort((a, b) => a - b);
    let current: PriceSet = { ...base };
    const overrides = sorted.map((minPromptTokens, i) => {
      const prices: PriceSet = {};
      PRICE_CLASSES.forEach((cls, j) => {
        const prev = current[cls];
        // Restate every priced class, never lower; so no class falls back to a lower base price.
        if (prev !== undefined) prices[cls] = prev + (bumps[i]?.[j] ?? 0n);
      });
      current = prices;
      return { minPromptTokens, prices };
    });
    return { base, overrides };
  });
