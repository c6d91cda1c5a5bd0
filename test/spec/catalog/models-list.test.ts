// GET /v1/models through a real gateway: keyless, flat, every field rule of the "Catalog model"
// table (generic checks on every model of three configs, explicit values for the fixtures), and the
// lifecycle rule at its exact boundaries with a ManualClock.
import t from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { DEFAULT_NOW, startStack } from '../../helpers/stack.ts';
import { arr, checkCatalogModel, checkModelNotFound, getJson, type JsonObject, obj } from './catalog-checks.ts';

function byId(body: JsonObject): Map<string, JsonObject> {
  return new Map(arr(body['data']).map((m) => [obj(m)['id'] as string, obj(m)]));
}

const GATEWAY_LISTED = [
  'acme/bracketed',
  'acme/chat-big',
  'acme/chat-small',
  'acme/embedder',
  'acme/painter',
  'acme/reasoner',
  'acme/retired',
  'beta-labs/sonnet-ish',
];

t.test('no key is needed and a sent key is not read', async (t) => {
  const s = await startStack(t);
  const plain = await getJson(`${s.url}/v1/models`);
  t.equal(plain.status, 200);
  t.match(plain.headers.get('content-type'), /^application\/json/);
  const variants: Record<string, string>[] = [
    { authorization: 'Bearer sk-pi-not-a-real-key' },
    { authorization: 'Bearer garbage' },
    { authorization: 'Basic dXNlcjpwYXNz' },
    { 'x-api-key': 'sk-pi-unknown' },
    { authorization: '', 'x-api-key': 'nope' },
    { authorization: `Bearer ${s.key('open')}` },
  ];
  for (const h of variants) {
    const r = await getJson(`${s.url}/v1/models`, h);
    t.equal(r.status, 200, `200 with ${JSON.stringify(h)}`);
    t.equal(r.text, plain.text, 'same body whatever key is sent');
  }
  // A revoked key is not read either.
  const rec = s.store.apiKeys.create({ workspace: 'open' });
  s.store.apiKeys.revoke(rec.id);
  t.equal(
    (await getJson(`${s.url}/v1/models`, { authorization: `Bearer ${rec.key}` })).status,
    200,
    'revoked key: still 200',
  );

  // Not read means not counted: a key of the 3-requests-per-minute workspace used on every catalog
  // route still has its whole quota for inference afterwards.
  const slow = s.key('slow');
  s.credit('slow', '10');
  for (const path of ['/v1/models', '/v1/models/acme/chat-small', '/v1/models/acme/chat-small/endpoints']) {
    for (let i = 0; i < 3; i++)
      t.equal(
        (await getJson(`${s.url}${path}`, { authorization: `Bearer ${slow}` })).status,
        200,
        `${path} with a rate-limited key`,
      );
  }
  for (let i = 0; i < 3; i++) {
    const res = await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }] },
      { key: slow },
    );
    await res.arrayBuffer();
    t.equal(res.status, 200, `inference ${i + 1} of 3 still admitted`);
  }
});

t.test('flat list of the listable models, closed objects, every field rule', async (t) => {
  const s = await startStack(t);
  const r = await getJson(`${s.url}/v1/models`);
  t.same(Object.keys(r.body), ['data'], 'the body is {data}, no pagination fields');
  const models = byId(r.body);
  t.same(
    [...models.keys()].sort(),
    GATEWAY_LISTED,
    'every enabled model inside its lifecycle, the disabled one absent',
  );
  for (const m of models.values()) checkCatalogModel(t, m, s.config.vocabularies);
});

t.test('explicit values derived from the gateway fixture YAML', async (t) => {
  const s = await startStack(t);
  const m = byId((await getJson(`${s.url}/v1/models`)).body);
  const get = (id: string): JsonObject => m.get(id) as JsonObject;

  const small = get('acme/chat-small');
  t.equal(small['canonical_slug'], 'acme/chat-small-2025-06-01');
  t.equal(small['name'], 'Acme: Chat Small', 'organisation prefix when training_organisation is recorded');
  t.equal(small['description'], 'A small chat model for tests.');
  t.equal(small['created'], Date.UTC(2025, 5, 1) / 1000, 'created = midnight UTC of the release day');
  t.equal(small['context_length'], 32000);
  t.strictSame(small['architecture'], {
    modality: 'text+image->text',
    input_modalities: ['text', 'image'],
    output_modalities: ['text'],
    tokenizer: 'acme',
    instruct_type: null,
  });
  t.strictSame(
    small['pricing'],
    { prompt: '0.000001', completion: '0.000002', input_cache_read: '0.0000005' },
    'list prices, never the beta discount or the gamma channel list',
  );
  t.strictSame(small['top_provider'], { context_length: 32000, max_completion_tokens: 4096, is_moderated: false });
  t.strictSame(
    small['supported_parameters'],
    [
      'tools',
      'tool_choice',
      'parallel_tool_calls',
      'max_tokens',
      'temperature',
      'top_p',
      'frequency_penalty',
      'presence_penalty',
      'stop',
      'seed',
      'response_format',
    ],
    'declared parameters plus those of the capabilities, in the vocabulary order',
  );
  t.strictSame(small['default_parameters'], { temperature: 0.7 });
  t.equal(small['knowledge_cutoff'], '2025-01-01');
  t.equal(small['expiration_date'], null);
  t.strictSame(small['links'], { details: '/v1/models/acme/chat-small' });
  t.notOk('reasoning' in small, 'no reasoning object for a model that does not reason');

  const big = get('acme/chat-big');
  t.equal(big['name'], 'Chat Big', 'no prefix without a training organisation');
  t.equal(big['canonical_slug'], 'acme/chat-big', 'canonical_slug equals id when already canonical');
  t.equal(big['created'], Date.UTC(2025, 8, 1) / 1000);
  t.strictSame(big['default_parameters'], {});

  const reasoner = get('acme/reasoner');
  t.strictSame(
    reasoner['supported_parameters'],
    ['tools', 'tool_choice', 'max_tokens', 'reasoning', 'include_reasoning'],
    'reasoning listed, reasoning_effort never',
  );
  t.strictSame(reasoner['reasoning'], {
    mandatory: false,
    default_enabled: true,
    supported_efforts: ['high', 'medium', 'low', 'minimal', 'none'],
    supports_max_tokens: true,
    default_effort: 'medium',
  });
  t.notOk('created' in reasoner, 'created absent without a release date');
  t.equal(reasoner['knowledge_cutoff'], null);

  t.strictSame(
    get('acme/bracketed')['pricing'],
    {
      prompt: '0.000001',
      completion: '0.000004',
      input_cache_read: '0.0000001',
      overrides: [{ min_prompt_tokens: 1000, prompt: '0.000002', completion: '0.000008' }],
    },
    'a bracket restates only its own classes (input_cache_read is not repeated, not zeroed)',
  );

  const painter = get('acme/painter');
  t.strictSame(
    painter['architecture'],
    {
      modality: 'text+image->image',
      input_modalities: ['text', 'image'],
      output_modalities: ['image'],
      tokenizer: 'acme',
      instruct_type: null,
    },
    'image mode outputs image',
  );
  t.notOk('context_length' in painter, 'context_length absent when undeclared');
  t.strictSame(painter['top_provider'], { max_completion_tokens: 5000, is_moderated: false });
  t.strictSame(painter['pricing'], {
    prompt: '0.000005',
    completion: '0',
    image_output: '0.00004',
    image_token: '0.00001',
  });
  t.strictSame(painter['supported_parameters'], []);

  const embedder = get('acme/embedder');
  t.equal(obj(embedder['architecture'])['modality'], 'text->embedding', 'embedding mode names itself');
  t.strictSame(obj(embedder['architecture'])['output_modalities'], ['embedding']);
  t.strictSame(
    embedder['top_provider'],
    { context_length: 8192, is_moderated: false },
    'max_completion_tokens absent when undeclared',
  );
  t.strictSame(
    embedder['pricing'],
    { prompt: '0.00000002', completion: '0' },
    'required classes stay "0", optional ones absent',
  );

  const retired = get('acme/retired');
  t.equal(retired['expiration_date'], '2026-01-10');
  t.strictSame(retired['top_provider'], { is_moderated: false });

  const sonnet = get('beta-labs/sonnet-ish');
  t.equal(sonnet['name'], 'Beta Labs: Sonnet-ish');
  t.equal(obj(sonnet['architecture'])['tokenizer'], 'betalabs');
  t.strictSame(sonnet['pricing'], {
    prompt: '0.000003',
    completion: '0.000015',
    input_cache_read: '0.0000003',
    input_cache_write: '0.00000375',
    input_cache_write_1h: '0.000006',
  });
});

t.test(
  'derivations on the catalog-select fixture: every modality, output capabilities, every price class',
  async (t) => {
    const s = await startStack(t, { config: 'catalog-select' });
    const r = await getJson(`${s.url}/v1/models`);
    const m = byId(r.body);
    for (const x of m.values()) checkCatalogModel(t, x, s.config.vocabularies);

    const all = m.get('nova/allmodal') as JsonObject;
    t.equal(all['name'], 'Nova Research: All Modal');
    t.strictSame(
      all['architecture'],
      {
        modality: 'text+image+file+audio+video->text+image+audio',
        input_modalities: ['text', 'image', 'file', 'audio', 'video'],
        output_modalities: ['text', 'image', 'audio'],
        tokenizer: 'nova',
        instruct_type: null,
      },
      'capabilities declared in reverse order still give the fixed modality order; outputs: mode first, then capabilities',
    );
    t.strictSame(all['supported_parameters'], [
      'tools',
      'tool_choice',
      'parallel_tool_calls',
      'max_tokens',
      'temperature',
      'top_p',
      'top_k',
      'stop',
      'seed',
      'logprobs',
      'top_logprobs',
      'response_format',
      'structured_outputs',
      'reasoning',
      'include_reasoning',
      'web_search_options',
    ]);
    t.strictSame(all['default_parameters'], { temperature: 1, top_p: 0.9 });
    t.strictSame(
      all['reasoning'],
      {
        mandatory: true,
        default_enabled: true,
        supported_efforts: ['max', 'xhigh', 'high', 'low'],
        supports_max_tokens: false,
      },
      'default_effort absent when none is declared',
    );
    t.equal(all['created'], Date.UTC(2025, 1, 28) / 1000);
    t.equal(all['knowledge_cutoff'], '2024-12-31');
    t.equal(all['expiration_date'], '2027-03-01');
    t.notOk('context_length' in all);
    t.strictSame(all['pricing'], {
      prompt: '0.000002',
      completion: '0.00001',
      request: '0.001',
      image: '0.0012',
      image_output: '0.00003',
      audio: '0.000004',
      audio_output: '0.000008',
      input_audio_cache: '0.0000004',
      web_search: '0.01',
      internal_reasoning: '0.00001',
      input_cache_read: '0.0000002',
      input_cache_write: '0.0000025',
      input_cache_write_1h: '0.000004',
      image_token: '0.000003',
      overrides: [
        { min_prompt_tokens: 128000, prompt: '0.000004', completion: '0.00002' },
        { min_prompt_tokens: 1000000, prompt: '0.000008', input_cache_read: '0.0000008' },
      ],
    });
    t.strictSame(
      obj(m.get('nova/ranker')?.['architecture'])['output_modalities'],
      ['rerank'],
      'rerank mode names itself',
    );
    t.equal(obj(m.get('nova/ranker')?.['architecture'])['modality'], 'text->rerank');
    t.strictSame(
      obj(m.get('nova/drawer')?.['architecture'])['output_modalities'],
      ['image'],
      'image mode plus image output capability: image once',
    );

    const reader = obj(m.get('nova/reader')?.['architecture']);
    t.strictSame(
      reader['input_modalities'],
      ['text', 'image', 'file', 'video'],
      'declared input modalities, in the fixed order, beyond what the capabilities imply',
    );
    t.equal(reader['modality'], 'text+image+file+video->text');
    t.strictSame(
      m.get('nova/reader')?.['supported_parameters'],
      ['tools', 'tool_choice'],
      'capabilities still drive the parameters',
    );
    const view = await getJson(`${s.url}/v1/models/nova/reader/endpoints`);
    t.strictSame(
      obj(view.body['data'])['capabilities'],
      ['supports_tools', 'supports_pdf_input'],
      'capabilities stay what the model declares: no supports_vision, no supports_video_input',
    );
  },
);

t.test('the bundled config obeys the generic rules too', async (t) => {
  const s = await startStack(t, { config: 'bundled' });
  const r = await getJson(`${s.url}/v1/models`);
  t.equal(r.status, 200);
  const data = arr(r.body['data']);
  t.ok(data.length > 0);
  for (const m of data) checkCatalogModel(t, m, s.config.vocabularies);
});

t.test('lifecycle: listed through 30 days after expiration, routed until the expiration date', async (t) => {
  const clock = new ManualClock(DEFAULT_NOW);
  const s = await startStack(t, { clock });
  const key = s.key('open');
  s.credit('open', '10');
  const listed = async (): Promise<boolean> => byId((await getJson(`${s.url}/v1/models`)).body).has('acme/retired');
  const chat = () =>
    s.post('/v1/chat/completions', { model: 'acme/retired', messages: [{ role: 'user', content: 'hi' }] }, { key });

  // Reading chosen: dates are midnight UTC (as for `created` and the routing cut-off), so the
  // listing ends at 2026-01-10T00:00Z + 30 x 24 h = 2026-02-09T00:00Z, exclusive.
  clock.set('2026-01-09T23:59:59.999Z');
  t.ok(await listed(), 'listed the day before expiration');
  const before = await chat();
  await before.arrayBuffer();
  t.equal(before.status, 200, 'still routed the last millisecond before its expiration date');

  clock.set('2026-01-10T00:00:00.000Z');
  t.ok(await listed(), 'listed on the expiration date');
  const refused = await chat();
  const body = obj(await refused.json());
  t.equal(refused.status, 404, 'routing refuses it from the expiration date itself');
  t.equal(obj(body['error'])['code'], 'model_not_found');
  t.match(obj(body['error'])['message'], /2026-01-10/, 'the refusal names the date');

  clock.set('2026-02-08T23:59:59.999Z');
  t.ok(await listed(), 'listed on the 30th day after');
  t.equal((await getJson(`${s.url}/v1/models/acme/retired`)).status, 200, 'single model still served');
  const view = await getJson(`${s.url}/v1/models/acme/retired/endpoints`);
  t.equal(view.status, 200, 'endpoints view still served');
  t.strictSame(obj(view.body['data'])['endpoints'], [], 'but nothing serves an expired model');

  clock.set('2026-02-09T00:00:00.000Z');
  t.notOk(await listed(), 'gone at expiration + 30 days');
  checkModelNotFound(t, await getJson(`${s.url}/v1/models/acme/retired`), 'single model past grace');
  checkModelNotFound(t, await getJson(`${s.url}/v1/models/acme/retired/endpoints`), 'endpoints past grace');

  // The list is cached until the next listing change; moving the clock back must not serve the
  // cached "gone" list (and jumping forward over the boundary must not serve the cached "listed" one).
  clock.set(DEFAULT_NOW);
  t.ok(await listed(), 'listed again when the clock moves back');
  clock.set('2026-03-01T00:00:00Z');
  t.notOk(await listed(), 'a jump over the boundary with no request in between still drops it');
});

t.test('a disabled model is never listed', async (t) => {
  const clock = new ManualClock(DEFAULT_NOW);
  const s = await startStack(t, { clock });
  for (const at of ['2020-01-01T00:00:00Z', DEFAULT_NOW, '2030-01-01T00:00:00Z']) {
    clock.set(at);
    t.notOk(byId((await getJson(`${s.url}/v1/models`)).body).has('acme/disabled'), `not listed at ${at}`);
    checkModelNotFound(t, await getJson(`${s.url}/v1/models/acme/disabled`), `single at ${at}`);
    checkModelNotFound(t, await getJson(`${s.url}/v1/models/acme/disabled/endpoints`), `endpoints at ${at}`);
  }
});
