// GET /v1/models/{vendor}/{model}/endpoints through a real gateway: the closed view and entry
// shapes, effective vs list pricing over time, data policy, and selection rules 1-4 (who serves,
// the best deployment per platform, entry order, nothing internal leaks).
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { openStore } from '../../../src/store/sqlite/store.ts';
import { DEFAULT_NOW, startStack } from '../../helpers/stack.ts';
import { arr, checkEndpointsView, checkModelNotFound, getJson, type JsonObject, obj } from './catalog-checks.ts';

async function view(url: string, slug: string): Promise<JsonObject> {
  const r = await getJson(`${url}/v1/models/${slug}/endpoints`);
  if (r.status !== 200) throw new Error(`${slug}: status ${r.status} ${r.text}`);
  return obj(r.body['data']);
}

function entries(v: JsonObject): JsonObject[] {
  return arr(v['endpoints']).map(obj);
}

function providers(v: JsonObject): string[] {
  return entries(v).map((e) => e['provider'] as string);
}

function entry(v: JsonObject, provider: string): JsonObject {
  const e = entries(v).find((x) => x['provider'] === provider);
  if (!e) throw new Error(`no ${provider} entry in ${JSON.stringify(v)}`);
  return e;
}

t.test('every listed model of both fixtures: closed view, closed entries, generic rules', async (t) => {
  for (const config of ['gateway', 'catalog-select']) {
    const s = await startStack(t, { config });
    const list = await getJson(`${s.url}/v1/models`);
    for (const m of arr(list.body['data']).map(obj)) {
      const r = await getJson(`${s.url}/v1/models/${m['id'] as string}/endpoints`);
      t.equal(r.status, 200, `${config} ${m['id'] as string}: 200`);
      t.same(Object.keys(r.body), ['data']);
      checkEndpointsView(t, r.body['data'], s.config.vocabularies, m);
    }
  }
});

t.test('acme/chat-small at the pinned clock: every field of every entry', async (t) => {
  const s = await startStack(t);
  const v = await view(s.url, 'acme/chat-small');
  t.equal(v['id'], 'acme/chat-small');
  t.strictSame(v['aliases'], ['acme/small']);
  t.equal(v['openness'], 'proprietary');
  t.equal(v['model_page_url'], 'https://acme.example/models/chat-small');
  t.strictSame(v['capabilities'], [
    'supports_tools',
    'supports_parallel_tool_calls',
    'supports_json_mode',
    'supports_vision',
    'supports_prompt_caching',
  ]);
  t.strictSame(v['protocols'], ['chat_completions', 'responses']);
  t.strictSame(v['supported_endpoints'], ['chat_completions', 'responses']);
  // alpha 100, beta 80 (its weight-500 deployment sits on the inactive beta-off resource), gamma 60,
  // zeta 40; gcp's only deployment is inactive.
  t.strictSame(providers(v), ['alpha', 'beta', 'gamma', 'zeta']);

  const list = { prompt: '0.000001', completion: '0.000002', input_cache_read: '0.0000005' };
  const allCaps = v['capabilities'];
  t.strictSame(entry(v, 'alpha'), {
    provider: 'alpha',
    provider_type: 'first_party',
    headquarters: 'US',
    protocols: ['chat_completions', 'responses'],
    supported_endpoints: ['chat_completions', 'responses'],
    context_length: 32000,
    max_prompt_tokens: null,
    max_completion_tokens: 4096,
    quantization: 'bf16',
    supports_stream_cancellation: true,
    capabilities: allCaps,
    pricing: list,
    list_pricing: list,
    discount: null,
    data_policy: { prompt_training: false, data_retention: 'zero', moderation: 'platform', reviewed: true },
  });
  t.strictSame(
    entry(v, 'beta'),
    {
      provider: 'beta',
      provider_type: 'reseller',
      headquarters: 'DE',
      protocols: ['chat_completions', 'responses'],
      supported_endpoints: ['chat_completions', 'responses'],
      context_length: 32000,
      max_prompt_tokens: null,
      max_completion_tokens: 4096,
      quantization: 'fp8',
      supports_stream_cancellation: false,
      capabilities: allCaps,
      pricing: { prompt: '0.00000075', completion: '0.0000015', input_cache_read: '0.000000375' },
      list_pricing: list,
      discount: { percent_off: 25, ends_at: '2026-02-01T00:00:00Z' },
      data_policy: { prompt_training: null, data_retention: 'unknown', moderation: 'none', reviewed: false },
    },
    'beta: 25 % below list until ends_at; unrecorded retention shows unknown, training null',
  );
  t.strictSame(
    entry(v, 'gamma'),
    {
      provider: 'gamma',
      provider_type: 'cloud_infra',
      headquarters: 'US',
      protocols: ['chat_completions'],
      supported_endpoints: ['chat_completions'],
      context_length: 32000,
      max_prompt_tokens: null,
      max_completion_tokens: 4096,
      quantization: 'fp4',
      supports_stream_cancellation: true,
      capabilities: ['supports_tools', 'supports_parallel_tool_calls', 'supports_json_mode', 'supports_prompt_caching'],
      pricing: { prompt: '0.0000005', completion: '0.000001', input_cache_read: '0.00000025' },
      list_pricing: list,
      discount: { percent_off: 50, ends_at: null },
      data_policy: { prompt_training: false, data_retention: 'short', moderation: 'customer', reviewed: true },
    },
    'gamma: channel removes supports_vision; channel price list shown as a rounded percent with no end',
  );
  t.strictSame(
    entry(v, 'zeta'),
    {
      provider: 'zeta',
      provider_type: 'cloud_infra',
      headquarters: 'SE',
      protocols: ['chat_completions'],
      supported_endpoints: ['chat_completions'],
      context_length: 32000,
      max_prompt_tokens: null,
      max_completion_tokens: 4096,
      quantization: null,
      supports_stream_cancellation: true,
      capabilities: allCaps,
      pricing: list,
      list_pricing: list,
      discount: null,
      data_policy: { prompt_training: false, data_retention: 'short', moderation: 'platform', reviewed: true },
    },
    'zeta: undeclared quantization is null',
  );

  const painter = await view(s.url, 'acme/painter');
  t.strictSame(painter['protocols'], [], 'image endpoints belong to none of the three inference protocols');
  t.strictSame(painter['supported_endpoints'], ['images_generations', 'images_edits'], 'they are listed as endpoints');
  for (const e of painter['endpoints'] as Record<string, unknown>[]) {
    t.strictSame(e['protocols'], [], `${String(e['provider'])}: no protocol for an image-only entry`);
    t.ok((e['supported_endpoints'] as string[]).length > 0);
  }
  t.equal(
    entry(painter, 'alpha')['context_length'],
    null,
    'context_length null when neither deployment nor model declares it',
  );
});

t.test('discount window: ends_at is exclusive, then pricing is list and discount null', async (t) => {
  const clock = new ManualClock(DEFAULT_NOW);
  const s = await startStack(t, { clock });
  clock.set('2026-01-31T23:59:59.999Z');
  let beta = entry(await view(s.url, 'acme/chat-small'), 'beta');
  t.strictSame(
    beta['discount'],
    { percent_off: 25, ends_at: '2026-02-01T00:00:00Z' },
    'last millisecond: still discounted',
  );
  t.equal(obj(beta['pricing'])['prompt'], '0.00000075');

  clock.set('2026-02-01T00:00:00.000Z');
  const v = await view(s.url, 'acme/chat-small');
  beta = entry(v, 'beta');
  t.equal(beta['discount'], null, 'at ends_at: no discount');
  t.strictSame(beta['pricing'], beta['list_pricing'], 'at ends_at: pricing equals list');
  t.strictSame(
    entry(v, 'gamma')['discount'],
    { percent_off: 50, ends_at: null },
    'a window without end keeps applying',
  );

  clock.set(DEFAULT_NOW);
  t.strictSame(
    entry(await view(s.url, 'acme/chat-small'), 'beta')['discount'],
    { percent_off: 25, ends_at: '2026-02-01T00:00:00Z' },
    'computed per request: back in the window',
  );
});

t.test('channel price lists: percent_off rounded, half up', async (t) => {
  const clock = new ManualClock(DEFAULT_NOW);
  const s = await startStack(t, { config: 'catalog-select', clock });
  const v = await view(s.url, 'nova/multi');
  // List 4 + 4 micro-USD. p-three's best: 3.7 + 4 -> 3.75 % off -> 4. p-five: 3.8 + 4 -> 2.5 % -> 3.
  t.strictSame(entry(v, 'p-three')['discount'], { percent_off: 4, ends_at: null });
  t.strictSame(entry(v, 'p-three')['pricing'], { prompt: '0.0000037', completion: '0.000004' });
  t.strictSame(entry(v, 'p-five')['discount'], { percent_off: 3, ends_at: '2026-03-01T00:00:00Z' });
  clock.set('2026-03-01T00:00:00Z');
  const after = entry(await view(s.url, 'nova/multi'), 'p-five');
  t.equal(after['discount'], null, 'a channel price list ends at ends_at too');
  t.strictSame(after['pricing'], after['list_pricing']);
});

t.test('a percent discount applies to every class and every bracket; list_pricing keeps the brackets', async (t) => {
  const s = await startStack(t, { config: 'catalog-select' });
  const v = await view(s.url, 'nova/allmodal');
  t.strictSame(providers(v), ['p-one', 'p-two']);
  const two = entry(v, 'p-two');
  t.strictSame(two['discount'], { percent_off: 10, ends_at: null });
  t.strictSame(
    two['pricing'],
    {
      prompt: '0.0000018',
      completion: '0.000009',
      request: '0.0009',
      image: '0.00108',
      image_output: '0.000027',
      audio: '0.0000036',
      audio_output: '0.0000072',
      input_audio_cache: '0.00000036',
      web_search: '0.009',
      internal_reasoning: '0.000009',
      input_cache_read: '0.00000018',
      input_cache_write: '0.00000225',
      input_cache_write_1h: '0.0000036',
      image_token: '0.0000027',
      overrides: [
        { min_prompt_tokens: 128000, prompt: '0.0000036', completion: '0.000018' },
        { min_prompt_tokens: 1000000, prompt: '0.0000072', input_cache_read: '0.00000072' },
      ],
    },
    'brackets at the channel price, still restating only their own classes',
  );
  t.strictSame(entry(v, 'p-one')['discount'], null);
  t.strictSame(entry(v, 'p-one')['pricing'], two['list_pricing']);
});

t.test('selection rule 1: inactive deployment or resource, unsealed credential serve nothing', async (t) => {
  const s = await startStack(t);
  t.strictSame(
    providers(await view(s.url, 'acme/chat-big')),
    ['alpha', 'gamma'],
    'zeta (weight 999, unsealed credential) absent; gamma (declared down) present: health is not part of rule 1',
  );
  const small = await view(s.url, 'acme/chat-small');
  t.notOk(providers(small).includes('gcp'), 'gcp: inactive deployment, no entry');
  t.equal(
    entry(small, 'beta')['quantization'],
    'fp8',
    'beta: the weight-500 deployment on the inactive resource is not its best',
  );
  t.strictSame(entry(small, 'beta')['supported_endpoints'], ['chat_completions', 'responses']);
});

t.test('rule 1: a credential sealed by another process (the CLI) shows on the next request', async (t) => {
  // The production path: `pi-gateway secret set` writes through its own connection to the same file.
  const dir = t.testdir({});
  const file = join(dir, 'gateway.db');
  const masterKey = randomBytes(32).toString('base64');
  const clock = new ManualClock(DEFAULT_NOW);
  const store = openStore(file, { clock, masterKey, requestLog: { flushIntervalMs: 10 } });
  const s = await startStack(t, { clock, store });
  const cli = openStore(file, { clock, masterKey });
  t.teardown(() => {
    cli.close();
    store.close();
  });

  t.strictSame(providers(await view(s.url, 'acme/chat-big')), ['alpha', 'gamma']);
  cli.secrets.set('zeta-unsealed-key', 'sealed-later');
  t.strictSame(
    providers(await view(s.url, 'acme/chat-big')),
    ['zeta', 'alpha', 'gamma'],
    'zeta appears, first by its weight 999, without a restart',
  );
  cli.secrets.remove('zeta-unsealed-key');
  t.strictSame(
    providers(await view(s.url, 'acme/chat-big')),
    ['alpha', 'gamma'],
    'and disappears when the credential is removed',
  );
});

t.test('rule 1: a credential sealed through stack.store (same connection) shows on the next request', async (t) => {
  const s = await startStack(t);
  t.strictSame(providers(await view(s.url, 'acme/chat-big')), ['alpha', 'gamma']);
  s.store.secrets.set('zeta-unsealed-key', 'sealed-later');
  t.strictSame(
    providers(await view(s.url, 'acme/chat-big')),
    ['zeta', 'alpha', 'gamma'],
    'zeta appears without a restart',
  );
});

t.test('a listable model nothing can serve: 200 with empty endpoints', async (t) => {
  const s = await startStack(t, { seal: () => false });
  const list = await getJson(`${s.url}/v1/models`);
  t.ok(
    arr(list.body['data']).some((m) => obj(m)['id'] === 'acme/chat-small'),
    'still listed',
  );
  const v = await view(s.url, 'acme/chat-small');
  t.strictSame(v['endpoints'], [], 'no entries');
  t.strictSame(v['protocols'], [], 'protocols: union over no entries');
  t.strictSame(v['supported_endpoints'], []);
  t.strictSame(
    v['capabilities'],
    [
      'supports_tools',
      'supports_parallel_tool_calls',
      'supports_json_mode',
      'supports_vision',
      'supports_prompt_caching',
    ],
    "the model's own capabilities stay",
  );

  const s2 = await startStack(t, { config: 'catalog-select' });
  t.strictSame((await view(s2.url, 'nova/orphan'))['endpoints'], [], 'a model without deployments');
});

t.test('selection rules 2 and 3: best deployment per platform, ordered by its weight then platform id', async (t) => {
  const s = await startStack(t, { config: 'catalog-select' });
  const v = await view(s.url, 'nova/multi');
  // p-one 100 (a over b: weight), p-three 70 (w over x: id), p-four 60 (both down: weight),
  // p-five 30 and p-two 30 (big is down: small wins; tie on weight -> platform id).
  t.strictSame(providers(v), ['p-one', 'p-three', 'p-four', 'p-five', 'p-two']);
  const one = entry(v, 'p-one');
  t.equal(one['quantization'], 'fp8', 'p-one carries deployment a');
  t.equal(one['max_prompt_tokens'], 9000);
  t.equal(one['context_length'], 10000, "a's context length (the model's), not b's 8000");
  t.strictSame(one['capabilities'], ['supports_tools', 'supports_pdf_input'], "a's narrowed capabilities");
  t.strictSame(
    one['protocols'],
    ['chat_completions', 'responses'],
    'protocols the platform accepts for the model (a and b together)',
  );
  t.strictSame(one['supported_endpoints'], ['chat_completions', 'responses']);
  t.equal(entry(v, 'p-two')['quantization'], 'int8', 'p-two: the up deployment beats the heavier down one');
  t.equal(entry(v, 'p-three')['quantization'], 'fp4', 'p-three: equal weight, lower id wins');
  t.equal(entry(v, 'p-four')['quantization'], 'int8', 'p-four: both down, heavier wins');
  t.equal(entry(v, 'p-five')['headquarters'], 'CA');
  t.equal(entry(v, 'p-two')['headquarters'], null, 'undeclared headquarters is null');
  t.equal(entry(v, 'p-four')['provider_type'], 'private');

  // Runtime health counts as down too: trip p-one's best deployment and b takes over (weight 50).
  for (let i = 0; i < 3; i++) s.gw.ctx.health.record('one/secret-dep-a', { ok: false, reason: 'status_5xx' });
  const after = await view(s.url, 'nova/multi');
  t.strictSame(providers(after), ['p-three', 'p-four', 'p-one', 'p-five', 'p-two'], 'p-one now ordered by b (50)');
  const one2 = entry(after, 'p-one');
  t.equal(one2['quantization'], 'bf16');
  t.equal(one2['context_length'], 8000);
  t.equal(one2['max_prompt_tokens'], null);
  t.strictSame(one2['capabilities'], ['supports_tools', 'supports_vision', 'supports_pdf_input']);
});

t.test('rule 1 on catalog-select: an unsealed platform disappears, the others keep their order', async (t) => {
  const s = await startStack(t, { config: 'catalog-select', seal: (c) => c !== 'secret-cred-one' });
  t.strictSame(providers(await view(s.url, 'nova/multi')), ['p-three', 'p-four', 'p-five', 'p-two']);
});

t.test('rule 4: no region, resource, account, deployment id or upstream name anywhere', async (t) => {
  for (const config of ['gateway', 'catalog-select']) {
    // Seal everything so every deployment is in play.
    const s = await startStack(t, { config, seal: () => true });
    const texts: string[] = [];
    const list = await getJson(`${s.url}/v1/models`);
    texts.push(list.text);
    for (const m of arr(list.body['data']).map(obj)) {
      texts.push((await getJson(`${s.url}/v1/models/${m['id'] as string}`)).text);
      texts.push((await getJson(`${s.url}/v1/models/${m['id'] as string}/endpoints`)).text);
    }
    const all = texts.join('\n');
    const forbidden = new Set<string>();
    for (const r of s.config.resources) {
      forbidden.add(r.id);
      forbidden.add(r.credential);
      forbidden.add(new URL(r.baseUrl).host);
      if (r.region) forbidden.add(r.region);
    }
    for (const d of s.config.deployments) {
      forbidden.add(d.id);
      forbidden.add(d.upstreamModel);
    }
    const leaked = [...forbidden].filter((x) => all.includes(x));
    t.same(leaked, [], `${config}: nothing internal appears in ${texts.length} catalog bodies`);
    if (config === 'catalog-select') t.notOk(all.includes('secret-'), 'no secret- marker at all');
  }
});

t.test('404 for absent or unlistable models', async (t) => {
  const s = await startStack(t);
  for (const slug of [
    'acme/nope',
    'nope/chat-small',
    'acme/disabled',
    'acme/small',
    'acme/chat-small-2025-06-01',
    'ACME/chat-small',
  ]) {
    checkModelNotFound(t, await getJson(`${s.url}/v1/models/${slug}/endpoints`), slug);
  }
});

t.test('channels above list: pricing is the channel price, list_pricing the list, discount null', async (t) => {
  const s = await startStack(t, { config: 'routing-http' });
  const models = await getJson(`${s.url}/v1/models`);
  const model = arr(models.body['data'])
    .map(obj)
    .find((m) => m['id'] === 'acme/regional') as JsonObject;
  const list = { prompt: '0.000003', completion: '0.000015', input_cache_read: '0.0000003' };
  t.strictSame(model['pricing'], list, 'the catalog model carries list prices only');
  const v = await view(s.url, 'acme/regional');
  checkEndpointsView(t, v, s.config.vocabularies, model);
  t.strictSame(providers(v), ['gcp', 'kappa', 'aws'], 'entries by weight, whatever the price');
  const gcp = entry(v, 'gcp');
  t.strictSame(
    gcp['pricing'],
    { prompt: '0.0000033', completion: '0.0000165', input_cache_read: '0.00000033' },
    'gcp: 10 % above list on every class',
  );
  t.strictSame(gcp['list_pricing'], list);
  t.equal(gcp['discount'], null, 'a dearer channel is never a discount');
  const kappa = entry(v, 'kappa');
  t.strictSame(
    kappa['pricing'],
    { prompt: '0.0000025', completion: '0.000018', input_cache_read: '0.00000025' },
    'kappa: cheaper input, dearer output',
  );
  t.strictSame(kappa['list_pricing'], list);
  t.equal(kappa['discount'], null, 'below list on some classes but above on one: no discount');
  const aws = entry(v, 'aws');
  t.strictSame(aws['pricing'], list);
  t.equal(aws['discount'], null);
});
