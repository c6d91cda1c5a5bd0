// The candidate set and its funnel: stage order, counts, removed providers and reasons, for a model
// emptied at each stage, and every preference limit applied to the standard world.
import t from 'tap';
import fc from 'fast-check';
import type { CompiledModel, CompiledRouting, Quantization } from '../../src/config/compiled.ts';
import { QUANTIZATIONS } from '../../src/config/compiled.ts';
import { eligibleDeployments, eligibleOnly } from '../../src/routing/candidates.ts';
import { ConfigIndex } from '../../src/config/index.ts';
import { fixtureConfig } from '../helpers/stack.ts';
import { type EffectivePolicy, type ProviderPreferences, mergePreferences } from '../../src/routing/preferences.ts';
import {
  NOW,
  buildIndex,
  credsOf,
  deployment,
  model,
  noCreds,
  platform,
  resource,
  routing,
  standardWorld,
} from './fixtures.ts';

const STAGES = [
  'model',
  'endpoint',
  'available',
  'workspace_policy',
  'request_providers',
  'data_policy',
  'quantization',
];
const ALL = ['aws', 'azure', 'gcp', 'gemini', 'openai'];

const world = standardWorld();

function run(
  ws: Partial<CompiledRouting>,
  req: ProviderPreferences | null,
  opts: { endpoint?: string; creds?: typeof world.creds; policy?: EffectivePolicy } = {},
) {
  return eligibleDeployments({
    index: world.index,
    model: world.chat,
    endpoint: opts.endpoint ?? 'chat',
    policy: opts.policy ?? mergePreferences(routing(ws), req),
    creds: opts.creds ?? world.creds,
    nowMs: NOW,
  });
}

const ids = (r: ReturnType<typeof run>) => r.deployments.map((d) => d.id);
const stage = (r: ReturnType<typeof run>, name: string) => r.funnel.find((s) => s.stage === name);

t.test('no limits: everything eligible, every stage present in order', async (t) => {
  const r = run({}, null);
  t.same(ids(r), ['d-aws', 'd-azure', 'd-gcp-a', 'd-gcp-b', 'd-gemini', 'd-openai'], 'sorted by id');
  t.same(
    r.funnel.map((s) => s.stage),
    STAGES,
  );
  t.same(r.funnel[0], { stage: 'model', remaining: 5, removed: [], providers: ALL });
  for (const s of r.funnel.slice(1)) t.same(s, { stage: s.stage, remaining: 5, removed: [] });
});

t.test('emptied at endpoint', async (t) => {
  const r = run({}, null, { endpoint: 'messages' });
  t.same(ids(r), []);
  t.same(stage(r, 'endpoint'), {
    stage: 'endpoint',
    remaining: 0,
    removed: ALL.map((provider) => ({ provider, reason: 'not registered for the messages endpoint' })),
  });
  for (const s of r.funnel.slice(2)) t.same(s, { stage: s.stage, remaining: 0, removed: [] }, `${s.stage} stays empty`);
});

t.test('emptied at available: no sealed credential at all', async (t) => {
  const r = run({}, null, { creds: noCreds });
  t.same(ids(r), []);
  t.same(
    r.funnel.map((s) => s.remaining),
    [5, 5, 0, 0, 0, 0, 0],
  );
  t.same(
    stage(r, 'available')?.removed,
    ALL.map((provider) => ({ provider, reason: 'no sealed upstream credential' })),
  );
});

t.test('available: disabled and expired models', async (t) => {
  for (const [over, reason] of [
    [{ enabled: false }, 'model disabled'],
    [{ expirationDate: '2026-01-15' }, 'model expired'],
  ] as const) {
    const m = model('acme/chat', over);
    const r = eligibleDeployments({
      index: world.index,
      model: m,
      endpoint: 'chat',
      policy: mergePreferences(routing(), null),
      creds: world.creds,
      nowMs: NOW,
    });
    t.same(ids(r), []);
    t.same(
      stage(r, 'available')?.removed,
      ALL.map((provider) => ({ provider, reason })),
    );
  }
  const notYet = model('acme/chat', { expirationDate: '2026-01-16' });
  const r = eligibleDeployments({
    index: world.index,
    model: notYet,
    endpoint: 'chat',
    policy: mergePreferences(routing(), null),
    creds: world.creds,
    nowMs: NOW,
  });
  t.equal(r.deployments.length, 6, 'expiring tomorrow still routes');
});

t.test('available: a provider is removed only with its last deployment; reasons are joined', async (t) => {
  const index = buildIndex({
    models: [model('acme/chat')],
    platforms: [platform('gcp'), platform('openai')],
    resources: [
      resource('gcp-off', 'gcp', { active: false }),
      resource('gcp-nocred', 'gcp', { credential: 'missing' }),
    ],
    deployments: [
      deployment('g1', 'acme/chat', 'gcp', { active: false }),
      deployment('g2', 'acme/chat', 'gcp', { resource: 'gcp-off' }),
      deployment('g3', 'acme/chat', 'gcp', { resource: 'gcp-nocred' }),
      deployment('o1', 'acme/chat', 'openai', { active: false }),
      deployment('o2', 'acme/chat', 'openai'),
    ],
  });
  const creds = credsOf(index, ['missing']);
  const r = eligibleDeployments({
    index,
    model: index.modelById.get('acme/chat') as CompiledModel,
    endpoint: 'chat',
    policy: mergePreferences(routing(), null),
    creds,
    nowMs: NOW,
  });
  t.same(
    r.deployments.map((d) => d.id),
    ['o2'],
  );
  t.same(stage(r, 'available'), {
    stage: 'available',
    remaining: 1,
    removed: [{ provider: 'gcp', reason: 'deployment inactive; resource inactive; no sealed upstream credential' }],
  });
});

t.test('emptied at workspace_policy', async (t) => {
  const allow = run({ allow: ['zzz-unused'] }, null);
  t.same(ids(allow), []);
  t.same(
    stage(allow, 'workspace_policy')?.removed,
    ALL.map((provider) => ({ provider, reason: 'not in the workspace allowlist' })),
  );

  const mixed = run({ allow: ['openai', 'gcp', 'aws'], ignore: ['aws'] }, null);
  t.same(ids(mixed), ['d-gcp-a', 'd-gcp-b', 'd-openai']);
  t.same(stage(mixed, 'workspace_policy'), {
    stage: 'workspace_policy',
    remaining: 2,
    removed: [
      { provider: 'aws', reason: 'in the workspace ignore list' },
      { provider: 'azure', reason: 'not in the workspace allowlist' },
      { provider: 'gemini', reason: 'not in the workspace allowlist' },
    ],
  });

  const orderLimit = run({ allowFallbacks: false, order: ['gemini', 'openai'] }, { sort: 'price' });
  t.same(
    ids(orderLimit),
    ['d-gemini', 'd-openai'],
    'a workspace false + order holds even when the request replaces the sort mode',
  );
  t.same(
    stage(orderLimit, 'workspace_policy')?.removed,
    ['aws', 'azure', 'gcp'].map((provider) => ({
      provider,
      reason: 'not in the workspace order and the workspace sets allow_fallbacks false',
    })),
  );
});

t.test('emptied at request_providers', async (t) => {
  const only = run({}, { only: ['openai'], ignore: ['openai'] });
  t.same(ids(only), [], 'ignore wins over only');
  t.same(stage(only, 'request_providers'), {
    stage: 'request_providers',
    remaining: 0,
    removed: [
      { provider: 'aws', reason: 'not in provider.only' },
      { provider: 'azure', reason: 'not in provider.only' },
      { provider: 'gcp', reason: 'not in provider.only' },
      { provider: 'gemini', reason: 'not in provider.only' },
      { provider: 'openai', reason: 'in provider.ignore' },
    ],
  });
  t.same(stage(only, 'workspace_policy')?.removed, [], 'request limits are not blamed on the workspace');
});

t.test('request only is intersected with the workspace allowlist', async (t) => {
  const r = run({ allow: ['openai', 'gcp'] }, { only: ['gcp', 'aws'] });
  t.same(ids(r), ['d-gcp-a', 'd-gcp-b']);
  t.same(
    stage(r, 'workspace_policy')?.removed.map((x) => x.provider),
    ['aws', 'azure', 'gemini'],
  );
  t.same(stage(r, 'request_providers')?.removed, [{ provider: 'openai', reason: 'not in provider.only' }]);
});

t.test('request ignore adds to the workspace ignore list', async (t) => {
  const r = run({ ignore: ['aws'] }, { ignore: ['gcp'] });
  t.same(ids(r), ['d-azure', 'd-gemini', 'd-openai']);
  t.same(stage(r, 'workspace_policy')?.removed, [{ provider: 'aws', reason: 'in the workspace ignore list' }]);
  t.same(stage(r, 'request_providers')?.removed, [{ provider: 'gcp', reason: 'in provider.ignore' }]);
});

t.test('allow_fallbacks false with an order: only the listed providers', async (t) => {
  const req = run({}, { order: ['gcp', 'aws'], allowFallbacks: false });
  t.same(ids(req), ['d-aws', 'd-gcp-a', 'd-gcp-b']);
  t.same(
    stage(req, 'request_providers')?.removed,
    ['azure', 'gemini', 'openai'].map((provider) => ({
      provider,
      reason: 'not in provider.order and allow_fallbacks is false',
    })),
  );

  t.equal(run({}, { allowFallbacks: false }).deployments.length, 6, 'without an order it changes nothing');
  t.equal(run({}, { order: ['gcp'] }).deployments.length, 6, 'an order alone restricts nothing');

  const wsFalse = run({ allowFallbacks: false }, { order: ['openai'], allowFallbacks: true });
  t.same(ids(wsFalse), ['d-openai'], 'a workspace false applies to the request order and is not relaxed by true');
  t.same(
    stage(wsFalse, 'request_providers')?.removed.map((x) => x.reason),
    Array(4).fill('not in provider.order and allow_fallbacks is false'),
  );

  const reqFalseWsOrder = run({ order: ['aws'] }, { allowFallbacks: false });
  t.same(ids(reqFalseWsOrder), ['d-aws'], 'request false with the workspace order');
  t.same(
    new Set(stage(reqFalseWsOrder, 'request_providers')?.removed.map((x) => x.reason)),
    new Set(['not in the workspace order and allow_fallbacks is false']),
  );

  const both = run({ allowFallbacks: false, order: ['openai', 'gcp'] }, { order: ['gcp', 'aws'] });
  t.same(ids(both), ['d-gcp-a', 'd-gcp-b'], 'workspace limit and request order both apply');
});

t.test('data_collection deny', async (t) => {
  const r = run({}, { dataCollection: 'deny' });
  t.same(ids(r), ['d-azure', 'd-openai']);
  t.same(stage(r, 'data_policy'), {
    stage: 'data_policy',
    remaining: 2,
    removed: [
      { provider: 'aws', reason: 'retains data beyond a limited window' },
      { provider: 'gcp', reason: 'may train on prompts' },
      { provider: 'gemini', reason: 'may train on prompts' },
    ],
  });
  t.same(
    ids(run({ dataCollection: 'deny' }, { dataCollection: 'allow' })),
    ['d-azure', 'd-openai'],
    'the request cannot loosen a workspace deny',
  );
});

t.test('zdr', async (t) => {
  const r = run({}, { zdr: true });
  t.same(ids(r), ['d-openai']);
  t.same(
    stage(r, 'data_policy')?.removed,
    ['aws', 'azure', 'gcp', 'gemini'].map((provider) => ({ provider, reason: 'not zero-data-retention' })),
  );
  t.same(ids(run({ zdr: true }, { zdr: false })), ['d-openai'], 'the request cannot loosen a workspace zdr');
  const none = run({}, { zdr: true, ignore: ['openai'] });
  t.same(
    none.funnel.map((s) => s.remaining),
    [5, 5, 5, 5, 4, 0, 0],
    'emptied at data_policy',
  );
});

t.test('quantizations (null counts as unknown)', async (t) => {
  const fp8 = run({}, { quantizations: ['fp8'] });
  t.same(ids(fp8), ['d-aws']);
  t.same(stage(fp8, 'quantization'), {
    stage: 'quantization',
    remaining: 1,
    removed: [
      { provider: 'azure', reason: 'quantization fp4 not allowed' },
      { provider: 'gcp', reason: 'quantization unknown not allowed' },
      { provider: 'gemini', reason: 'quantization unknown not allowed' },
      { provider: 'openai', reason: 'quantization unknown not allowed' },
    ],
  });
  t.same(ids(run({}, { quantizations: ['unknown'] })), ['d-gcp-a', 'd-gcp-b', 'd-gemini', 'd-openai']);
  t.same(ids(run({ quantizations: ['fp8', 'fp4'] }, { quantizations: ['fp4', 'bf16'] })), ['d-azure'], 'intersection');
  const empty = run({ quantizations: ['bf16'] }, null);
  t.same(
    empty.funnel.map((s) => s.remaining),
    [5, 5, 5, 5, 5, 5, 0],
    'emptied at quantization',
  );
});

t.test('funnel names platforms only, never deployments, resources or regions', async (t) => {
  const r = run({}, { zdr: true, quantizations: ['fp4'] }, { creds: credsOf(world.index, ['cred-gcp-main']) });
  const named = r.funnel.flatMap((s) => [...s.removed.map((x) => x.provider), ...(s.providers ?? [])]);
  for (const p of named) t.ok(world.index.platformById.has(p), `${p} is a platform id`);
});

t.test('a hand-built policy without origin still applies allow and ignore', async (t) => {
  const policy: EffectivePolicy = {
    allow: new Set(['openai', 'gcp']),
    ignore: new Set(['gcp']),
    order: [],
    sort: null,
    allowFallbacks: true,
    dataCollection: 'allow',
    zdr: false,
    quantizations: null,
  };
  const r = run({}, null, { policy });
  t.same(ids(r), ['d-openai']);
  t.same(
    stage(r, 'workspace_policy')?.removed.find((x) => x.provider === 'gcp'),
    { provider: 'gcp', reason: 'in the ignore list' },
  );
});

t.test('property: request preferences never loosen the workspace', async (t) => {
  const platformIds = fc.subarray(ALL);
  const quant = fc.option(fc.subarray([...QUANTIZATIONS] as Quantization[]), { nil: null });
  const wsArb = fc.record({
    allow: fc.option(platformIds, { nil: null }),
    ignore: platformIds,
    allowFallbacks: fc.boolean(),
    dataCollection: fc.constantFrom('allow' as const, 'deny' as const),
    zdr: fc.boolean(),
    quantizations: quant,
    order: fc.shuffledSubarray(ALL),
    sort: fc.constantFrom('price' as const, null),
  });
  const reqArb = fc.record(
    {
      order: fc.shuffledSubarray(ALL),
      only: platformIds,
      ignore: platformIds,
      allowFallbacks: fc.boolean(),
      sort: fc.constant('price' as const),
      dataCollection: fc.constantFrom('allow' as const, 'deny' as const),
      zdr: fc.boolean(),
      quantizations: fc.subarray([...QUANTIZATIONS] as Quantization[]),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(wsArb, reqArb, (ws, req) => {
      const base = new Set(ids(run(ws, null)));
      const withReq = ids(run(ws, req));
      return withReq.every((id) => base.has(id));
    }),
    { numRuns: 2000, seed: 42 },
  );
  t.pass('eligible(workspace + request) ⊆ eligible(workspace) for 2000 random pairs');
});

t.test('eligibleOnly is the funnel-free twin of eligibleDeployments', async (t) => {
  // The request path uses eligibleOnly; the error path explains with eligibleDeployments. They must
  // never disagree, whatever the policy: checked over every fixture model, endpoint and workspace.
  for (const name of ['gateway', 'routing-http']) {
    const index = new ConfigIndex(fixtureConfig(name));
    const sealed = new Set(index.config.resources.filter((_r, i) => i % 3 !== 0).map((r) => r.credential));
    const creds = { has: (n: string) => sealed.has(n) };
    for (const model of index.config.models) {
      for (const endpoint of index.config.vocabularies.endpoints.map((e) => e.id)) {
        for (const ws of index.config.workspaces) {
          const args = {
            index,
            model,
            endpoint,
            policy: mergePreferences(ws.routing, null),
            creds,
            nowMs: Date.parse('2026-01-15T12:00:00Z'),
          };
          const full = eligibleDeployments(args).deployments.map((d) => d.id);
          const lean = eligibleOnly(args).map((d) => d.id);
          if (JSON.stringify(full) !== JSON.stringify(lean))
            t.same(lean, full, `${name} ${model.id} ${endpoint} ${ws.id}`);
        }
      }
    }
  }
  t.pass('agree everywhere');
});
