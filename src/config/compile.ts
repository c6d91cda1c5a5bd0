// Turns a linked (fully valid) config into the CompiledConfig every runtime module reads: derived
// fields computed once, defaults filled in from the schemas, prices as exact atto-USD, and every list
// in a fixed order so two builds of the same YAML are byte-identical.
import type {
  BetaPolicy,
  ChannelPricing,
  CompiledConfig,
  CompiledDeployment,
  CompiledModel,
  CompiledPlatform,
  CompiledResource,
  CompiledWorkspace,
  GatewaySettings,
  PriceList,
  PriceSet,
  Quantization,
  ReasoningLevel,
  Vocabularies,
} from './compiled.ts';
import { PRICE_CLASSES, REASONING_LEVELS } from './compiled.ts';
import { decimalToAtto, decimalToNano } from '../money.ts';
import type {
  ChannelPricing as RawChannelPricing,
  PriceBracket,
  Pricing,
  Workspace,
} from '../generated/config-types.ts';
import type { LinkedConfig } from './link.ts';
import { schemaDefault } from './validate.ts';

function byId<T extends { id: string }>(a: T, b: T): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** `values` ordered as they appear in `order` (values missing from `order` are dropped). */
function inOrder(order: readonly string[], values: Iterable<string>): string[] {
  const set = new Set(values);
  return order.filter((x) => set.has(x));
}

function dflt<T>(file: string, pointer: string): T {
  return schemaDefault(file, pointer) as T;
}

function priceSet(p: Pricing | PriceBracket): PriceSet {
  const out: PriceSet = {};
  for (const cls of PRICE_CLASSES) {
    const v = p[cls];
    if (v !== undefined) out[cls] = decimalToAtto(v);
  }
  return out;
}

export function compilePriceList(p: Pricing): PriceList {
  const base = priceSet(p) as PriceList['base'];
  return {
    base,
    overrides: (p.overrides ?? []).map((b) => ({ minPromptTokens: b.min_prompt_tokens, prices: priceSet(b) })),
  };
}

function channelPricing(p: RawChannelPricing | undefined): ChannelPricing {
  if (!p) return { kind: 'list' };
  if ('discount_percent' in p) return { kind: 'discount', percent: p.discount_percent, endsAt: p.ends_at ?? null };
  return { kind: 'channel', prices: compilePriceList(p.prices), endsAt: p.ends_at ?? null };
}

function vocabularies(v: LinkedConfig['vocabularies']): Vocabularies {
  return {
    protocols: [...v.protocols],
    endpoints: v.endpoints.map((e) => ({ id: e.id, protocol: e.protocol ?? null, path: e.path, modes: [...e.modes] })),
    modalities: [...v.modalities],
    modes: v.modes.map((m) => ({ id: m.id, outputModality: m.output_modality })),
    parameters: [...v.parameters],
    samplingParameters: [...v.sampling_parameters],
    capabilities: v.capabilities.map((c) => ({
      id: c.id,
      parameters: [...(c.parameters ?? [])],
      inputModality: c.input_modality ?? null,
      outputModality: c.output_modality ?? null,
      requires: [...(c.requires ?? [])],
    })),
    retentionLevels: v.retention_levels.map((r) => ({ id: r.id, limited: r.limited, zero: r.zero ?? false })),
    moderation: v.moderation.map((m) => m.id),
    quantizations: [...v.quantizations] as Quantization[],
  };
}

function settings(g: LinkedConfig['gateway']): GatewaySettings {
  const get = (section: 'limits' | 'health' | 'sessions' | 'request_log', key: string): number => {
    const v = (g[section] as Record<string, number | undefined> | undefined)?.[key];
    return v ?? dflt<number>('gateway.schema.json', `/properties/${section}/properties/${key}`);
  };
  return {
    limits: {
      maxBodyBytes: get('limits', 'max_body_bytes'),
      maxUploadBytes: get('limits', 'max_upload_bytes'),
      maxBodyBytesInTransit: get('limits', 'max_body_bytes_in_transit'),
      maxUpstreamBodyBytes: get('limits', 'max_upstream_body_bytes'),
      maxUpstreamEventBytes: get('limits', 'max_upstream_event_bytes'),
      firstByteTimeoutMs: get('limits', 'first_byte_timeout_ms'),
      streamIdleTimeoutMs: get('limits', 'stream_idle_timeout_ms'),
      preambleMaxBytes: get('limits', 'preamble_max_bytes'),
      maxAttempts: get('limits', 'max_attempts'),
      writeStallTimeoutMs: get('limits', 'write_stall_timeout_ms'),
      tokenTimeoutMs: get('limits', 'token_timeout_ms'),
      drainTimeoutMs: get('limits', 'drain_timeout_ms'),
    },
    health: {
      consecutiveFailures: get('health', 'consecutive_failures'),
      window: get('health', 'window'),
      minRequests: get('health', 'min_requests'),
      errorRate: get('health', 'error_rate'),
      slowFirstByteMs: get('health', 'slow_first_byte_ms'),
      cooldownMs: get('health', 'cooldown_ms'),
      maxCooldownMs: get('health', 'max_cooldown_ms'),
    },
    sessions: { maxPins: get('sessions', 'max_pins') },
    requestLog: { flushIntervalMs: get('request_log', 'flush_interval_ms'), maxBatch: get('request_log', 'max_batch') },
  };
}

function model(vocab: Vocabularies, vendor: string, m: LinkedConfig['models'][number]['model']): CompiledModel {
  const caps = vocab.capabilities.filter((c) => m.capabilities.includes(c.id));
  const modeOutput = vocab.modes.find((x) => x.id === m.mode)?.outputModality;
  if (modeOutput === undefined) throw new Error(`compile: mode ${m.mode} of ${m.id} not in the vocabulary`);
  // Declared input modalities stand on their own; without them, text plus what the capabilities imply.
  const inputs = m.input_modalities ?? [
    'text',
    ...caps.flatMap((c) => (c.inputModality === null ? [] : [c.inputModality])),
  ];
  const outputs = [
    ...new Set([modeOutput, ...caps.flatMap((c) => (c.outputModality === null ? [] : [c.outputModality]))]),
  ];
  const params = [...(m.parameters ?? []), ...caps.flatMap((c) => c.parameters)];
  const defaults: Record<string, number | string | boolean> = {};
  const given = m.default_parameters ?? {};
  for (const k of inOrder(vocab.parameters, Object.keys(given))) defaults[k] = given[k] as number | string | boolean;
  const r = m.reasoning;
  return {
    id: m.id,
    vendor,
    canonicalSlug: m.canonical_slug ?? m.id,
    aliases: [...(m.aliases ?? [])].sort(),
    name: m.training_organisation === undefined ? m.name : `${m.training_organisation}: ${m.name}`,
    description: m.description,
    mode: m.mode,
    tokenizer: m.tokenizer,
    capabilities: caps.map((c) => c.id),
    inputModalities: inOrder(vocab.modalities, inputs),
    outputModalities: outputs,
    supportedParameters: inOrder(vocab.parameters, params),
    reasoning: r
      ? {
          mandatory: r.mandatory,
          defaultEnabled: r.default_enabled,
          supportedEfforts: [...r.supported_efforts],
          supportsMaxTokens: r.supports_max_tokens,
          defaultEffort: r.default_effort ?? null,
        }
      : null,
    defaultParameters: defaults,
    contextLength: m.context_length ?? null,
    maxCompletionTokens: m.max_completion_tokens ?? null,
    knowledgeCutoff: m.knowledge_cutoff ?? null,
    releaseDate: m.release_date ?? null,
    expirationDate: m.expiration_date ?? null,
    openness: m.openness,
    modelPageUrl: m.model_page_url ?? null,
    enabled: m.enabled ?? dflt<boolean>('models.schema.json', '/$defs/Model/properties/enabled'),
    listPricing: compilePriceList(m.pricing),
  };
}

/** Protocols of a set of endpoints, in vocabulary order; an endpoint of no protocol (images) adds none. */
function protocolsOf(vocab: Vocabularies, endpoints: readonly string[]): string[] {
  return inOrder(
    vocab.protocols,
    vocab.endpoints.filter((e) => endpoints.includes(e.id)).flatMap((e) => (e.protocol === null ? [] : [e.protocol])),
  );
}

/** A platform's `anthropic_beta` (the schema allows exactly one of allow and deny). */
function betaPolicy(b: LinkedConfig['platforms'][number]['anthropic_beta']): BetaPolicy | null {
  if (!b) return null;
  const lower = (names: string[]) => names.map((n) => n.toLowerCase());
  return b.allow ? { kind: 'allow', names: lower(b.allow) } : { kind: 'deny', names: lower(b.deny ?? []) };
}

function platform(vocab: Vocabularies, p: LinkedConfig['platforms'][number]): CompiledPlatform {
  const endpoints = inOrder(
    vocab.endpoints.map((e) => e.id),
    p.endpoints,
  );
  const retention = p.data_policy.data_retention ?? 'unknown';
  const level = vocab.retentionLevels.find((r) => r.id === retention);
  if (!level) throw new Error(`compile: retention level ${retention} of ${p.id} not in the vocabulary`);
  const budget = p.reasoning?.budget;
  let reasoningBudget: CompiledPlatform['reasoningBudget'] = null;
  if (budget) {
    const tokens: Partial<Record<ReasoningLevel, number>> = {};
    for (const l of REASONING_LEVELS) {
      const t = budget.tokens[l];
      if (t !== undefined) tokens[l] = t;
    }
    reasoningBudget = {
      tokens,
      minReplyTokens:
        budget.min_reply_tokens ??
        dflt<number>('platform.schema.json', '/properties/reasoning/properties/budget/properties/min_reply_tokens'),
    };
  }
  return {
    id: p.id,
    name: p.name,
    providerType: p.provider_type,
    headquarters: p.headquarters ?? null,
    aliases: [...(p.aliases ?? [])],
    adapter: p.adapter,
    adapterOptions: { ...(p.adapter_options ?? {}) } as Record<string, string | number | boolean>,
    endpoints,
    protocols: protocolsOf(vocab, endpoints),
    dataPolicy: {
      promptTraining: p.data_policy.prompt_training ?? null,
      dataRetention: retention,
      moderation: p.data_policy.moderation,
      reviewed: p.data_policy.reviewed,
    },
    retentionLimited: level.limited,
    zdr: p.zdr ?? dflt<boolean>('platform.schema.json', '/properties/zdr'),
    supportsStreamCancellation: p.supports_stream_cancellation,
    samplingAccept: p.sampling ? inOrder(vocab.samplingParameters, p.sampling.accept) : null,
    reasoningDefaultEffort: p.reasoning?.default_effort ?? null,
    reasoningBudget,
    anthropicBeta: betaPolicy(p.anthropic_beta),
  };
}

function resource(platformId: string, r: LinkedConfig['resources'][number]['resource']): CompiledResource {
  const base = '/properties/resources/items/properties';
  return {
    id: r.id,
    platform: platformId,
    region: r.region ?? null,
    baseUrl: r.base_url,
    active: r.active ?? dflt<boolean>('resources.schema.json', `${base}/active`),
    credential: r.credential ?? r.id,
  };
}

function deployment(
  vocab: Vocabularies,
  models: Map<string, CompiledModel>,
  platformId: string,
  d: LinkedConfig['deployments'][number]['deployment'],
): CompiledDeployment {
  const m = models.get(d.model);
  if (!m) throw new Error(`compile: model ${d.model} of deployment ${d.id} not found`);
  const base = '/$defs/Deployment/properties';
  const endpoints = inOrder(
    vocab.endpoints.map((e) => e.id),
    d.endpoints,
  );
  const removed = new Set(d.capabilities_removed ?? []);
  return {
    id: d.id,
    model: d.model,
    platform: platformId,
    resource: d.resource,
    upstreamModel: d.upstream_model,
    weight: d.weight ?? dflt<number>('deployments.schema.json', `${base}/weight`),
    active: d.active ?? dflt<boolean>('deployments.schema.json', `${base}/active`),
    status: d.status ?? dflt<'up' | 'down'>('deployments.schema.json', `${base}/status`),
    quantization: d.quantization ?? null,
    contextLength: d.context_length ?? m.contextLength,
    maxPromptTokens: d.max_prompt_tokens ?? null,
    maxCompletionTokens: d.max_completion_tokens ?? m.maxCompletionTokens,
    endpoints,
    protocols: protocolsOf(vocab, endpoints),
    capabilities: m.capabilities.filter((c) => !removed.has(c)),
    pricing: channelPricing(d.pricing),
  };
}

function workspace(
  vocab: Vocabularies,
  w: Workspace,
  platformIdFor: (name: string) => string | undefined,
): CompiledWorkspace {
  const r = w.routing ?? {};
  const resolve = (names: string[]) =>
    names.map((n) => {
      const id = platformIdFor(n);
      if (id === undefined) throw new Error(`compile: platform ${n} of workspace ${w.id} not found`);
      return id;
    });
  const rd = '/$defs/RoutingSettings/properties';
  return {
    id: w.id,
    name: w.name ?? w.id,
    rateLimitRpm:
      w.rate_limit_rpm ??
      dflt<number>('workspaces.schema.json', '/properties/workspaces/items/properties/rate_limit_rpm'),
    lowBalanceNano: w.low_balance_usd === undefined ? null : decimalToNano(w.low_balance_usd),
    routing: {
      allow: r.allow ? resolve(r.allow) : null,
      ignore: resolve(r.ignore ?? []),
      allowFallbacks: r.allow_fallbacks ?? dflt<boolean>('defs.schema.json', `${rd}/allow_fallbacks`),
      dataCollection: r.data_collection ?? dflt<'allow' | 'deny'>('defs.schema.json', `${rd}/data_collection`),
      zdr: r.zdr ?? dflt<boolean>('defs.schema.json', `${rd}/zdr`),
      quantizations: r.quantizations ? (inOrder(vocab.quantizations, r.quantizations) as Quantization[]) : null,
      order: resolve(r.order ?? []),
      sort: r.sort ?? null,
    },
  };
}

/** The compiled config of a linked config without issues. */
export function compile(
  linked: LinkedConfig,
  sourceHash: string,
  platformIdFor: (name: string) => string | undefined,
): CompiledConfig {
  const vocab = vocabularies(linked.vocabularies);
  const models = linked.models.map((x) => model(vocab, x.vendor, x.model)).sort(byId);
  const modelById = new Map(models.map((m) => [m.id, m]));
  return {
    sourceHash,
    vocabularies: vocab,
    settings: settings(linked.gateway),
    models,
    platforms: linked.platforms.map((p) => platform(vocab, p)).sort(byId),
    resources: linked.resources.map((x) => resource(x.platform, x.resource)).sort(byId),
    deployments: linked.deployments.map((x) => deployment(vocab, modelById, x.platform, x.deployment)).sort(byId),
    workspaces: linked.workspaces.map((w) => workspace(vocab, w, platformIdFor)).sort(byId),
  };
}
