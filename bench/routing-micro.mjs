// Routing micro-benchmark (part (1) of bench/routing.mjs), one process pinned to core 0: µs per routing decision
// (mergePreferences + planRoute, as src/api/inference.ts calls them) on a synthetic CompiledConfig
// built in memory: 50 platforms × 200 models, every model deployed on every platform (10,000
// deployments, 50 candidates per request), varied weights, quantizations, data policies and
// discounts. Requests rotate over the 200 models. Cases: no `provider` preferences; preferences
// (order + ignore + data_collection deny + quantizations); the same plus sort: price. Also, for
// scale: parseProviderPreferences alone, and the per-request hold sizing over the planned
// deployments (effectivePricing + worstCaseHoldNano), which the handler runs after planRoute.
// Prints one JSON line {"ready":true,"result":{...}}.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TREE = process.env.PI_BENCH_TREE || fileURLToPath(new URL('..', import.meta.url));
const dist = (p) => import(join(TREE, 'dist', 'src', p));
const { loadConfig } = await dist('config/load-config.js');
const { ConfigIndex } = await dist('config/index.js');
const { mergePreferences, parseProviderPreferences } = await dist('routing/preferences.js');
const { planRoute } = await dist('routing/plan.js');
const { HealthTracker } = await dist('routing/health.js');
const { effectivePricing } = await dist('billing/price.js');
const { worstCaseHoldNano } = await dist('billing/hold.js');
const { systemClock } = await dist('clock.js');

const quick = process.argv.includes('--quick');
const BATCHES = quick ? 5 : 11;
const N = quick ? 2000 : 10_000;
const PLATFORMS = 50;
const MODELS = 200;

const base = loadConfig(join(TREE, 'config'));
if (!base.ok) throw new Error('bundled config does not load');
const bundled = base.config;
const tmplModel = bundled.models.find((m) => m.id === 'openai/gpt-6-luna') ?? bundled.models[0];
const tmplDep = bundled.deployments.find((d) => d.model === tmplModel.id) ?? bundled.deployments[0];
const tmplPlatform = bundled.platforms.find((p) => p.id === tmplDep.platform) ?? bundled.platforms[0];
const QUANT = ['fp8', 'bf16', 'fp16', 'int4', 'fp4', 'unknown', null];
const RETENTION = bundled.vocabularies.retentionLevels;

const pid = (i) => `p${String(i).padStart(2, '0')}`;
const platforms = [];
const resources = [];
for (let i = 0; i < PLATFORMS; i++) {
  const r = RETENTION[i % RETENTION.length];
  platforms.push({
    ...tmplPlatform,
    id: pid(i),
    name: `Platform ${i}`,
    aliases: [],
    endpoints: ['chat_completions', 'responses', 'messages'],
    protocols: ['chat_completions', 'responses', 'messages'],
    dataPolicy: {
      promptTraining: i % 3 === 0 ? true : i % 3 === 1 ? false : null,
      dataRetention: r.id,
      moderation: tmplPlatform.dataPolicy.moderation,
      reviewed: true,
    },
    retentionLimited: r.limited,
    zdr: r.zero,
  });
  resources.push({
    id: `${pid(i)}-main`,
    platform: pid(i),
    region: null,
    baseUrl: 'http://127.0.0.1:9/v1',
    active: true,
    credential: `${pid(i)}-key`,
  });
}
const models = [];
const deployments = [];
for (let j = 0; j < MODELS; j++) {
  const id = `vendor${j % 10}/model-${String(j).padStart(3, '0')}`;
  models.push({
    ...tmplModel,
    id,
    vendor: `vendor${j % 10}`,
    canonicalSlug: id,
    aliases: [],
    name: `Model ${j}`,
    enabled: true,
    expirationDate: null,
  });
  for (let i = 0; i < PLATFORMS; i++) {
    deployments.push({
      ...tmplDep,
      id: `${pid(i)}-main/${id}`,
      model: id,
      platform: pid(i),
      resource: `${pid(i)}-main`,
      upstreamModel: id,
      weight: 1 + ((i * 37 + j * 11) % 100),
      active: true,
      status: 'up',
      quantization: QUANT[(i + j) % QUANT.length],
      endpoints: ['chat_completions', 'responses', 'messages'],
      protocols: ['chat_completions', 'responses', 'messages'],
      pricing: (i + j) % 5 === 0 ? { kind: 'discount', percent: 10 + ((i + j) % 30), endsAt: null } : { kind: 'list' },
    });
  }
}
const byId = (a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const config = {
  ...bundled,
  models: models.sort(byId),
  platforms: platforms.sort(byId),
  resources: resources.sort(byId),
  deployments: deployments.sort(byId),
  workspaces: [
    {
      id: 'bench',
      name: 'Bench',
      rateLimitRpm: 600,
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
  ],
};
const index = new ConfigIndex(config);
const workspace = config.workspaces[0];
const creds = { has: () => true };
const health = new HealthTracker(config.settings.health, systemClock);
const rawPrefs = {
  order: [pid(3), pid(7), pid(11)],
  ignore: [pid(5)],
  data_collection: 'deny',
  quantizations: ['fp8', 'bf16', 'fp16', 'unknown'],
};
const prefs = parseProviderPreferences(rawPrefs, index);
const prefsPrice = parseProviderPreferences({ ...rawPrefs, sort: 'price' }, index);
const modelList = config.models;

function bench(name, body) {
  const per = [];
  const cpu = [];
  let sink = 0;
  for (let b = 0; b <= BATCHES; b++) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) sink += body(i);
    const us = Number(process.hrtime.bigint() - t0) / 1000 / N;
    const c = process.cpuUsage(c0);
    if (b > 0) {
      per.push(us);
      cpu.push((c.user + c.system) / N);
    }
  }
  per.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return {
    name,
    medianUs: per[per.length >> 1],
    minUs: per[0],
    maxUs: per[per.length - 1],
    cpuUs: cpu[cpu.length >> 1],
    batches: per.length,
    perBatch: N,
    sink,
  };
}

const decide = (i, p) => {
  const now = Date.now();
  const policy = mergePreferences(workspace.routing, p);
  const plan = planRoute({
    index,
    endpoint: 'chat_completions',
    models: [modelList[i % MODELS]],
    policy,
    creds,
    health,
    nowMs: now,
    random: Math.random,
  });
  return plan.plans[0].deployments.length;
};
const eligible = { none: decide(0, null), prefs: decide(0, prefs), price: decide(0, prefsPrice) };
const results = [];
results.push(bench('mergePreferences + planRoute, no provider preferences', (i) => decide(i, null)));
results.push(
  bench('mergePreferences + planRoute, with preferences (order, ignore, data_collection deny, quantizations)', (i) =>
    decide(i, prefs),
  ),
);
results.push(bench('mergePreferences + planRoute, with preferences + sort: price', (i) => decide(i, prefsPrice)));
results.push(
  bench('parseProviderPreferences (for scale)', () => Object.keys(parseProviderPreferences(rawPrefs, index)).length),
);
results.push(
  bench('hold sizing over the plan (effectivePricing × deployments + worstCaseHoldNano), no preferences', (i) => {
    const now = Date.now();
    const model = modelList[i % MODELS];
    const plan = planRoute({
      index,
      endpoint: 'chat_completions',
      models: [model],
      policy: mergePreferences(workspace.routing, null),
      creds,
      health,
      nowMs: now,
      random: Math.random,
    });
    const deps = plan.plans[0].deployments;
    const h = worstCaseHoldNano({
      pricings: deps.map((d) => effectivePricing(model, d, now).pricing),
      promptTokenBound: 120,
      completionTokenBound: 16384,
    });
    return Number(h & 1n);
  }),
);
// The last one includes a planRoute: subtract the no-preferences decision for the hold sizing alone.
const holdOnly = results[4].cpuUs - results[0].cpuUs;

process.stdout.write(
  JSON.stringify({
    ready: true,
    result: {
      platforms: PLATFORMS,
      models: MODELS,
      deployments: deployments.length,
      candidatesPerRequest: PLATFORMS,
      eligible,
      batches: BATCHES,
      perBatch: N,
      results,
      holdSizingCpuUs: holdOnly,
    },
  }) + '\n',
);
