// `models` (fallback models) through a real gateway: tried in order once every deployment of the
// current model failed before its first byte, the response (body model, X-Pi-Model, X-Pi-Provider)
// naming what answered, the request rules (duplicates, no `model`, unknown entries, more than 3),
// the 5-attempt cap across models, and the wallet hold sized for the priciest reachable model.
import t from 'tap';
import { parseSse } from '../../helpers/inference.ts';
import {
  CHAT,
  USER,
  gatewayError,
  lastLog,
  nothingCalledNothingHeld,
  routingStack,
  upstreams,
} from './routing-helpers.ts';

/** The hold the gateway takes: prompt bound = body bytes, output bound = max_tokens; nano-USD per token below. */
function holdNano(body: Record<string, unknown>, inNano: bigint, outNano: bigint): bigint {
  return BigInt(Buffer.byteLength(JSON.stringify(body))) * inNano + BigInt(body['max_tokens'] as number) * outNano;
}
// acme/multi: list 0.00001 in, 0.00002 out (its priciest channel is at list); acme/pricey: 0.0001, 0.0003.
const MULTI_IN = 10_000n;
const MULTI_OUT = 20_000n;
const PRICEY_IN = 100_000n;
const PRICEY_OUT = 300_000n;

t.test('the fallback answers: body model, X-Pi-Model, X-Pi-Provider and the log name it', async (t) => {
  for (const stream of [false, true]) {
    const r = await routingStack(t);
    r.s.sim.script('multi-aws', { status: 500 }, 1);
    r.s.sim.script('third-aws', { reset: 'before_head' }, 1);
    const res = await r.chat({ stream, models: ['acme/third', 'acme/fourth'], provider: { only: ['aws'] } });
    t.equal(res.status, 200);
    t.equal(res.headers.get('x-pi-model'), 'acme/fourth');
    t.equal(res.headers.get('x-pi-provider'), 'aws');
    t.equal(res.headers.get('x-pi-upstream-model'), 'fourth-aws');
    const text = await res.text();
    if (stream) {
      const chunks = parseSse(text).filter((e) => e.data.startsWith('{'));
      t.ok(chunks.length > 2);
      t.ok(
        chunks.every((e) => (JSON.parse(e.data) as { model: string }).model === 'acme/fourth'),
        'every chunk carries the fallback slug',
      );
    } else {
      t.equal((JSON.parse(text) as { model: string }).model, 'acme/fourth');
    }
    t.same(upstreams(r.s), ['multi-aws', 'third-aws', 'fourth-aws']);
    t.notOk('models' in (r.s.sim.requests[2]!.body as Record<string, unknown>), 'models is not forwarded');
    const row = lastLog(r.s);
    t.equal(row.model_requested, 'acme/multi');
    t.equal(row.model_served, 'acme/fourth');
    t.same(
      row.attempts_json.map((a) => [a.model, a.deployment, a.outcome]),
      [
        ['acme/multi', 'aws/multi', 'status_500'],
        ['acme/third', 'aws/third', 'reset'],
        ['acme/fourth', 'aws/fourth', 'ok'],
      ],
    );
    // Billed at the model that answered.
    t.same(
      r.s.store.wallets.usage('open').map((u) => [u.model, u.provider, u.requests]),
      [['acme/fourth', 'aws', 1]],
    );
  }
});

t.test('a fallback is tried only after every deployment of the current model failed', async (t) => {
  const r = await routingStack(t);
  const res = await r.chat({
    models: ['acme/pricey'],
    provider: { only: ['aws', 'gcp', 'kappa'] },
    sim: {
      by_model: {
        'multi-aws': { status: 502 },
        'multi-gcp': { status: 503 },
        'multi-kappa': { status: 429 },
        'multi-kappa-down': { status: 500 },
      },
    },
  });
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-pi-model'), 'acme/pricey');
  t.equal(res.headers.get('x-pi-provider'), 'aws');
  await res.text();
  t.same(upstreams(r.s), ['multi-aws', 'multi-gcp', 'multi-kappa', 'multi-kappa-down', 'pricey-aws']);
});

t.test('the 5-attempt cap spans models', async (t) => {
  const r = await routingStack(t);
  const res = await r.chat({
    models: ['acme/pricey', 'acme/third'],
    provider: { only: ['aws', 'gcp', 'kappa'] },
    sim: { status: 500 },
  });
  t.equal(res.status, 500);
  t.equal(res.headers.get('x-pi-model'), 'acme/pricey', 'the last attempt names its model');
  t.equal(res.headers.get('x-pi-provider'), 'aws');
  await res.text();
  t.same(
    upstreams(r.s),
    ['multi-aws', 'multi-gcp', 'multi-kappa', 'multi-kappa-down', 'pricey-aws'],
    'kappa/pricey and acme/third never called',
  );
  t.equal(lastLog(r.s).attempts, 5);
});

t.test('request rules of models', async (t) => {
  const r = await routingStack(t);
  const fail = {
    by_model: { 'multi-aws': { status: 500 }, 'third-aws': { status: 500 }, 'fourth-aws': { status: 500 } },
  };

  // Entries repeating model or an earlier entry are dropped.
  let res = await r.chat({
    models: ['acme/multi', 'acme/third', 'acme/third'],
    provider: { only: ['aws'] },
    sim: fail,
  });
  t.equal(res.status, 500);
  await res.text();
  t.same(upstreams(r.s), ['multi-aws', 'third-aws'], 'each model once');

  // No model: the first entry is the primary.
  r.s.sim.clear();
  res = await r.s.post(CHAT, { models: ['acme/third', 'acme/fourth'], messages: USER }, { key: r.key });
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-pi-model'), 'acme/third');
  t.equal(((await res.json()) as { model: string }).model, 'acme/third');
  r.s.sim.clear();
  r.s.sim.script('third-aws', { status: 503 }, 1);
  res = await r.s.post(CHAT, { models: ['acme/third', 'acme/fourth'], messages: USER }, { key: r.key });
  t.equal(res.headers.get('x-pi-model'), 'acme/fourth');
  await res.text();
  t.same(upstreams(r.s), ['third-aws', 'fourth-aws']);
  t.equal(lastLog(r.s).model_requested, 'acme/third');

  // Exactly 3 is fine.
  r.s.sim.clear();
  res = await r.chat({
    models: ['acme/third', 'acme/fourth', 'acme/fifth'],
    provider: { only: ['aws'] },
    sim: { by_model: { ...fail.by_model } },
  });
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-pi-model'), 'acme/fifth');
  await res.text();

  // Gateway errors: nothing is called, nothing held.
  r.s.sim.clear();
  const before = r.s.store.wallets.show('open', r.s.clock.now());
  for (const models of [
    ['acme/third', 'acme/fourth', 'acme/fifth', 'acme/pricey'],
    ['acme/multi', 'acme/multi', 'acme/multi', 'acme/third'],
  ]) {
    const err = await gatewayError(t, await r.chat({ models }), 422, 'validation_failed');
    t.match(err.message, /models/);
    t.match(err.message, /3/);
  }
  let err = await gatewayError(
    t,
    await r.s.post(
      CHAT,
      { models: ['acme/third', 'acme/fourth', 'acme/fifth', 'acme/pricey'], messages: USER },
      { key: r.key },
    ),
    422,
    'validation_failed',
  );
  t.match(err.message, /models/);
  for (const missing of ['acme/nope', 'third-aws', 'nope']) {
    err = await gatewayError(t, await r.chat({ models: ['acme/third', missing] }), 404, 'model_not_found');
    t.match(err.message, missing, `names ${missing}`);
    t.equal(err.type, 'not_found_error');
  }
  err = await gatewayError(
    t,
    await r.s.post(CHAT, { models: ['acme/nope'], messages: USER }, { key: r.key }),
    404,
    'model_not_found',
  );
  t.match(err.message, 'acme/nope');
  err = await gatewayError(
    t,
    await r.s.post(
      '/v1/messages',
      { model: 'acme/multi', models: ['acme/ghost'], max_tokens: 5, messages: USER },
      { key: r.key },
    ),
    404,
    'model_not_found',
  );
  t.match(err.message, 'acme/ghost');
  nothingCalledNothingHeld(t, r.s);
  t.equal(r.s.store.wallets.show('open', r.s.clock.now()).balance, before.balance);
});

t.test('a primary with no candidate falls through to its fallback; a fallback without one is skipped', async (t) => {
  const r = await routingStack(t);
  let res = await r.chat({ model: 'acme/nokey', models: ['acme/third'] });
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-pi-model'), 'acme/third');
  t.equal(((await res.json()) as { model: string }).model, 'acme/third');
  t.same(upstreams(r.s), ['third-aws']);

  r.s.sim.clear();
  res = await r.chat({
    models: ['acme/third', 'acme/pricey'],
    provider: { only: ['kappa'] },
    sim: { by_model: { 'multi-kappa': { status: 500 }, 'multi-kappa-down': { status: 500 } } },
  });
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-pi-model'), 'acme/pricey');
  t.equal(res.headers.get('x-pi-provider'), 'kappa');
  await res.text();
  t.same(upstreams(r.s), ['multi-kappa', 'multi-kappa-down', 'pricey-kappa'], 'acme/third has no kappa deployment');
});

t.test('a client-fault answer from the primary is returned; no fallback model is tried', async (t) => {
  const r = await routingStack(t);
  r.s.sim.script('multi-aws', { status: 400 }, 1);
  const res = await r.chat({ models: ['acme/third'] });
  t.equal(res.status, 400);
  t.equal(res.headers.get('x-pi-model'), 'acme/multi');
  await res.text();
  t.same(upstreams(r.s), ['multi-aws']);
});

t.test('fallback models on the Messages protocol', async (t) => {
  const r = await routingStack(t);
  r.s.sim.script('multi-aws', { status: 529 }, 2);
  for (const stream of [false, true]) {
    const res = await r.s.post(
      '/v1/messages',
      {
        model: 'acme/multi',
        models: ['acme/pricey'],
        max_tokens: 20,
        messages: USER,
        stream,
        provider: { only: ['aws'] },
      },
      { key: r.key },
    );
    t.equal(res.status, 200);
    t.equal(res.headers.get('x-pi-model'), 'acme/pricey');
    t.equal(res.headers.get('x-pi-upstream-model'), 'pricey-aws');
    const text = await res.text();
    if (stream) {
      const start = parseSse(text).find((e) => e.event === 'message_start');
      t.equal((JSON.parse(start?.data ?? '{}') as { message: { model: string } }).message.model, 'acme/pricey');
    } else {
      t.equal((JSON.parse(text) as { model: string }).model, 'acme/pricey');
    }
  }
  t.same(upstreams(r.s), ['multi-aws', 'pricey-aws', 'multi-aws', 'pricey-aws']);
});

t.test('the hold at admission covers the priciest model the request may reach through models', async (t) => {
  const r = await routingStack(t);
  const ws = 'lean';
  const key = r.s.key(ws);
  const primaryOnly = { model: 'acme/multi', messages: USER, max_tokens: 100 };
  const withFallback = { ...primaryOnly, models: ['acme/pricey'] };
  const enoughForPrimary = holdNano(primaryOnly, MULTI_IN, MULTI_OUT);
  t.ok(holdNano(withFallback, PRICEY_IN, PRICEY_OUT) > enoughForPrimary);
  r.s.store.wallets.credit(ws, enoughForPrimary, 'just enough for acme/multi');

  const res = await r.s.post(CHAT, withFallback, { key });
  const err = await gatewayError(t, res, 402, 'insufficient_balance');
  t.match(err.message, /insufficient balance/);
  nothingCalledNothingHeld(t, r.s, ws);

  const ok = await r.s.post(CHAT, primaryOnly, { key });
  t.equal(ok.status, 200, 'the same wallet admits the primary alone');
  await ok.text();
});

t.test(
  'a failover to a pricier fallback never overdraws: the hold is its worst case, held while in flight',
  async (t) => {
    const r = await routingStack(t);
    const ws = 'lean';
    const key = r.s.key(ws);
    const body = {
      model: 'acme/multi',
      messages: USER,
      max_tokens: 100,
      models: ['acme/pricey'],
      provider: { only: ['aws'] },
    };
    const bytes = Buffer.byteLength(JSON.stringify(body));
    const hold = holdNano(body, PRICEY_IN, PRICEY_OUT);
    r.s.store.wallets.credit(ws, hold, 'exactly the worst case');
    r.s.sim.script('multi-aws', { status: 503 }, 1);
    // The fallback bills every token the hold allowed for: the whole prompt bound and max_tokens.
    r.s.sim.script('pricey-aws', { ttfbMs: 150, usage: { prompt: bytes, completion: 100 } }, 1);

    const pending = r.s.post(CHAT, body, { key });
    let held = 0n;
    for (let i = 0; i < 200 && held === 0n; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      held = r.s.store.wallets.show(ws, r.s.clock.now()).held;
    }
    t.equal(held, hold, 'held while in flight: the worst case of acme/pricey, not of acme/multi');
    const res = await pending;
    t.equal(res.status, 200);
    t.equal(res.headers.get('x-pi-model'), 'acme/pricey');
    await res.text();
    const w = r.s.store.wallets.show(ws, r.s.clock.now());
    t.equal(w.balance, 0n, 'charged exactly the hold; never below zero');
    t.equal(w.held, 0n);
    t.ok(r.s.store.wallets.verify().ok);
  },
);
