// `provider` preferences through a real gateway: every field alone and in combination, merged with
// the workspace routing settings, observed as the deployments the simulator was asked (each answers
// 409, which is retried but no health signal, so one request shows its whole attempt order up to the
// 5-attempt cap); the 422 messages of bad preferences; and the funnel of `no_eligible_provider`.
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import {
  CHAT,
  MULTI_ORDER,
  USER,
  gatewayError,
  nothingCalledNothingHeld,
  routingStack,
  upstreams,
  type RoutingStack,
} from './routing-helpers.ts';

/** The upstream models one request tried, in order (every attempt answers 409). */
async function tried(r: RoutingStack, body: Record<string, unknown>, key?: string): Promise<string[]> {
  r.s.sim.clear();
  const res = await r.chat({ ...body, sim: { status: 409 } }, key ? { key } : {});
  await res.text();
  return upstreams(r.s);
}

/** The provider that served one plain request. */
async function served(r: RoutingStack, body: Record<string, unknown>, key?: string): Promise<string | null> {
  const res = await r.chat(body, key ? { key } : {});
  await res.text();
  return res.status === 200 ? res.headers.get('x-pi-provider') : `status ${res.status}`;
}

t.test('validation: 422 validation_failed with the exact messages, nothing called or held', async (t) => {
  const r = await routingStack(t);
  const cases: [unknown, string | RegExp][] = [
    [{ bogus: 1 }, 'provider: unrecognized key "bogus"'],
    [{ Order: ['aws'] }, 'provider: unrecognized key "Order"'],
    [{ only: ['aws'], fallbacks: true }, 'provider: unrecognized key "fallbacks"'],
    [{ require_parameters: true }, 'provider.require_parameters is not supported yet'],
    [{ max_price: { prompt: 1 } }, 'provider.max_price is not supported yet'],
    [{ preferred_min_throughput: 10 }, 'provider.preferred_min_throughput is not supported yet'],
    [{ preferred_max_latency: 1 }, 'provider.preferred_max_latency is not supported yet'],
    [{ enforce_distillable_text: true }, 'provider.enforce_distillable_text is not supported yet'],
    [{ sort: { by: 'price', partition: 'model' } }, 'provider.sort.partition is not supported yet'],
    [{ sort: { by: 'price', x: 1 } }, 'provider.sort: unrecognized key "x"'],
    // wrong types and values: the message names the field
    ['aws', /^provider must be an object/],
    [['aws'], /^provider must be an object/],
    [5, /^provider must be an object/],
    [{ order: 'aws' }, /^provider\.order must be an array of strings/],
    [{ only: [1] }, /^provider\.only must be an array of strings/],
    [{ ignore: {} }, /^provider\.ignore must be an array of strings/],
    [{ allow_fallbacks: 'no' }, /^provider\.allow_fallbacks must be a boolean/],
    [{ zdr: 1 }, /^provider\.zdr must be a boolean/],
    [{ data_collection: 'maybe' }, /^provider\.data_collection must be "allow" or "deny"/],
    [{ data_collection: true }, /^provider\.data_collection/],
    [{ sort: 'latency' }, /^provider\.sort must be "price"/],
    [{ sort: 1 }, /^provider\.sort must be "price"/],
    [{ sort: {} }, /^provider\.sort\.by is required/],
    [{ sort: { by: 'throughput' } }, /^provider\.sort\.by must be "price"/],
    [{ quantizations: 'fp8' }, /^provider\.quantizations must be an array of strings/],
    [{ quantizations: ['fp9'] }, /^provider\.quantizations: unknown quantization "fp9"/],
    [{ quantizations: ['FP8'] }, /unknown quantization "FP8"/],
    // unknown provider names, in every list field
    [{ order: ['aws', 'nowhere'] }, /^provider\.order: unknown provider "nowhere"/],
    [{ only: ['amazon'] }, /^provider\.only: unknown provider "amazon"/],
    [{ ignore: ['vertex'] }, /^provider\.ignore: unknown provider "vertex"/],
  ];
  for (const [provider, message] of cases) {
    const res = await r.chat({ provider });
    const err = await gatewayError(t, res, 422, 'validation_failed');
    if (typeof message === 'string') t.equal(err.message, message, JSON.stringify(provider));
    else t.match(err.message, message, `${JSON.stringify(provider)} → ${err.message}`);
  }
  // The same parser on the other protocols.
  let res = await r.s.post(
    '/v1/messages',
    { model: 'acme/multi', max_tokens: 5, messages: USER, provider: { bogus: 1 } },
    { key: r.key },
  );
  t.equal((await gatewayError(t, res, 422, 'validation_failed')).message, 'provider: unrecognized key "bogus"');
  res = await r.s.post(
    '/v1/responses',
    { model: 'acme/multi', input: 'x', provider: { max_price: {} } },
    { key: r.key },
  );
  t.equal((await gatewayError(t, res, 422, 'validation_failed')).message, 'provider.max_price is not supported yet');
  nothingCalledNothingHeld(t, r.s);
});

t.test('null and empty values count as absent', async (t) => {
  const r = await routingStack(t);
  t.same(await tried(r, { provider: null }), MULTI_ORDER.slice(0, 5));
  t.same(await tried(r, { provider: {} }), MULTI_ORDER.slice(0, 5));
  t.same(
    await tried(r, { provider: { order: null, only: [], quantizations: [], sort: null, ignore: [] } }),
    MULTI_ORDER.slice(0, 5),
  );
});

t.test('provider names: platform ids any case, and the vendor-named aliases of aws, gcp and gemini', async (t) => {
  const r = await routingStack(t);
  const names: [string, string][] = [
    ['AWS', 'aws'],
    ['Amazon-Bedrock', 'aws'],
    ['amazon-bedrock', 'aws'],
    ['google-vertex', 'gcp'],
    ['GCP', 'gcp'],
    ['GOOGLE-AI-STUDIO', 'gemini'],
    ['Gemini', 'gemini'],
    ['Kappa', 'kappa'],
  ];
  for (const [name, id] of names) {
    t.equal(await served(r, { provider: { only: [name] } }), id, `only ["${name}"] → ${id}`);
    t.equal(await served(r, { provider: { order: [name] } }), id, `order ["${name}"] → ${id}`);
  }
  // An id and its alias are one provider: ignoring the alias removes the id.
  t.equal(await served(r, { provider: { only: ['aws', 'gcp'], ignore: ['AMAZON-BEDROCK'] } }), 'gcp');
  t.same(
    await tried(r, { provider: { only: ['aws', 'amazon-bedrock', 'AWS'] } }),
    ['multi-aws'],
    'duplicates collapse',
  );
});

t.test('order: listed tiers first in list order, unlisted follow; down last within its tier', async (t) => {
  const r = await routingStack(t);
  t.same(await tried(r, { provider: { order: ['nu', 'mu'] } }), [
    'multi-nu',
    'multi-mu',
    'multi-mu-a',
    'multi-aws',
    'multi-gcp',
  ]);
  t.same(await tried(r, { provider: { order: ['lambda'] } }), [
    'multi-lambda',
    'multi-aws',
    'multi-gcp',
    'multi-gemini',
    'multi-kappa',
  ]);
  // kappa/multi-down weighs 1000 but is declared down: after kappa/multi, still before other tiers.
  t.same(await tried(r, { provider: { order: ['kappa', 'nu'] } }), [
    'multi-kappa',
    'multi-kappa-down',
    'multi-nu',
    'multi-aws',
    'multi-gcp',
  ]);
  // Without order, the down one comes after every healthy deployment (the unlisted tier is one tier).
  t.same(await tried(r, { provider: { order: ['gemini'], ignore: ['aws', 'gcp', 'lambda', 'nu'] } }), [
    'multi-gemini',
    'multi-kappa',
    'multi-mu',
    'multi-mu-a',
    'multi-kappa-down',
  ]);
  // A listed provider that does not serve the model is simply skipped.
  t.same(await tried(r, { model: 'acme/third', provider: { order: ['nu', 'aws'] } }), ['third-aws']);
});

t.test('only: use only these, intersected with the workspace allowlist', async (t) => {
  const r = await routingStack(t);
  t.same(await tried(r, { provider: { only: ['lambda', 'mu'] } }), ['multi-lambda', 'multi-mu', 'multi-mu-a']);
  t.same(
    await tried(r, { provider: { only: ['mu', 'lambda'] } }),
    ['multi-lambda', 'multi-mu', 'multi-mu-a'],
    'only does not order',
  );

  // Workspace allowlist aws, gcp, kappa, lambda with lambda ignored.
  const ws = r.keyFor('allowlist');
  t.same(await tried(r, {}, ws), ['multi-aws', 'multi-gcp', 'multi-kappa', 'multi-kappa-down']);
  t.same(
    await tried(r, { provider: { only: ['lambda', 'mu', 'gcp'] } }, ws),
    ['multi-gcp'],
    'lambda: workspace ignore; mu: not allowlisted',
  );
  t.same(await tried(r, { provider: { only: ['kappa', 'nu'] } }, ws), ['multi-kappa', 'multi-kappa-down']);
});

t.test('ignore: added to the workspace ignore list, wins over only', async (t) => {
  const r = await routingStack(t);
  t.same(await tried(r, { provider: { ignore: ['aws', 'gcp', 'gemini'] } }), [
    'multi-kappa',
    'multi-lambda',
    'multi-mu',
    'multi-mu-a',
    'multi-nu',
  ]);
  t.same(await tried(r, { provider: { only: ['aws', 'gcp'], ignore: ['aws'] } }), ['multi-gcp']);
  const ws = r.keyFor('allowlist');
  t.same(
    await tried(r, { provider: { ignore: ['aws'] } }, ws),
    ['multi-gcp', 'multi-kappa', 'multi-kappa-down'],
    'workspace ignore ∪ request ignore',
  );
  // The order names an ignored provider: ignore still wins.
  t.same(await tried(r, { provider: { order: ['aws'], ignore: ['aws'], only: ['aws', 'nu'] } }), ['multi-nu']);
});

t.test(
  'allow_fallbacks: false with an order means only the listed serve; a workspace false cannot be relaxed',
  async (t) => {
    const r = await routingStack(t);
    t.same(await tried(r, { provider: { order: ['mu'], allow_fallbacks: false } }), ['multi-mu', 'multi-mu-a']);
    t.same(await tried(r, { provider: { order: ['nu', 'kappa'], allow_fallbacks: false } }), [
      'multi-nu',
      'multi-kappa',
      'multi-kappa-down',
    ]);
    t.same(
      await tried(r, { provider: { allow_fallbacks: false } }),
      MULTI_ORDER.slice(0, 5),
      'without an order: no effect',
    );
    t.same(await tried(r, { provider: { order: ['mu'], allow_fallbacks: true } }), [
      'multi-mu',
      'multi-mu-a',
      'multi-aws',
      'multi-gcp',
      'multi-gemini',
    ]);

    // Workspace: order kappa, aws with allow_fallbacks false.
    const strict = r.keyFor('ordered-strict');
    t.same(await tried(r, {}, strict), ['multi-kappa', 'multi-kappa-down', 'multi-aws']);
    t.same(
      await tried(r, { provider: { allow_fallbacks: true } }, strict),
      ['multi-kappa', 'multi-kappa-down', 'multi-aws'],
      'cannot be relaxed',
    );
    // The request replaces the sort mode (its order), but not the workspace's limit: the workspace's
    // false now binds the request's order as well (only aws), and the workspace order still limits.
    t.same(await tried(r, { provider: { order: ['aws'] } }, strict), ['multi-aws']);
    t.same(await tried(r, { provider: { order: ['aws'], allow_fallbacks: true } }, strict), ['multi-aws']);
    t.same(await tried(r, { provider: { order: ['aws', 'kappa', 'nu'] } }, strict), [
      'multi-aws',
      'multi-kappa',
      'multi-kappa-down',
    ]);
    // sort alone replaces the workspace order too: one tier, by price (kappa 10 % off, then aws; down last).
    t.same(await tried(r, { provider: { sort: 'price' } }, strict), ['multi-kappa', 'multi-aws', 'multi-kappa-down']);
    // A request order outside the workspace's ordered providers leaves nobody.
    const res = await r.chat({ provider: { order: ['gcp'] } }, { key: strict });
    const err = await gatewayError(t, res, 404, 'no_eligible_provider');
    const funnel = (
      err.metadata as {
        funnel: { stage: string; remaining: number; removed: { provider: string; reason: string }[] }[];
      }
    ).funnel;
    const ws = funnel.find((f) => f.stage === 'workspace_policy');
    t.equal(ws?.remaining, 2);
    t.same(
      ws?.removed.map((x) => x.provider),
      ['gcp', 'gemini', 'lambda', 'mu', 'nu'],
    );
    t.match(ws?.removed[0]?.reason, /workspace order.*allow_fallbacks false/);
    const req = funnel.find((f) => f.stage === 'request_providers');
    t.same(req?.removed, [
      { provider: 'aws', reason: 'not in provider.order and allow_fallbacks is false' },
      { provider: 'kappa', reason: 'not in provider.order and allow_fallbacks is false' },
    ]);

    // Workspace: allow_fallbacks false without an order — it binds the request's order.
    const nofb = r.keyFor('no-fallbacks');
    t.same(await tried(r, {}, nofb), MULTI_ORDER.slice(0, 5));
    t.same(await tried(r, { provider: { order: ['nu'] } }, nofb), ['multi-nu']);
    t.same(
      await tried(r, { provider: { order: ['nu'], allow_fallbacks: true } }, nofb),
      ['multi-nu'],
      'cannot be relaxed',
    );
  },
);

t.test(
  'sort: input + output unit price at the channel effective price, lowest first, within each order tier',
  async (t) => {
    const r = await routingStack(t);
    const cheapest = ['multi-lambda', 'multi-gemini', 'multi-gcp', 'multi-nu', 'multi-kappa'];
    t.same(await tried(r, { provider: { sort: 'price' } }), cheapest);
    t.same(await tried(r, { provider: { sort: { by: 'price' } } }), cheapest, 'object form');
    // The rest: equal price 0.00003 → higher weight first, then ascending id; the down one last.
    t.same(await tried(r, { provider: { sort: 'price', ignore: ['lambda', 'gemini', 'gcp', 'nu'] } }), [
      'multi-kappa',
      'multi-aws',
      'multi-mu',
      'multi-mu-a',
      'multi-kappa-down',
    ]);
    // Within each tier.
    t.same(await tried(r, { provider: { order: ['mu', 'aws'], sort: 'price' } }), [
      'multi-mu',
      'multi-mu-a',
      'multi-aws',
      'multi-lambda',
      'multi-gemini',
    ]);
    t.same(await tried(r, { provider: { order: ['nu', 'aws', 'gcp'], sort: 'price', allow_fallbacks: false } }), [
      'multi-nu',
      'multi-aws',
      'multi-gcp',
    ]);

    // The workspace default (order mu, sort price) is replaced as a whole by a request order or sort.
    const sorted = r.keyFor('sorted');
    t.same(await tried(r, {}, sorted), ['multi-mu', 'multi-mu-a', 'multi-lambda', 'multi-gemini', 'multi-gcp']);
    t.same(
      await tried(r, { provider: { order: ['nu'] } }, sorted),
      ['multi-nu', 'multi-aws', 'multi-gcp', 'multi-gemini', 'multi-kappa'],
      'order without sort: weight decides',
    );
    t.same(await tried(r, { provider: { sort: 'price' } }, sorted), cheapest, 'sort without order: no tiers');
    t.same(
      await tried(r, { provider: { only: ['aws', 'mu', 'lambda'] } }, sorted),
      ['multi-mu', 'multi-mu-a', 'multi-lambda', 'multi-aws'],
      'a limit keeps the workspace sort mode',
    );
    // allow_fallbacks false without a request order binds the order in effect: the workspace's.
    t.same(await tried(r, { provider: { allow_fallbacks: false } }, sorted), ['multi-mu', 'multi-mu-a']);
    // An empty order counts as absent (spec reading), so it does not replace the workspace default.
    t.same(await tried(r, { provider: { order: [] } }, sorted), [
      'multi-mu',
      'multi-mu-a',
      'multi-lambda',
      'multi-gemini',
      'multi-gcp',
    ]);
  },
);

t.test('sort: price reads the effective channel price at request time (a discount ends, list applies)', async (t) => {
  const r = await routingStack(t, { clock: new ManualClock('2026-01-31T23:59:59Z') });
  t.same(await tried(r, { provider: { sort: 'price' } }), [
    'multi-lambda',
    'multi-gemini',
    'multi-gcp',
    'multi-nu',
    'multi-kappa',
  ]);
  // gcp's 50 % discount ends (exclusive) on Feb 1: gcp is then at list, 0.00003, after aws (weight 70 > 60).
  r.s.clock.set(Date.parse('2026-02-01T00:00:00Z'));
  t.same(await tried(r, { provider: { sort: 'price', ignore: ['lambda', 'gemini', 'nu'] } }), [
    'multi-kappa',
    'multi-aws',
    'multi-gcp',
    'multi-mu',
    'multi-mu-a',
  ]);
  // Equal list prices and no channel price: weight decides.
  t.same(await tried(r, { model: 'acme/pricey', provider: { sort: 'price' } }), ['pricey-aws', 'pricey-kappa']);
});

t.test(
  'data_collection deny: no training, no retention beyond a limited window, undeclared counts as may',
  async (t) => {
    const r = await routingStack(t);
    const expected = ['multi-aws', 'multi-kappa', 'multi-mu', 'multi-mu-a', 'multi-kappa-down'];
    t.same(await tried(r, { provider: { data_collection: 'deny' } }), expected);
    t.same(await tried(r, { provider: { data_collection: 'allow' } }), MULTI_ORDER.slice(0, 5));
    const deny = r.keyFor('deny');
    t.same(await tried(r, {}, deny), expected);
    t.same(
      await tried(r, { provider: { data_collection: 'allow' } }, deny),
      expected,
      'a workspace deny cannot be relaxed',
    );
  },
);

t.test('zdr: only zero-data-retention providers; a workspace true cannot be relaxed', async (t) => {
  const r = await routingStack(t);
  t.same(await tried(r, { provider: { zdr: true } }), ['multi-aws', 'multi-mu', 'multi-mu-a']);
  t.same(await tried(r, { provider: { zdr: false } }), MULTI_ORDER.slice(0, 5));
  const zdr = r.keyFor('zdr');
  t.same(await tried(r, { provider: { zdr: false } }, zdr), ['multi-aws', 'multi-mu', 'multi-mu-a']);
});

t.test(
  'quantizations: only deployments at one of them; undeclared is "unknown"; intersected with the workspace',
  async (t) => {
    const r = await routingStack(t);
    t.same(await tried(r, { provider: { quantizations: ['fp8'] } }), ['multi-aws', 'multi-mu-a']);
    t.same(await tried(r, { provider: { quantizations: ['unknown'] } }), ['multi-nu']);
    t.same(await tried(r, { provider: { quantizations: ['fp4', 'int4'] } }), ['multi-lambda', 'multi-mu']);
    t.same(await tried(r, { provider: { quantizations: ['fp16'] } }), ['multi-kappa', 'multi-kappa-down']);
    const quant = r.keyFor('quant'); // fp8, bf16, int8, unknown
    t.same(await tried(r, {}, quant), ['multi-aws', 'multi-gcp', 'multi-gemini', 'multi-mu-a', 'multi-nu']);
    t.same(
      await tried(r, { provider: { quantizations: ['fp8', 'fp4'] } }, quant),
      ['multi-aws', 'multi-mu-a'],
      'fp4 is not in the workspace list',
    );
    const res = await r.chat({ provider: { quantizations: ['fp4'] } }, { key: quant });
    const err = await gatewayError(t, res, 404, 'no_eligible_provider');
    const funnel = (err.metadata as { funnel: { stage: string; remaining: number }[] }).funnel;
    t.same(
      funnel.map((f) => [f.stage, f.remaining]),
      [
        ['model', 7],
        ['endpoint', 7],
        ['available', 7],
        ['workspace_policy', 7],
        ['request_providers', 7],
        ['data_policy', 7],
        ['quantization', 0],
      ],
    );
  },
);

t.test('every field at once', async (t) => {
  const r = await routingStack(t);
  const provider = {
    order: ['MU'],
    only: ['aws', 'gcp', 'mu', 'nu', 'kappa'],
    ignore: ['nu'],
    allow_fallbacks: true,
    sort: { by: 'price' },
    data_collection: 'deny',
    zdr: false,
    quantizations: ['fp8', 'fp4', 'fp16'],
  };
  // only → aws gcp kappa mu nu; ignore nu; deny drops gcp; quantizations keep all left.
  // Tier mu by price (tie: weight, then id), then the rest by price: kappa (10 % off) before aws; down last.
  t.same(await tried(r, { provider }), ['multi-mu', 'multi-mu-a', 'multi-kappa', 'multi-aws', 'multi-kappa-down']);
  t.same(await tried(r, { provider: { ...provider, allow_fallbacks: false } }), ['multi-mu', 'multi-mu-a']);
  t.same(await tried(r, { provider: { ...provider, zdr: true } }), ['multi-mu', 'multi-mu-a', 'multi-aws']);
  // The same request from the deny + quantization workspaces tightens further (quant: no fp4/fp16).
  t.same(await tried(r, { provider }, r.keyFor('quant')), ['multi-mu-a', 'multi-aws']);
  t.same(
    await tried(r, { provider }, r.keyFor('allowlist')),
    ['multi-kappa', 'multi-aws', 'multi-kappa-down'],
    'mu is not allowlisted',
  );
});

interface Stage {
  stage: string;
  remaining: number;
  removed: { provider: string; reason: string }[];
  providers?: string[];
}

t.test('no_eligible_provider: 404 whose metadata carries the funnel, stage by stage', async (t) => {
  const r = await routingStack(t);
  const ALL = ['aws', 'gcp', 'gemini', 'kappa', 'lambda', 'mu', 'nu'];

  let res = await r.chat({ provider: { only: ['gcp', 'gemini'], data_collection: 'deny' } });
  let err = await gatewayError(t, res, 404, 'no_eligible_provider');
  t.equal(err.type, 'not_found_error');
  t.match(err.message, /acme\/multi/);
  let meta = err.metadata as { model: string; funnel: Stage[]; fallbacks?: unknown };
  t.equal(meta.model, 'acme/multi');
  t.notOk('fallbacks' in meta, 'no fallbacks key without models');
  t.same(meta.funnel, [
    { stage: 'model', remaining: 7, removed: [], providers: ALL },
    { stage: 'endpoint', remaining: 7, removed: [] },
    { stage: 'available', remaining: 7, removed: [] },
    { stage: 'workspace_policy', remaining: 7, removed: [] },
    {
      stage: 'request_providers',
      remaining: 2,
      removed: ['aws', 'kappa', 'lambda', 'mu', 'nu'].map((provider) => ({ provider, reason: 'not in provider.only' })),
    },
    {
      stage: 'data_policy',
      remaining: 0,
      removed: [
        { provider: 'gcp', reason: 'may train on prompts' },
        { provider: 'gemini', reason: 'may train on prompts' },
      ],
    },
    { stage: 'quantization', remaining: 0, removed: [] },
  ]);

  // ignore wins over only, and says so.
  res = await r.chat({ provider: { only: ['aws'], ignore: ['aws'] } });
  err = await gatewayError(t, res, 404, 'no_eligible_provider');
  meta = err.metadata as { model: string; funnel: Stage[] };
  const req = meta.funnel.find((f) => f.stage === 'request_providers');
  t.equal(req?.remaining, 0);
  t.same(
    req?.removed.find((x) => x.provider === 'aws'),
    { provider: 'aws', reason: 'in provider.ignore' },
  );

  // Retention beyond a limited window and undeclared retention, zdr.
  res = await r.chat({ provider: { only: ['lambda', 'nu'], data_collection: 'deny' } });
  meta = (await gatewayError(t, res, 404, 'no_eligible_provider')).metadata as { model: string; funnel: Stage[] };
  t.same(meta.funnel.find((f) => f.stage === 'data_policy')?.removed, [
    { provider: 'lambda', reason: 'retains data beyond a limited window' },
    { provider: 'nu', reason: 'retains data beyond a limited window' },
  ]);
  res = await r.chat({ provider: { only: ['kappa'], zdr: true } });
  meta = (await gatewayError(t, res, 404, 'no_eligible_provider')).metadata as { model: string; funnel: Stage[] };
  t.same(meta.funnel.find((f) => f.stage === 'data_policy')?.removed, [
    { provider: 'kappa', reason: 'not zero-data-retention' },
  ]);
  res = await r.chat({ provider: { only: ['kappa'], quantizations: ['int8'] } });
  meta = (await gatewayError(t, res, 404, 'no_eligible_provider')).metadata as { model: string; funnel: Stage[] };
  t.same(meta.funnel.find((f) => f.stage === 'quantization')?.removed, [
    { provider: 'kappa', reason: 'quantization fp16 not allowed' },
  ]);

  // Workspace reasons are named as the workspace's.
  res = await r.chat({ provider: { only: ['mu'] } }, { key: r.keyFor('allowlist') });
  meta = (await gatewayError(t, res, 404, 'no_eligible_provider')).metadata as { model: string; funnel: Stage[] };
  t.same(
    meta.funnel.find((f) => f.stage === 'workspace_policy'),
    {
      stage: 'workspace_policy',
      remaining: 3,
      removed: [
        { provider: 'gemini', reason: 'not in the workspace allowlist' },
        { provider: 'lambda', reason: 'in the workspace ignore list' },
        { provider: 'mu', reason: 'not in the workspace allowlist' },
        { provider: 'nu', reason: 'not in the workspace allowlist' },
      ],
    },
  );
  t.same(meta.funnel.find((f) => f.stage === 'request_providers')?.remaining, 0);

  // The endpoint stage: kappa/pricey is registered for chat completions only.
  res = await r.s.post(
    '/v1/messages',
    { model: 'acme/pricey', max_tokens: 5, messages: USER, provider: { only: ['kappa'] } },
    { key: r.key },
  );
  meta = (await gatewayError(t, res, 404, 'no_eligible_provider')).metadata as { model: string; funnel: Stage[] };
  t.same(meta.funnel.slice(0, 2), [
    { stage: 'model', remaining: 2, removed: [], providers: ['aws', 'kappa'] },
    {
      stage: 'endpoint',
      remaining: 1,
      removed: [{ provider: 'kappa', reason: 'not registered for the messages endpoint' }],
    },
  ]);

  // With fallback models, every model's funnel.
  res = await r.chat({ models: ['acme/nokey'], provider: { only: ['nu'], zdr: true } });
  err = await gatewayError(t, res, 404, 'no_eligible_provider');
  t.match(err.message, /acme\/multi.*acme\/nokey/);
  const withFallbacks = err.metadata as {
    model: string;
    funnel: Stage[];
    fallbacks: { model: string; funnel: Stage[] }[];
  };
  t.equal(withFallbacks.fallbacks.length, 1);
  t.equal(withFallbacks.fallbacks[0]?.model, 'acme/nokey');
  t.same(
    withFallbacks.fallbacks[0]?.funnel.find((f) => f.stage === 'available'),
    {
      stage: 'available',
      remaining: 0,
      removed: [{ provider: 'lambda', reason: 'no sealed upstream credential' }],
    },
  );
  nothingCalledNothingHeld(t, r.s);
});

t.test('a model with no candidate at all: 404 no_eligible_provider, no provider called', async (t) => {
  const r = await routingStack(t);
  for (const body of [
    { model: 'acme/nokey' },
    { model: 'acme/nokey', stream: true },
    { model: undefined, models: ['acme/nokey'] },
  ]) {
    const res = await r.chat(body);
    const err = await gatewayError(t, res, 404, 'no_eligible_provider');
    const meta = err.metadata as { model: string; funnel: Stage[] };
    t.equal(meta.model, 'acme/nokey');
    t.same(meta.funnel.find((f) => f.stage === 'available')?.removed, [
      { provider: 'lambda', reason: 'no sealed upstream credential' },
    ]);
  }
  // The catalog shares the rule: the endpoints view lists nobody for it, and the same seven for acme/multi.
  const none = (await (await fetch(`${r.s.url}/v1/models/acme/nokey/endpoints`)).json()) as {
    data: { endpoints: unknown[] };
  };
  t.same(none.data.endpoints, []);
  const multi = (await (await fetch(`${r.s.url}/v1/models/acme/multi/endpoints`)).json()) as {
    data: { endpoints: { provider: string }[] };
  };
  t.same(multi.data.endpoints.map((e) => e.provider).sort(), ['aws', 'gcp', 'gemini', 'kappa', 'lambda', 'mu', 'nu']);
  nothingCalledNothingHeld(t, r.s);
});

t.test('an unsealed credential removes the provider from the candidate set and the catalog alike', async (t) => {
  const r = await routingStack(t, { seal: (c) => !c.endsWith('-unsealed-key') && c !== 'aws-1' });
  // Resources without an explicit credential use their id as the credential name.
  const multi = (await (await fetch(`${r.s.url}/v1/models/acme/multi/endpoints`)).json()) as {
    data: { endpoints: { provider: string }[] };
  };
  const catalog = multi.data.endpoints.map((e) => e.provider).sort();
  t.same(await tried(r, { provider: { order: ['aws'] } }), [
    'multi-gcp',
    'multi-gemini',
    'multi-kappa',
    'multi-lambda',
    'multi-mu',
  ]);
  const res = await r.chat({ provider: { only: ['aws'] } });
  const meta = (await gatewayError(t, res, 404, 'no_eligible_provider')).metadata as { model: string; funnel: Stage[] };
  const available = meta.funnel.find((f) => f.stage === 'available');
  t.same(available?.removed, [{ provider: 'aws', reason: 'no sealed upstream credential' }]);
  t.notOk(catalog.includes('aws'), 'the catalog does not list aws either');
});

t.test('the served response names the provider by platform id whatever name the request used', async (t) => {
  const r = await routingStack(t);
  const res = await r.s.post(
    CHAT,
    { model: 'acme/multi', messages: USER, provider: { only: ['Google-Vertex'] } },
    { key: r.key },
  );
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-pi-provider'), 'gcp');
  t.equal(res.headers.get('x-pi-model'), 'acme/multi');
  t.equal(((await res.json()) as { model: string }).model, 'acme/multi');
});

t.test('preferences apply on every inference endpoint', async (t: Test) => {
  const r = await routingStack(t);
  let res = await r.s.post(
    '/v1/messages',
    { model: 'acme/multi', max_tokens: 5, messages: USER, provider: { order: ['nu'], sort: 'price' } },
    { key: r.key },
  );
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-pi-provider'), 'nu');
  await res.text();
  res = await r.s.post(
    '/v1/responses',
    { model: 'acme/multi', input: 'x', provider: { sort: 'price' } },
    { key: r.key },
  );
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-pi-provider'), 'lambda');
  await res.text();
  t.same(upstreams(r.s), ['multi-nu', 'multi-lambda']);
  t.notOk('provider' in (r.s.sim.requests[0]!.body as Record<string, unknown>), 'provider is not forwarded');
});

t.test('sort: price ranks a channel above list at its own price', async (t) => {
  const r = await routingStack(t);
  const regional = { model: 'acme/regional' };
  t.same(await tried(r, regional), ['regional-gcp', 'regional-kappa', 'regional-aws'], 'without sort: by weight');
  // Unit prices (input + output): aws 0.000018 (list), gcp 0.0000198 (+10 %), kappa 0.0000205. At list
  // prices all three would tie and weight would put gcp first.
  t.same(
    await tried(r, { ...regional, provider: { sort: 'price' } }),
    ['regional-aws', 'regional-gcp', 'regional-kappa'],
    'cheapest channel first',
  );
  t.same(
    await tried(r, { ...regional, provider: { sort: { by: 'price' }, only: ['gcp', 'kappa'] } }),
    ['regional-gcp', 'regional-kappa'],
    'the dearer channels in their own order',
  );
});
