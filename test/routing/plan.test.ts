// planRoute: models without eligible deployments are skipped for their fallbacks; when none has
// any, `no_eligible_provider` carries the funnel of every model.
import t from 'tap';
import { GatewayError } from '../../src/errors.ts';
import type { FunnelStage } from '../../src/routing/candidates.ts';
import { HealthTracker } from '../../src/routing/health.ts';
import { type NoEligibleProviderMetadata, planRoute } from '../../src/routing/plan.ts';
import { type ProviderPreferences, mergePreferences, parseProviderPreferences } from '../../src/routing/preferences.ts';
import { declaredHealth } from '../../src/availability/serving.ts';
import { ManualClock } from '../../src/clock.ts';
import type { CompiledModel, CompiledRouting } from '../../src/config/compiled.ts';
import { HEALTH, NOW, buildIndex, credsOf, deployment, model, platform, routing, seeded } from './fixtures.ts';

const index = buildIndex({
  models: [model('acme/primary'), model('acme/fallback'), model('acme/second')],
  platforms: [platform('openai', { zdr: true }), platform('gcp'), platform('aws', { aliases: ['amazon-bedrock'] })],
  deployments: [
    deployment('p-gcp', 'acme/primary', 'gcp'),
    deployment('f-openai', 'acme/fallback', 'openai', { weight: 10 }),
    deployment('f-aws', 'acme/fallback', 'aws', { weight: 10 }),
    deployment('s-aws', 'acme/second', 'aws'),
  ],
});
const creds = credsOf(index);
const M = (id: string) => index.modelById.get(id) as CompiledModel;

function plan(models: string[], ws: Partial<CompiledRouting> = {}, req: unknown = null) {
  const prefs: ProviderPreferences | null = req === null ? null : parseProviderPreferences(req, index);
  return planRoute({
    index,
    endpoint: 'chat',
    models: models.map(M),
    policy: mergePreferences(routing(ws), prefs),
    creds,
    health: declaredHealth,
    nowMs: NOW,
    random: seeded(3),
  });
}

function refused(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
  throw new Error('expected a GatewayError');
}

t.test('a plan per model with eligible deployments, in request order', async (t) => {
  const r = plan(['acme/primary', 'acme/fallback', 'acme/second']);
  t.same(
    r.plans.map((p) => [p.model.id, p.deployments.map((d) => d.id).sort()]),
    [
      ['acme/primary', ['p-gcp']],
      ['acme/fallback', ['f-aws', 'f-openai']],
      ['acme/second', ['s-aws']],
    ],
  );
});

t.test('no eligible primary but an eligible fallback', async (t) => {
  const r = plan(['acme/primary', 'acme/fallback'], {}, { ignore: ['gcp'], order: ['Amazon-Bedrock'] });
  t.same(
    r.plans.map((p) => p.model.id),
    ['acme/fallback'],
  );
  t.same(
    r.plans[0]?.deployments.map((d) => d.id),
    ['f-aws', 'f-openai'],
    'the request order applies to the fallback too',
  );
});

t.test('nothing eligible anywhere: no_eligible_provider with every funnel', async (t) => {
  const err = refused(() =>
    plan(['acme/primary', 'acme/fallback', 'acme/second'], { zdr: true }, { ignore: ['openai'] }),
  );
  t.equal(err.code, 'no_eligible_provider');
  t.equal(err.status, 404);
  t.equal(err.type, 'not_found_error');
  t.equal(
    err.message,
    'no provider can serve "acme/primary" nor its fallbacks "acme/fallback", "acme/second" under the routing settings of this request and workspace',
  );
  const meta = err.metadata as NoEligibleProviderMetadata;
  t.equal(meta.model, 'acme/primary');
  const removedAt = (f: FunnelStage[]) => f.filter((s) => s.removed.length > 0).map((s) => [s.stage, s.removed]);
  t.same(removedAt(meta.funnel), [['data_policy', [{ provider: 'gcp', reason: 'not zero-data-retention' }]]]);
  t.same(
    meta.fallbacks?.map((f) => f.model),
    ['acme/fallback', 'acme/second'],
  );
  t.same(removedAt(meta.fallbacks?.[0]?.funnel ?? []), [
    ['request_providers', [{ provider: 'openai', reason: 'in provider.ignore' }]],
    ['data_policy', [{ provider: 'aws', reason: 'not zero-data-retention' }]],
  ]);
  t.same(removedAt(meta.fallbacks?.[1]?.funnel ?? []), [
    ['data_policy', [{ provider: 'aws', reason: 'not zero-data-retention' }]],
  ]);
  t.same(err.toBody().error.metadata, meta, 'the metadata reaches the error body');
  t.same(JSON.parse(JSON.stringify(err.toBody())).error.metadata, meta, 'and is plain JSON');
});

t.test('single model: message names it, no fallbacks key', async (t) => {
  const err = refused(() => plan(['acme/primary'], { allow: ['openai'] }));
  t.equal(err.message, 'no provider can serve "acme/primary" under the routing settings of this request and workspace');
  const meta = err.metadata as NoEligibleProviderMetadata;
  t.same(Object.keys(meta), ['model', 'funnel']);
  t.same(meta.funnel.find((s) => s.stage === 'workspace_policy')?.removed, [
    { provider: 'gcp', reason: 'not in the workspace allowlist' },
  ]);
  const one = refused(() => plan(['acme/primary', 'acme/second'], { allow: ['openai'] }));
  t.equal(
    one.message,
    'no provider can serve "acme/primary" nor its fallback "acme/second" under the routing settings of this request and workspace',
  );
});

t.test('a model with no registered deployment at all', async (t) => {
  const lonely = buildIndex({ models: [model('acme/lonely')], platforms: [platform('openai')], deployments: [] });
  const err = refused(() =>
    planRoute({
      index: lonely,
      endpoint: 'chat',
      models: [lonely.modelById.get('acme/lonely') as CompiledModel],
      policy: mergePreferences(routing(), null),
      creds: credsOf(lonely),
      health: declaredHealth,
      nowMs: NOW,
      random: seeded(1),
    }),
  );
  const meta = err.metadata as NoEligibleProviderMetadata;
  t.same(meta.funnel[0], { stage: 'model', remaining: 0, removed: [], providers: [] });
  t.ok(meta.funnel.every((s) => s.remaining === 0));
});

t.test('down deployments stay eligible (last resort); the pin per model', async (t) => {
  const clock = new ManualClock(NOW);
  const health = new HealthTracker(HEALTH, clock);
  for (let i = 0; i < 5; i++) health.record('f-openai', { ok: false, reason: 'connect' });
  const r = planRoute({
    index,
    endpoint: 'chat',
    models: [M('acme/fallback')],
    policy: mergePreferences(routing(), null),
    creds,
    health,
    nowMs: clock.now(),
    random: seeded(1),
    pinnedFor: (id) => (id === 'acme/fallback' ? 'f-openai' : null),
  });
  t.same(
    r.plans[0]?.deployments.map((d) => d.id),
    ['f-aws', 'f-openai'],
    'open breaker: last, and the pin does not lift it',
  );
  const pinned = planRoute({
    index,
    endpoint: 'chat',
    models: [M('acme/fallback')],
    policy: mergePreferences(routing({ order: ['openai'] }), null),
    creds,
    health: declaredHealth,
    nowMs: NOW,
    random: seeded(1),
    pinnedFor: () => 'f-aws',
  });
  t.same(
    pinned.plans[0]?.deployments.map((d) => d.id),
    ['f-aws', 'f-openai'],
    'pin beats the order tier',
  );
});
