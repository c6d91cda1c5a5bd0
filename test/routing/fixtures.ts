// Hand-built compiled configs for the routing tests: builders with defaults for models, platforms,
// resources, deployments and workspace routing (independent of the YAML compiler).
import type {
  CompiledConfig,
  CompiledDeployment,
  CompiledModel,
  CompiledPlatform,
  CompiledResource,
  CompiledRouting,
  CompiledWorkspace,
  GatewaySettings,
  PriceList,
} from '../../src/config/compiled.ts';
import { QUANTIZATIONS } from '../../src/config/compiled.ts';
import { ConfigIndex } from '../../src/config/index.ts';
import type { CredentialView } from '../../src/availability/serving.ts';

/** 1 USD per million tokens, in atto-USD per token. */
export const PER_MTOK = 1_000_000_000_000n;

export function prices(promptPerM: bigint, completionPerM: bigint): PriceList {
  return { base: { prompt: promptPerM * PER_MTOK, completion: completionPerM * PER_MTOK }, overrides: [] };
}

export const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);

export function model(id: string, over: Partial<CompiledModel> = {}): CompiledModel {
  return {
    id,
    vendor: id.split('/')[0] as string,
    canonicalSlug: id,
    aliases: [],
    name: id,
    description: '',
    mode: 'chat',
    tokenizer: 'test',
    capabilities: [],
    inputModalities: ['text'],
    outputModalities: ['text'],
    supportedParameters: [],
    reasoning: null,
    defaultParameters: {},
    contextLength: 128000,
    maxCompletionTokens: 4096,
    knowledgeCutoff: null,
    releaseDate: null,
    expirationDate: null,
    openness: 'proprietary',
    modelPageUrl: null,
    enabled: true,
    listPricing: prices(2n, 8n),
    ...over,
  };
}

export function platform(id: string, over: Partial<CompiledPlatform> = {}): CompiledPlatform {
  return {
    id,
    name: id,
    providerType: 'cloud_infra',
    headquarters: null,
    aliases: [],
    adapter: 'openai',
    adapterOptions: {},
    endpoints: ['chat', 'messages', 'responses'],
    protocols: ['chat', 'messages', 'responses'],
    dataPolicy: { promptTraining: false, dataRetention: 'none', moderation: 'none', reviewed: true },
    retentionLimited: true,
    zdr: false,
    supportsStreamCancellation: true,
    samplingAccept: null,
    reasoningDefaultEffort: null,
    reasoningBudget: null,
    anthropicBeta: null,
    ...over,
  };
}

export function resource(id: string, platformId: string, over: Partial<CompiledResource> = {}): CompiledResource {
  return {
    id,
    platform: platformId,
    region: null,
    baseUrl: `https://${id}.example`,
    active: true,
    credential: `cred-${id}`,
    ...over,
  };
}

/** A deployment of `modelId` on `platformId`, on resource `<platform>-main` unless given. */
export function deployment(
  id: string,
  modelId: string,
  platformId: string,
  over: Partial<CompiledDeployment> = {},
): CompiledDeployment {
  return {
    id,
    model: modelId,
    platform: platformId,
    resource: `${platformId}-main`,
    upstreamModel: modelId.split('/')[1] as string,
    weight: 100,
    active: true,
    status: 'up',
    quantization: null,
    contextLength: 128000,
    maxPromptTokens: null,
    maxCompletionTokens: 4096,
    endpoints: ['chat', 'responses'],
    protocols: ['chat', 'responses'],
    capabilities: [],
    pricing: { kind: 'list' },
    ...over,
  };
}

export function routing(over: Partial<CompiledRouting> = {}): CompiledRouting {
  return {
    allow: null,
    ignore: [],
    allowFallbacks: true,
    dataCollection: 'allow',
    zdr: false,
    quantizations: null,
    order: [],
    sort: null,
    ...over,
  };
}

export const HEALTH: GatewaySettings['health'] = {
  consecutiveFailures: 5,
  window: 20,
  minRequests: 10,
  errorRate: 0.5,
  slowFirstByteMs: 30_000,
  cooldownMs: 30_000,
  maxCooldownMs: 300_000,
};

function byId<T extends { id: string }>(xs: T[]): T[] {
  return [...xs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * A config from parts. Every platform gets a `<platform>-main` resource unless `resources` already
 * declares one with that id.
 */
export function buildIndex(parts: {
  models: CompiledModel[];
  platforms: CompiledPlatform[];
  deployments: CompiledDeployment[];
  resources?: CompiledResource[];
  workspaces?: CompiledWorkspace[];
}): ConfigIndex {
  const resources = [...(parts.resources ?? [])];
  for (const p of parts.platforms) {
    if (!resources.some((r) => r.id === `${p.id}-main`)) resources.push(resource(`${p.id}-main`, p.id));
  }
  const config: CompiledConfig = {
    sourceHash: 'test',
    vocabularies: {
      protocols: ['chat', 'messages', 'responses'],
      endpoints: [
        { id: 'chat', protocol: 'chat', path: '/v1/chat/completions', modes: ['chat'] },
        { id: 'messages', protocol: 'messages', path: '/v1/messages', modes: ['chat'] },
        { id: 'responses', protocol: 'responses', path: '/v1/responses', modes: ['chat'] },
      ],
      modalities: ['text', 'image', 'file', 'audio', 'video'],
      modes: [{ id: 'chat', outputModality: 'text' }],
      parameters: [],
      samplingParameters: [],
      capabilities: [],
      retentionLevels: [
        { id: 'none', limited: true, zero: true },
        { id: 'short', limited: true, zero: false },
        { id: 'unknown', limited: false, zero: false },
      ],
      moderation: ['none'],
      quantizations: [...QUANTIZATIONS],
    },
    settings: {
      limits: {
        maxBodyBytes: 1 << 20,
        maxUploadBytes: 1 << 20,
        maxBodyBytesInTransit: 1 << 28,
        maxUpstreamBodyBytes: 1 << 20,
        maxUpstreamEventBytes: 1 << 20,
        firstByteTimeoutMs: 90_000,
        streamIdleTimeoutMs: 90_000,
        preambleMaxBytes: 65536,
        maxAttempts: 5,
        writeStallTimeoutMs: 5000,
        tokenTimeoutMs: 5000,
        drainTimeoutMs: 30_000,
      },
      health: HEALTH,
      sessions: { maxPins: 1000 },
      requestLog: { flushIntervalMs: 1000, maxBatch: 100 },
    },
    models: byId(parts.models),
    platforms: byId(parts.platforms),
    resources: byId(resources),
    deployments: byId(parts.deployments),
    workspaces: byId(parts.workspaces ?? []),
  };
  return new ConfigIndex(config);
}

/** Every credential of the config is sealed, except those listed. */
export function credsOf(index: ConfigIndex, missing: string[] = []): CredentialView {
  const names = new Set(index.config.resources.map((r) => r.credential).filter((c) => !missing.includes(c)));
  return { has: (name) => names.has(name) };
}

export const noCreds: CredentialView = { has: () => false };

/** Deterministic PRNG (mulberry32) for reproducible weighted orders. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The standard world most tests use: model `acme/chat` served by
 *  - openai (d-openai, weight 100, list price, trains=false, retention limited, zdr)
 *  - gcp (d-gcp-a weight 50, d-gcp-b weight 50; aliases "google-vertex"), promptTraining null
 *  - gemini (d-gemini; alias "google-ai-studio"), trains true
 *  - aws (d-aws; alias "amazon-bedrock"), retention not limited, quantization fp8
 *  - azure (d-azure, quantization fp4, 20% discount)
 */
export function standardWorld() {
  const models = [model('acme/chat'), model('acme/other')];
  const platforms = [
    platform('openai', { zdr: true }),
    platform('gcp', {
      aliases: ['google-vertex'],
      dataPolicy: { promptTraining: null, dataRetention: 'short', moderation: 'none', reviewed: false },
    }),
    platform('gemini', {
      aliases: ['google-ai-studio'],
      dataPolicy: { promptTraining: true, dataRetention: 'short', moderation: 'none', reviewed: true },
    }),
    platform('aws', {
      aliases: ['amazon-bedrock'],
      retentionLimited: false,
      dataPolicy: { promptTraining: false, dataRetention: 'unknown', moderation: 'none', reviewed: true },
    }),
    platform('azure'),
  ];
  const deployments = [
    deployment('d-openai', 'acme/chat', 'openai'),
    deployment('d-gcp-a', 'acme/chat', 'gcp', { weight: 50 }),
    deployment('d-gcp-b', 'acme/chat', 'gcp', { weight: 50 }),
    deployment('d-gemini', 'acme/chat', 'gemini'),
    deployment('d-aws', 'acme/chat', 'aws', { quantization: 'fp8' }),
    deployment('d-azure', 'acme/chat', 'azure', {
      quantization: 'fp4',
      pricing: { kind: 'discount', percent: 20, endsAt: null },
    }),
    deployment('o-openai', 'acme/other', 'openai'),
  ];
  const index = buildIndex({ models, platforms, deployments });
  return {
    index,
    creds: credsOf(index),
    chat: index.modelById.get('acme/chat') as CompiledModel,
    other: index.modelById.get('acme/other') as CompiledModel,
  };
}
