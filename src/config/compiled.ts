// The compiled config: what `config/*.yaml` becomes after schema validation and cross-file linking.
// Plain data only (arrays, records, bigint), so codegen can print it as `src/generated/tables.ts`
// and `serve --config DIR` can build the same value in memory. Runtime lookups live in `./index.ts`.

/** The API's seven reasoning levels, ascending. */
export const REASONING_LEVELS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export type ReasoningLevel = (typeof REASONING_LEVELS)[number];

/** The API's quantization ids. */
export const QUANTIZATIONS = ['fp4', 'int4', 'int8', 'fp8', 'fp16', 'bf16', 'fp32', 'unknown'] as const;
export type Quantization = (typeof QUANTIZATIONS)[number];

/** Price classes of the API's pricing object, in the API's order (also the catalog key order). */
export const PRICE_CLASSES = [
  'prompt',
  'completion',
  'request',
  'image',
  'image_output',
  'audio',
  'audio_output',
  'input_audio_cache',
  'web_search',
  'internal_reasoning',
  'input_cache_read',
  'input_cache_write',
  'input_cache_write_1h',
  'image_token',
] as const;
export type PriceClass = (typeof PRICE_CLASSES)[number];

/**
 * Prices of one bracket in atto-USD (1e-18 USD) per unit, exact. Config prices have at most 12
 * decimals and discounts are whole percents, so every effective price is an exact integer here.
 * An absent key means "not priced" (base) or "not restated" (bracket) — never zero.
 */
export type PriceSet = Partial<Record<PriceClass, bigint>>;

export interface PriceBracket {
  /** Inclusive lower bound on the prompt context length, tokens. */
  minPromptTokens: number;
  prices: PriceSet;
}

export interface PriceList {
  /** Base prices; `prompt` and `completion` always present. */
  base: PriceSet & { prompt: bigint; completion: bigint };
  /** Ascending by `minPromptTokens`; empty for single-priced models. */
  overrides: PriceBracket[];
}

export interface ReasoningFacts {
  mandatory: boolean;
  defaultEnabled: boolean;
  /** High to low. */
  supportedEfforts: ReasoningLevel[];
  supportsMaxTokens: boolean;
  defaultEffort: ReasoningLevel | null;
}

export type Openness = 'open_source' | 'open_weights' | 'proprietary';
export type ProviderType = 'first_party' | 'cloud_infra' | 'reseller' | 'private';

export interface CompiledModel {
  /** Slug `vendor/model`. */
  id: string;
  vendor: string;
  canonicalSlug: string;
  /** Sorted. Vendor-qualified names accepted in the `model` request field. */
  aliases: string[];
  /** Display name with the training organisation prefix already applied ("OpenAI: GPT-4o"). */
  name: string;
  description: string;
  mode: string;
  tokenizer: string;
  /** Vocabulary order. */
  capabilities: string[];
  /** Fixed modality order, text first. */
  inputModalities: string[];
  outputModalities: string[];
  /** Platform parameter order. */
  supportedParameters: string[];
  reasoning: ReasoningFacts | null;
  defaultParameters: Record<string, number | string | boolean>;
  contextLength: number | null;
  maxCompletionTokens: number | null;
  knowledgeCutoff: string | null;
  releaseDate: string | null;
  expirationDate: string | null;
  openness: Openness;
  modelPageUrl: string | null;
  enabled: boolean;
  listPricing: PriceList;
}

export interface CompiledPlatform {
  id: string;
  name: string;
  providerType: ProviderType;
  headquarters: string | null;
  /** Lowercase, as declared. */
  aliases: string[];
  adapter: string;
  adapterOptions: Record<string, string | number | boolean>;
  /** Vocabulary order. */
  endpoints: string[];
  protocols: string[];
  dataPolicy: {
    promptTraining: boolean | null;
    dataRetention: string;
    moderation: string;
    reviewed: boolean;
  };
  /** Derived from the retention vocabulary: retention is within a limited window. */
  retentionLimited: boolean;
  zdr: boolean;
  supportsStreamCancellation: boolean;
  /** Sampling parameters accepted; null means all are. */
  samplingAccept: string[] | null;
  reasoningDefaultEffort: ReasoningLevel | null;
  reasoningBudget: { tokens: Partial<Record<ReasoningLevel, number>>; minReplyTokens: number } | null;
  /** Which `anthropic-beta` values reach the platform (YAML `anthropic_beta`, names lowercased);
   *  null: the adapter's default. */
  anthropicBeta: BetaPolicy | null;
}

/** An allow list (only these are forwarded) or a deny list (these are dropped) of beta names. */
export type BetaPolicy = { kind: 'allow'; names: string[] } | { kind: 'deny'; names: string[] };

export interface CompiledResource {
  id: string;
  platform: string;
  region: string | null;
  baseUrl: string;
  active: boolean;
  credential: string;
}

export type ChannelPricing =
  | { kind: 'list' }
  | { kind: 'discount'; percent: number; endsAt: string | null }
  | { kind: 'channel'; prices: PriceList; endsAt: string | null };

export interface CompiledDeployment {
  id: string;
  model: string;
  platform: string;
  resource: string;
  upstreamModel: string;
  weight: number;
  active: boolean;
  /** Declared status; the health tracker may also mark it down at runtime. */
  status: 'up' | 'down';
  quantization: Quantization | null;
  /** Deployment value, else the model's, else null. */
  contextLength: number | null;
  maxPromptTokens: number | null;
  maxCompletionTokens: number | null;
  /** Vocabulary order. */
  endpoints: string[];
  protocols: string[];
  /** The model's capabilities narrowed by `capabilities_removed`, vocabulary order. */
  capabilities: string[];
  pricing: ChannelPricing;
}

export interface CompiledRouting {
  /** Canonical platform ids; null = no allowlist. */
  allow: string[] | null;
  ignore: string[];
  allowFallbacks: boolean;
  dataCollection: 'allow' | 'deny';
  zdr: boolean;
  /** null = any. */
  quantizations: Quantization[] | null;
  order: string[];
  sort: 'price' | null;
}

export interface CompiledWorkspace {
  id: string;
  name: string;
  rateLimitRpm: number;
  /** `low_balance_usd` in nano-USD: the wallet warns while its available amount is below it; null: never. */
  lowBalanceNano: bigint | null;
  routing: CompiledRouting;
}

export interface Vocabularies {
  protocols: string[];
  /** `protocol` is null for an endpoint of no inference protocol (the image endpoints). */
  endpoints: { id: string; protocol: string | null; path: string; modes: string[] }[];
  modalities: string[];
  modes: { id: string; outputModality: string }[];
  parameters: string[];
  samplingParameters: string[];
  capabilities: {
    id: string;
    parameters: string[];
    inputModality: string | null;
    outputModality: string | null;
    requires: string[];
  }[];
  retentionLevels: { id: string; limited: boolean; zero: boolean }[];
  moderation: string[];
  quantizations: Quantization[];
}

export interface GatewaySettings {
  limits: {
    maxBodyBytes: number;
    maxUploadBytes: number;
    /** Bytes of request bodies one server holds while they arrive (src/server/body-budget.ts). */
    maxBodyBytesInTransit: number;
    maxUpstreamBodyBytes: number;
    /** The most bytes one event of a provider's stream may hold. */
    maxUpstreamEventBytes: number;
    firstByteTimeoutMs: number;
    streamIdleTimeoutMs: number;
    preambleMaxBytes: number;
    maxAttempts: number;
    /** A client that takes no stream bytes this long is cut (request end `write_stall`). */
    writeStallTimeoutMs: number;
    /** A cloud token endpoint's time to answer one token request (connection included). */
    tokenTimeoutMs: number;
    /** How long in-flight requests may finish after SIGTERM before they are ended (`drained`). */
    drainTimeoutMs: number;
  };
  health: {
    consecutiveFailures: number;
    window: number;
    minRequests: number;
    errorRate: number;
    slowFirstByteMs: number;
    cooldownMs: number;
    maxCooldownMs: number;
  };
  sessions: { maxPins: number };
  requestLog: { flushIntervalMs: number; maxBatch: number };
}

export interface CompiledConfig {
  /** sha256 over the config files (path + bytes, sorted by path): lets `serve` tell whether the
   *  generated tables match the YAML it was pointed at. */
  sourceHash: string;
  vocabularies: Vocabularies;
  settings: GatewaySettings;
  /** Sorted by id; includes disabled models (they are neither listed nor routed). */
  models: CompiledModel[];
  /** Sorted by id. */
  platforms: CompiledPlatform[];
  /** Sorted by id. */
  resources: CompiledResource[];
  /** Sorted by id. */
  deployments: CompiledDeployment[];
  /** Sorted by id. */
  workspaces: CompiledWorkspace[];
}
