// loadConfig on the valid mini tree: every derived field of the compiled config, defaults, ordering,
// the source hash, and how issue file names are spelled.
import t from 'tap';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { CompiledConfig } from '../../src/config/compiled.ts';
import { formatIssue, loadConfig } from '../../src/config/load-config.ts';
import { readSchemas } from '../../src/config/validate.ts';
import { ADAPTERS } from '../../src/platforms/index.ts';
import { MINI } from './fixture-tree.ts';

function load(dir = MINI): CompiledConfig {
  const r = loadConfig(dir, { adapters: ADAPTERS });
  if (!r.ok) throw new Error(r.issues.map(formatIssue).join('\n'));
  return r.config;
}

const config = load();
const model = (id: string) => config.models.find((m) => m.id === id)!;
const platform = (id: string) => config.platforms.find((p) => p.id === id)!;
const deployment = (id: string) => config.deployments.find((d) => d.id === id)!;
const workspace = (id: string) => config.workspaces.find((w) => w.id === id)!;
const ids = (xs: { id: string }[]) => xs.map((x) => x.id);

t.test('the mini tree loads, every list sorted by id', async (t) => {
  t.strictSame(ids(config.models), [
    'acme/chat-1',
    'acme/old-1',
    'acme/think-1',
    'beta/draw-1',
    'beta/embed-1',
    'beta/hidden-1',
  ]);
  t.strictSame(ids(config.platforms), ['alpha', 'bravo', 'charlie']);
  t.strictSame(ids(config.resources), ['alpha-eu', 'alpha-us', 'bravo-main', 'charlie-1']);
  t.strictSame(ids(config.deployments), [
    'alpha/chat-1',
    'alpha/draw-1',
    'alpha/embed-1',
    'alpha/hidden-1',
    'alpha/old-1',
    'alpha/think-1',
    'bravo/chat-1',
    'bravo/think-1',
    'charlie/chat-1',
    'charlie/think-1',
  ]);
  t.strictSame(ids(config.workspaces), ['default', 'team']);
  t.equal(deployment('alpha/hidden-1').model, 'beta/hidden-1', 'a deployment of a disabled model is fine');
  t.equal(deployment('alpha/think-1').resource, 'alpha-eu', 'a deployment on an inactive resource is fine');
});

// [name, { given, want }]: one derived field each.
const derived: [string, { given: () => unknown; want: unknown }][] = [
  ['name gets the training organisation prefix', { given: () => model('acme/chat-1').name, want: 'Acme Labs: Chat 1' }],
  ['name without an organisation is the bare name', { given: () => model('acme/think-1').name, want: 'Think 1' }],
  ['canonical slug as declared', { given: () => model('acme/chat-1').canonicalSlug, want: 'acme/chat-1-2025-01-15' }],
  ['canonical slug defaults to the id', { given: () => model('acme/think-1').canonicalSlug, want: 'acme/think-1' }],
  ['aliases sorted', { given: () => model('acme/chat-1').aliases, want: ['acme/chat', 'acme/chat-latest'] }],
  ['vendor from the file', { given: () => model('beta/embed-1').vendor, want: 'beta' }],
  [
    'capabilities in vocabulary order',
    {
      given: () => model('acme/chat-1').capabilities,
      want: [
        'supports_tools',
        'supports_parallel_tool_calls',
        'supports_json_mode',
        'supports_vision',
        'supports_image_output',
      ],
    },
  ],
  [
    'input modalities: text, then capability modalities in vocabulary order',
    { given: () => model('acme/think-1').inputModalities, want: ['text', 'file'] },
  ],
  [
    'output modalities: the mode first, then capabilities',
    { given: () => model('acme/chat-1').outputModalities, want: ['text', 'image'] },
  ],
  [
    'output modalities deduplicated (image mode + image output)',
    { given: () => model('beta/draw-1').outputModalities, want: ['image'] },
  ],
  ['embedding mode names itself', { given: () => model('beta/embed-1').outputModalities, want: ['embedding'] }],
  [
    'supported parameters: own plus capabilities, vocabulary order',
    {
      given: () => model('acme/chat-1').supportedParameters,
      want: [
        'tools',
        'tool_choice',
        'parallel_tool_calls',
        'max_tokens',
        'temperature',
        'top_p',
        'stop',
        'seed',
        'response_format',
      ],
    },
  ],
  [
    'reasoning parameters come from the capability',
    {
      given: () => model('acme/think-1').supportedParameters,
      want: ['tools', 'tool_choice', 'max_tokens', 'reasoning', 'include_reasoning'],
    },
  ],
  [
    'default parameters in vocabulary order',
    { given: () => Object.keys(model('acme/chat-1').defaultParameters), want: ['temperature', 'top_p'] },
  ],
  [
    'reasoning facts',
    {
      given: () => model('acme/think-1').reasoning,
      want: {
        mandatory: false,
        defaultEnabled: true,
        supportedEfforts: ['high', 'medium', 'low', 'none'],
        supportsMaxTokens: true,
        defaultEffort: 'medium',
      },
    },
  ],
  ['no reasoning block → null', { given: () => model('acme/chat-1').reasoning, want: null }],
  [
    'enabled defaults to true',
    { given: () => [model('acme/chat-1').enabled, model('beta/hidden-1').enabled], want: [true, false] },
  ],
  [
    'undeclared facts are null',
    { given: () => [model('acme/old-1').contextLength, model('acme/old-1').modelPageUrl], want: [null, null] },
  ],
  [
    'list prices in atto-USD, brackets ascending',
    {
      given: () => model('acme/chat-1').listPricing,
      want: {
        base: {
          prompt: 2_500_000_000_000n,
          completion: 10_000_000_000_000n,
          image: 1_000_000_000_000_000n,
          input_cache_read: 1_250_000_000_000n,
        },
        overrides: [
          { minPromptTokens: 128000, prices: { prompt: 5_000_000_000_000n, completion: 15_000_000_000_000n } },
          { minPromptTokens: 200000, prices: { prompt: 7_500_000_000_000n } },
        ],
      },
    },
  ],
  ['a zero required price is kept', { given: () => model('beta/embed-1').listPricing.base.completion, want: 0n }],
  [
    'platform endpoints in vocabulary order',
    { given: () => platform('alpha').endpoints, want: ['chat_completions', 'responses', 'images_generations'] },
  ],
  [
    'platform protocols from its endpoints (an image endpoint adds none)',
    { given: () => platform('alpha').protocols, want: ['chat_completions', 'responses'] },
  ],
  [
    'data policy defaults (retention unknown, training null)',
    {
      given: () => platform('bravo').dataPolicy,
      want: { promptTraining: null, dataRetention: 'unknown', moderation: 'none', reviewed: false },
    },
  ],
  [
    'retentionLimited from the vocabulary',
    { given: () => config.platforms.map((p) => p.retentionLimited), want: [true, false, true] },
  ],
  ['zdr defaults to false', { given: () => config.platforms.map((p) => p.zdr), want: [false, false, true] }],
  [
    'samplingAccept in vocabulary order; null when absent',
    {
      given: () => [platform('charlie').samplingAccept, platform('alpha').samplingAccept],
      want: [['temperature', 'top_p'], null],
    },
  ],
  [
    'reasoning budget levels in level order, min reply default',
    {
      given: () => platform('charlie').reasoningBudget,
      want: { tokens: { low: 2000, medium: 8000, high: 16000 }, minReplyTokens: 256 },
    },
  ],
  ['adapter options as declared', { given: () => platform('bravo').adapterOptions, want: { version: '2023-06-01' } }],
  [
    'resource credential defaults to the id',
    {
      given: () => config.resources.map((r) => r.credential),
      want: ['alpha-eu-key', 'alpha-us', 'bravo-main', 'charlie.token'],
    },
  ],
  [
    'resource active default and region null',
    {
      given: () => config.resources.map((r) => [r.active, r.region]),
      want: [
        [false, 'eu-west-1'],
        [true, 'us-east-1'],
        [true, null],
        [true, null],
      ],
    },
  ],
  [
    'deployment limits fall back to the model',
    {
      given: () =>
        ['alpha/chat-1', 'charlie/chat-1'].map((d) => [
          deployment(d).contextLength,
          deployment(d).maxCompletionTokens,
          deployment(d).maxPromptTokens,
        ]),
      want: [
        [256000, 16384, null],
        [128000, 8192, null],
      ],
    },
  ],
  [
    'deployment defaults (weight, active, status)',
    {
      given: () => {
        const d = deployment('alpha/chat-1');
        return [d.weight, d.active, d.status];
      },
      want: [100, true, 'up'],
    },
  ],
  [
    'declared status and quantization',
    {
      given: () => [
        deployment('bravo/think-1').status,
        deployment('charlie/chat-1').quantization,
        deployment('alpha/draw-1').quantization,
      ],
      want: ['down', 'fp8', null],
    },
  ],
  [
    'deployment endpoints and protocols in vocabulary order; image endpoints belong to no protocol',
    {
      given: () => [
        deployment('alpha/chat-1').endpoints,
        deployment('alpha/draw-1').endpoints,
        deployment('alpha/draw-1').protocols,
      ],
      want: [['chat_completions', 'responses'], ['images_generations'], []],
    },
  ],
  [
    'capabilities narrowed by capabilities_removed',
    {
      given: () => deployment('bravo/chat-1').capabilities,
      want: ['supports_tools', 'supports_json_mode', 'supports_vision', 'supports_image_output'],
    },
  ],
  ['no channel pricing → list', { given: () => deployment('bravo/chat-1').pricing, want: { kind: 'list' } }],
  [
    'discount with an end',
    {
      given: () => deployment('alpha/chat-1').pricing,
      want: { kind: 'discount', percent: 20, endsAt: '2030-01-01T00:00:00Z' },
    },
  ],
  [
    'channel price list',
    {
      given: () => deployment('alpha/think-1').pricing,
      want: {
        kind: 'channel',
        prices: {
          base: {
            prompt: 2_500_000_000_000n,
            completion: 15_000_000_000_000n,
            internal_reasoning: 10_000_000_000_000n,
          },
          overrides: [{ minPromptTokens: 100000, prices: { prompt: 3_000_000_000_000n } }],
        },
        endsAt: null,
      },
    },
  ],
  [
    'workspace routing defaults',
    {
      given: () => workspace('default'),
      want: {
        id: 'default',
        name: 'Default',
        rateLimitRpm: 600,
        lowBalanceNano: null,
        routing: {
          allow: null,
          ignore: [],
          allowFallbacks: true,
          dataCollection: 'allow',
          zdr: false,
          quantizations: null,
          order: [],
          sort: null,
        },
      },
    },
  ],
  [
    'workspace platform names resolved to canonical ids (case, aliases)',
    {
      given: () => workspace('team'),
      want: {
        id: 'team',
        name: 'team',
        rateLimitRpm: 60,
        lowBalanceNano: null,
        routing: {
          allow: ['alpha', 'charlie'],
          ignore: ['bravo'],
          allowFallbacks: false,
          dataCollection: 'deny',
          zdr: false,
          quantizations: ['fp8', 'bf16'],
          order: ['alpha'],
          sort: 'price',
        },
      },
    },
  ],
  [
    'vocabulary capabilities compiled with defaults',
    {
      given: () => config.vocabularies.capabilities.find((c) => c.id === 'supports_vision'),
      want: { id: 'supports_vision', parameters: [], inputModality: 'image', outputModality: null, requires: [] },
    },
  ],
  [
    'retention levels with zero default',
    {
      given: () => config.vocabularies.retentionLevels,
      want: [
        { id: 'zero', limited: true, zero: true },
        { id: 'short', limited: true, zero: false },
        { id: 'unknown', limited: false, zero: false },
      ],
    },
  ],
];

t.test('derived fields', async (t) => {
  for (const [name, { given, want }] of derived) t.strictSame(given(), want, name);
});

t.test('gateway settings: overrides, then schema defaults', async (t) => {
  t.equal(config.settings.limits.maxAttempts, 3);
  t.equal(config.settings.health.errorRate, 0.25);
  t.equal(config.settings.limits.maxBodyBytes, 4194304);
  t.equal(config.settings.requestLog.flushIntervalMs, 200);
  // Every key of the gateway schema lands in GatewaySettings (a new schema key needs a compiled field).
  const schema = readSchemas().get('gateway.schema.json') as {
    properties: Record<string, { properties: Record<string, unknown> }>;
  };
  const camel = (s: string) => s.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
  for (const [section, s] of Object.entries(schema.properties)) {
    const compiled = (config.settings as unknown as Record<string, Record<string, unknown>>)[camel(section)];
    t.strictSame(
      Object.keys(compiled ?? {}).sort(),
      Object.keys(s.properties).map(camel).sort(),
      `settings.${camel(section)}`,
    );
  }
});

t.test('sourceHash: content and relative paths, not the dir spelling; *.md ignored', async (t) => {
  const tmp = mkdtempSync(join(tmpdir(), 'pi-config-'));
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
  cpSync(MINI, tmp, { recursive: true });
  t.match(config.sourceHash, /^[0-9a-f]{64}$/);
  t.equal(load(tmp).sourceHash, config.sourceHash, 'same files elsewhere, same hash');
  t.equal(load(relative(process.cwd(), tmp) + '/').sourceHash, config.sourceHash, 'relative spelling');
  writeFileSync(join(tmp, 'NOTES.md'), 'not config');
  t.equal(load(tmp).sourceHash, config.sourceHash, 'markdown is not hashed');
  writeFileSync(join(tmp, 'gateway.yaml'), 'limits:\n  max_attempts: 4\n');
  t.not(load(tmp).sourceHash, config.sourceHash, 'a changed byte changes the hash');
});

t.test('issue file names keep the dir as the caller spelled it', async (t) => {
  const tmp = mkdtempSync(join(tmpdir(), 'pi-config-'));
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
  cpSync(MINI, tmp, { recursive: true });
  writeFileSync(join(tmp, 'workspaces.yaml'), 'workspaces:\n  - id: Bad\n');
  const spelled = `${tmp}//`;
  const r = loadConfig(spelled, { adapters: ADAPTERS });
  t.equal(r.ok, false);
  if (!r.ok) {
    t.strictSame(r.issues.map(formatIssue), [
      `${tmp}/workspaces.yaml:2:9 workspaces[0].id: must be a lowercase id: letters, digits and dashes, starting with a letter or digit, at most 64 characters`,
    ]);
  }
});

t.test('a missing config dir is one issue', async (t) => {
  const r = loadConfig('test/fixtures/config/does-not-exist', { adapters: ADAPTERS });
  t.strictSame(r.ok ? [] : r.issues.map(formatIssue), [
    'test/fixtures/config/does-not-exist:1:1: config directory does not exist',
  ]);
});

t.test('loading twice gives equal configs (no shared mutable state)', async (t) => {
  t.strictSame(load(), config);
});

t.test('declared input modalities stand on their own; without them, capabilities imply them', async (t) => {
  const { FIXTURES } = await import('./fixture-tree.ts');
  const select = load(join(FIXTURES, 'catalog-select'));
  const reader = select.models.find((m) => m.id === 'nova/reader');
  t.strictSame(
    reader?.inputModalities,
    ['text', 'image', 'file', 'video'],
    'declared [video, file, text, image], compiled in the fixed order',
  );
  t.strictSame(
    reader?.capabilities,
    ['supports_tools', 'supports_pdf_input'],
    'no capability added for image or video',
  );
  t.strictSame(
    model('acme/chat-1').inputModalities,
    ['text', 'image'],
    'undeclared: text plus supports_vision → image',
  );
});
