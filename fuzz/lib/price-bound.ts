// The most a request could possibly cost, computed here from the compiled config and nothing in
// src/billing/ (an oracle must not share the code it judges):
//
//   prompt  ≤ the context length (the largest of the model's and its deployments'; a model without
//             one: the request body's bytes — one token per byte, the gateway's documented rule —
//             plus 10,000 tokens per uploaded file of an image edit)
//   output  ≤ the request's output limit capped at the most the model can write (a deployment's
//             max completion tokens, else its context length, else 32,768); images: n × that cap
//   bound   = prompt × the highest input-class unit price + output × the highest output-class unit
//             price + the highest per-request fee + input images × the highest per-image price,
//             over the list prices and every deployment's channel prices, every bracket,
//             rounded up to nano-USD.
// Web-search calls have no bound (nothing in a request caps them): a channel that prices them makes
// the bound infinite (null), and such a request is not judged. The fixture prices none.
import type {
  CompiledConfig,
  CompiledDeployment,
  CompiledModel,
  PriceList,
  PriceSet,
} from '../../src/config/compiled.ts';

const INPUT = [
  'prompt',
  'input_cache_read',
  'input_cache_write',
  'input_cache_write_1h',
  'input_audio_cache',
  'audio',
  'image_token',
] as const;
const OUTPUT = ['completion', 'internal_reasoning', 'audio_output', 'image_output'] as const;
const DEFAULT_OUTPUT = 32_768;
/** docs/api.md: "An image edit also holds 10,000 prompt tokens per file part." */
const TOKENS_PER_UPLOADED_FILE = 10_000;
const ATTO_PER_NANO = 1_000_000_000n;

export interface BoundInput {
  model: string;
  /** Endpoint id (chat_completions, responses, messages, images_generations, images_edits). */
  endpoint: string;
  /** The output limit the request set (its protocol's field), when a positive integer. */
  requestedOutput: number | null;
  /** Images asked for (`n`), image endpoints only. */
  images: number;
  /** Whole images uploaded (file parts of an edit). */
  inputImages: number;
  bodyBytes: number;
}

export interface Bound {
  /** Nano-USD, rounded up; null when unbounded. */
  nano: bigint | null;
  promptTokens: number;
  outputTokens: number;
  /** How it was computed, for a finding. */
  basis: string;
}

/** The base and every bracket: a bracket laid over the base holds only values of one or the other,
 *  so the highest price of any resolved set is the highest of these. */
function priceSets(list: PriceList): PriceSet[] {
  return [list.base, ...list.overrides.map((b) => b.prices)];
}

function maxOf(sets: PriceSet[], classes: readonly string[]): bigint {
  let m = 0n;
  for (const s of sets) {
    for (const c of classes) {
      const v = (s as Record<string, bigint | undefined>)[c];
      if (v !== undefined && v > m) m = v;
    }
  }
  return m;
}

export function deploymentsFor(config: CompiledConfig, model: CompiledModel, endpoint: string): CompiledDeployment[] {
  return config.deployments.filter((d) => d.model === model.id && d.endpoints.includes(endpoint));
}

export function requestBound(config: CompiledConfig, input: BoundInput): Bound {
  const model = config.models.find((m) => m.id === input.model || m.aliases.includes(input.model));
  if (!model) return { nano: null, promptTokens: 0, outputTokens: 0, basis: `unknown model ${input.model}` };
  const deps = deploymentsFor(config, model, input.endpoint);
  const lists: PriceList[] = [model.listPricing];
  for (const d of deps) if (d.pricing.kind === 'channel') lists.push(d.pricing.prices);
  const sets = lists.flatMap(priceSets);
  if (maxOf(sets, ['web_search']) > 0n)
    return { nano: null, promptTokens: 0, outputTokens: 0, basis: 'web search is priced: unbounded' };
  const contexts = [model.contextLength, ...deps.map((d) => d.contextLength)].filter((v): v is number => v !== null);
  // Without a context length the body is the prompt's bound; an uploaded image is not bounded by its
  // bytes (a provider counts image tokens by size), so an edit adds the documented 10,000 tokens a file.
  const promptTokens =
    contexts.length > 0 ? Math.max(...contexts) : input.bodyBytes + input.inputImages * TOKENS_PER_UPLOADED_FILE;
  const ceilings = (deps.length > 0 ? deps : [null]).map(
    (d) =>
      d?.maxCompletionTokens ?? d?.contextLength ?? model.maxCompletionTokens ?? model.contextLength ?? DEFAULT_OUTPUT,
  );
  const ceiling = Math.max(...ceilings);
  const isImage = input.endpoint.startsWith('images_');
  const outputTokens = isImage
    ? Math.max(1, input.images) * ceiling
    : input.requestedOutput !== null
      ? Math.min(input.requestedOutput, ceiling)
      : ceiling;
  const atto =
    BigInt(promptTokens) * maxOf(sets, INPUT) +
    BigInt(outputTokens) * maxOf(sets, OUTPUT) +
    maxOf(sets, ['request']) +
    BigInt(input.inputImages) * maxOf(sets, ['image']);
  const nano = (atto + ATTO_PER_NANO - 1n) / ATTO_PER_NANO;
  return {
    nano,
    promptTokens,
    outputTokens,
    basis: `${promptTokens} prompt tokens (${contexts.length > 0 ? 'context length' : 'body bytes'}) and ${outputTokens} output tokens at the highest prices of ${lists.length} price list(s)`,
  };
}
