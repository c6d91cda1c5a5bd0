// `provider` validation (every 422 message exactly) and the merge with workspace routing settings.
import t, { type Test } from 'tap';
import type { Quantization } from '../../src/config/compiled.ts';
import { GatewayError } from '../../src/errors.ts';
import { mergePreferences, parseProviderPreferences } from '../../src/routing/preferences.ts';
import { routing, standardWorld } from './fixtures.ts';

const { index } = standardWorld();
const parse = (raw: unknown) => parseProviderPreferences(raw, index);

function fails(t: Test, raw: unknown, message: string): void {
  try {
    parse(raw);
    t.fail(`expected validation_failed: ${message}`);
  } catch (e) {
    t.ok(e instanceof GatewayError, 'a GatewayError');
    const err = e as GatewayError;
    t.equal(err.code, 'validation_failed');
    t.equal(err.status, 422);
    t.equal(err.message, message);
  }
}

t.test('valid preferences parse and resolve to platform ids', async (t) => {
  t.same(parse({}), {});
  t.same(
    parse({
      order: ['OpenAI', 'google-vertex'],
      only: ['AMAZON-BEDROCK', 'gcp', 'azure'],
      ignore: ['Google-AI-Studio'],
      allow_fallbacks: false,
      sort: 'price',
      data_collection: 'deny',
      zdr: true,
      quantizations: ['fp8', 'unknown'],
    }),
    {
      order: ['openai', 'gcp'],
      only: ['aws', 'gcp', 'azure'],
      ignore: ['gemini'],
      allowFallbacks: false,
      sort: 'price',
      dataCollection: 'deny',
      zdr: true,
      quantizations: ['fp8', 'unknown'],
    },
  );
  t.same(parse({ sort: { by: 'price' } }), { sort: 'price' });
  t.same(parse({ data_collection: 'allow', zdr: false, allow_fallbacks: true }), {
    dataCollection: 'allow',
    zdr: false,
    allowFallbacks: true,
  });
});

t.test('case-insensitive names and the three vendor-named aliases', async (t) => {
  t.same(
    parse({ only: ['GCP', 'Google-Vertex', 'gemini', 'GOOGLE-AI-STUDIO', 'Aws', 'amazon-bedrock'] }).only,
    ['gcp', 'gemini', 'aws'],
    'aliases collapse onto their id, first position kept',
  );
  t.same(parse({ order: ['amazon-bedrock', 'openai', 'AWS'] }).order, ['aws', 'openai']);
});

t.test('null and empty lists count as absent', async (t) => {
  t.same(parse(null), {});
  t.same(parse(undefined), {});
  t.same(
    parse({
      order: null,
      only: null,
      ignore: null,
      sort: null,
      zdr: null,
      allow_fallbacks: null,
      data_collection: null,
      quantizations: null,
    }),
    {},
  );
  t.same(parse({ order: [], only: [], quantizations: [] }), {});
  t.same(parse({ ignore: [] }), { ignore: [] });
});

t.test('non-object provider', async (t) => {
  for (const raw of ['openai', 1, true, ['openai']]) fails(t, raw, 'provider must be an object');
});

t.test('unknown keys', async (t) => {
  fails(t, { orderr: ['openai'] }, 'provider: unrecognized key "orderr"');
  fails(t, { allowFallbacks: false }, 'provider: unrecognized key "allowFallbacks"');
  fails(t, { order: ['openai'], bogus: 1 }, 'provider: unrecognized key "bogus"');
});

t.test('known but not supported yet', async (t) => {
  for (const key of [
    'require_parameters',
    'max_price',
    'preferred_min_throughput',
    'preferred_max_latency',
    'min_throughput',
    'max_latency',
    'enforce_distillable_text',
    'experimental',
  ]) {
    fails(t, { [key]: true }, `provider.${key} is not supported yet`);
  }
  fails(t, { sort: { by: 'price', partition: 'model' } }, 'provider.sort.partition is not supported yet');
});

t.test('the first problem in key order is reported', async (t) => {
  fails(t, { zdr: 'yes', bogus: 1 }, 'provider.zdr must be a boolean');
  fails(t, { bogus: 1, zdr: 'yes' }, 'provider: unrecognized key "bogus"');
});

t.test('wrong types, one message per field', async (t) => {
  for (const field of ['order', 'only', 'ignore']) {
    fails(t, { [field]: 'openai' }, `provider.${field} must be an array of strings`);
    fails(t, { [field]: ['openai', 3] }, `provider.${field} must be an array of strings`);
    fails(t, { [field]: { 0: 'openai' } }, `provider.${field} must be an array of strings`);
  }
  fails(t, { allow_fallbacks: 'false' }, 'provider.allow_fallbacks must be a boolean');
  fails(t, { allow_fallbacks: 0 }, 'provider.allow_fallbacks must be a boolean');
  fails(t, { zdr: 1 }, 'provider.zdr must be a boolean');
  fails(t, { data_collection: true }, 'provider.data_collection must be "allow" or "deny"');
  fails(t, { data_collection: 'Deny' }, 'provider.data_collection must be "allow" or "deny"');
  fails(t, { quantizations: 'fp8' }, 'provider.quantizations must be an array of strings');
  fails(t, { quantizations: [8] }, 'provider.quantizations must be an array of strings');
});

t.test('bad sort', async (t) => {
  const msg = 'provider.sort must be "price" or an object {"by": "price"}';
  fails(t, { sort: 'throughput' }, msg);
  fails(t, { sort: 'latency' }, msg);
  fails(t, { sort: 'Price' }, msg);
  fails(t, { sort: 1 }, msg);
  fails(t, { sort: ['price'] }, msg);
  fails(t, { sort: {} }, 'provider.sort.by is required');
  fails(t, { sort: { by: 'throughput' } }, 'provider.sort.by must be "price"');
  fails(t, { sort: { by: null } }, 'provider.sort.by must be "price"');
  fails(t, { sort: { by: 'price', order: 'asc' } }, 'provider.sort: unrecognized key "order"');
});

t.test('bad quantization value', async (t) => {
  fails(
    t,
    { quantizations: ['fp8', 'fp6'] },
    'provider.quantizations: unknown quantization "fp6" (expected one of fp4, int4, int8, fp8, fp16, bf16, fp32, unknown)',
  );
  fails(
    t,
    { quantizations: ['FP8'] },
    'provider.quantizations: unknown quantization "FP8" (expected one of fp4, int4, int8, fp8, fp16, bf16, fp32, unknown)',
  );
});

t.test('unknown provider names', async (t) => {
  fails(t, { only: ['openai', 'Nope'] }, 'provider.only: unknown provider "Nope"');
  fails(t, { ignore: ['google'] }, 'provider.ignore: unknown provider "google"');
  fails(t, { order: ['vertex'] }, 'provider.order: unknown provider "vertex"');
  // Resource, deployment and region names are not provider names.
  fails(t, { only: ['openai-main'] }, 'provider.only: unknown provider "openai-main"');
  fails(t, { only: ['d-openai'] }, 'provider.only: unknown provider "d-openai"');
});

t.test('merge: no request keeps the workspace settings', async (t) => {
  const p = mergePreferences(
    routing({
      allow: ['openai', 'gcp'],
      ignore: ['aws'],
      order: ['gcp'],
      sort: 'price',
      dataCollection: 'deny',
      zdr: true,
      quantizations: ['fp8'],
    }),
    null,
  );
  t.same([...(p.allow ?? [])], ['openai', 'gcp']);
  t.same([...p.ignore], ['aws']);
  t.same(p.order, ['gcp']);
  t.equal(p.sort, 'price');
  t.equal(p.allowFallbacks, true);
  t.equal(p.dataCollection, 'deny');
  t.equal(p.zdr, true);
  t.same([...(p.quantizations ?? [])], ['fp8']);
  const open = mergePreferences(routing(), {});
  t.equal(open.allow, null);
  t.equal(open.quantizations, null);
  t.equal(open.sort, null);
  t.same(open.order, []);
});

t.test('merge: only ∩ workspace allowlist; ignore ∪ workspace ignore', async (t) => {
  const p = mergePreferences(routing({ allow: ['openai', 'gcp', 'aws'], ignore: ['aws'] }), {
    only: ['gcp', 'azure'],
    ignore: ['openai'],
  });
  t.same([...(p.allow ?? [])].sort(), ['gcp']);
  t.same([...p.ignore].sort(), ['aws', 'openai']);
  t.same([...(mergePreferences(routing(), { only: ['gcp'] }).allow ?? [])], ['gcp'], 'only alone');
  t.same(
    [...(mergePreferences(routing({ allow: ['aws'] }), { only: ['gcp'] }).allow ?? [])],
    [],
    'disjoint: nothing allowed, never the union',
  );
});

t.test('merge: allow_fallbacks — either false gives false; a workspace false is not relaxed', async (t) => {
  t.equal(mergePreferences(routing(), {}).allowFallbacks, true);
  t.equal(mergePreferences(routing(), { allowFallbacks: false }).allowFallbacks, false);
  t.equal(mergePreferences(routing({ allowFallbacks: false }), { allowFallbacks: true }).allowFallbacks, false);
  // Workspace false + its own order is kept as a limit even when the request replaces the sort mode.
  const p = mergePreferences(routing({ allowFallbacks: false, order: ['openai', 'gcp'] }), {
    sort: 'price',
    allowFallbacks: true,
  });
  t.same(p.order, []);
  t.same([...(p.allow ?? [])], ['openai', 'gcp']);
  t.equal(
    mergePreferences(routing({ allowFallbacks: false }), {}).allow,
    null,
    'without a workspace order there is no limit',
  );
});

t.test('merge: the sort mode is replaced as a whole', async (t) => {
  const ws = routing({ order: ['aws', 'gcp'], sort: 'price' });
  const onlyOrder = mergePreferences(ws, { order: ['openai'] });
  t.same(onlyOrder.order, ['openai']);
  t.equal(onlyOrder.sort, null, 'request order without sort drops the workspace sort');
  const onlySort = mergePreferences(ws, { sort: 'price' });
  t.same(onlySort.order, [], 'request sort without order drops the workspace order');
  t.equal(onlySort.sort, 'price');
  const limitsOnly = mergePreferences(ws, { only: ['aws'], zdr: true });
  t.same(limitsOnly.order, ['aws', 'gcp'], 'limits do not touch the sort mode');
  t.equal(limitsOnly.sort, 'price');
  t.equal(limitsOnly.origin?.sortModeFrom, 'workspace');
  t.equal(onlyOrder.origin?.sortModeFrom, 'request');
});

t.test('merge: data limits only tighten', async (t) => {
  t.equal(mergePreferences(routing({ dataCollection: 'deny' }), { dataCollection: 'allow' }).dataCollection, 'deny');
  t.equal(mergePreferences(routing(), { dataCollection: 'deny' }).dataCollection, 'deny');
  t.equal(mergePreferences(routing(), { dataCollection: 'allow' }).dataCollection, 'allow');
  t.equal(mergePreferences(routing({ zdr: true }), { zdr: false }).zdr, true);
  t.equal(mergePreferences(routing(), { zdr: true }).zdr, true);
});

t.test('merge: quantizations intersect', async (t) => {
  const q = (ws: Quantization[] | null, req: Quantization[] | undefined) => {
    const r = mergePreferences(
      routing({ quantizations: ws }),
      req === undefined ? {} : { quantizations: req },
    ).quantizations;
    return r === null ? null : [...r].sort();
  };
  t.same(q(null, undefined), null);
  t.same(q(['fp8', 'bf16'], undefined), ['bf16', 'fp8']);
  t.same(q(null, ['fp4']), ['fp4']);
  t.same(q(['fp8', 'bf16'], ['bf16', 'fp4']), ['bf16']);
  t.same(q(['fp8'], ['fp4']), [], 'disjoint: none allowed, never the union');
});
