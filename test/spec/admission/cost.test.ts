// Exact cost over HTTP: for a usage the simulator reports (`sim.usage`), the settled amount, the
// wallet's fall, the request log's cost and the ledger details all equal the price arithmetic —
// cached tokens at input_cache_read, reasoning at internal_reasoning, the bracket above 1000 prompt
// tokens on acme/bracketed, beta's 25% discount until 2026-02-01 (exclusive) and list price after.
// The reasoner's internal_reasoning price is raised in a patched copy of the gateway fixture, where
// it equals the completion price and so could not show which class was billed.
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { logRow, patchedFixture, spyWallet, USER, type WalletSpy } from '../../helpers/admission.ts';

interface Usage {
  prompt: number;
  completion: number;
  cached?: number;
  reasoning?: number;
  cacheWrite?: number;
}

interface Case {
  label: string;
  path: string;
  body: Record<string, unknown>;
  usage: Usage;
  /** Nano-USD, worked out by hand from the fixture prices. */
  cost: bigint;
  details?: Record<string, unknown>;
}

const chat = (model: string, provider: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: USER,
  provider: { only: [provider] },
  ...extra,
});

async function runCase(t: Test, s: Stack, w: WalletSpy, key: string, c: Case): Promise<void> {
  for (const stream of [false, true]) {
    const label = `${c.label}${stream ? ' (stream)' : ''}`;
    const before = s.store.wallets.show('open', s.clock.now()).balance;
    const res = await s.post(c.path, { ...c.body, stream, sim: { usage: c.usage } }, { key });
    await res.arrayBuffer();
    t.equal(res.status, 200, `${label}: 200`);
    const trace = res.headers.get('x-pi-trace-id') as string;
    const row = await logRow(s, trace);
    const settled = w.settles.get(trace) ?? [];
    t.equal(settled.length, 1, `${label}: settled once`);
    t.equal(settled[0]?.cost, c.cost, `${label}: settled cost`);
    t.equal(
      before - s.store.wallets.show('open', s.clock.now()).balance,
      c.cost,
      `${label}: the wallet fell by exactly that`,
    );
    t.equal(row?.cost_nano, c.cost, `${label}: request log cost`);
    t.equal(settled[0]?.details['estimated'], undefined, `${label}: not an estimate`);
    for (const [k, v] of Object.entries(c.details ?? {}))
      t.equal(settled[0]?.details[k], v, `${label}: ledger details.${k}`);
  }
}

t.test('exact cost from reported usage', async (t) => {
  const config = patchedFixture(t, 'gateway', {
    'models/acme.yaml': [['internal_reasoning: "0.000008"', 'internal_reasoning: "0.000016"']],
  });
  const s = await startStack(t, { config });
  const key = s.key('open');
  s.credit('open', '100');
  const w = spyWallet(s);
  const cases: Case[] = [
    {
      label: 'chat-small on alpha, plain',
      path: '/v1/chat/completions',
      body: chat('acme/chat-small', 'alpha'),
      usage: { prompt: 1000, completion: 500 },
      cost: 1000n * 1000n + 500n * 2000n,
      details: { promptTokens: 1000, completionTokens: 500, provider: 'alpha', model: 'acme/chat-small' },
    },
    {
      label: 'cached prompt tokens at input_cache_read',
      path: '/v1/chat/completions',
      body: chat('acme/chat-small', 'alpha'),
      usage: { prompt: 1000, completion: 500, cached: 200 },
      cost: 800n * 1000n + 200n * 500n + 500n * 2000n,
      details: { cachedTokens: 200 },
    },
    {
      label: 'responses: cached tokens too',
      path: '/v1/responses',
      body: { model: 'acme/chat-small', input: 'hi', provider: { only: ['alpha'] } },
      usage: { prompt: 1000, completion: 500, cached: 200 },
      cost: 800n * 1000n + 200n * 500n + 500n * 2000n,
    },
    {
      label: 'gamma channel price list (cache read 0.00000025)',
      path: '/v1/chat/completions',
      body: chat('acme/chat-small', 'gamma'),
      usage: { prompt: 1000, completion: 500, cached: 200 },
      cost: 800n * 500n + 200n * 250n + 500n * 1000n,
    },
    {
      label: 'reasoning tokens at internal_reasoning (0.000016), the rest at completion (0.000008)',
      path: '/v1/chat/completions',
      body: chat('acme/reasoner', 'alpha'),
      usage: { prompt: 100, completion: 300, reasoning: 200 },
      cost: 100n * 2000n + 100n * 8000n + 200n * 16_000n,
      details: { reasoningTokens: 200, completionTokens: 300 },
    },
    {
      label: 'responses: reasoning at internal_reasoning',
      path: '/v1/responses',
      body: { model: 'acme/reasoner', input: 'x', provider: { only: ['alpha'] } },
      usage: { prompt: 100, completion: 300, reasoning: 200 },
      cost: 100n * 2000n + 100n * 8000n + 200n * 16_000n,
    },
    {
      label: 'bracketed, 999 prompt tokens: base prices',
      path: '/v1/chat/completions',
      body: chat('acme/bracketed', 'alpha'),
      usage: { prompt: 999, completion: 10 },
      cost: 999n * 1000n + 10n * 4000n,
    },
    {
      label: 'bracketed, exactly 1000 prompt tokens: the bracket',
      path: '/v1/chat/completions',
      body: chat('acme/bracketed', 'alpha'),
      usage: { prompt: 1000, completion: 10 },
      cost: 1000n * 2000n + 10n * 8000n,
      details: { bracket: 1000 },
    },
    {
      label: 'bracketed, 1500 prompt tokens with 500 cached: the bracket; cache read keeps its base price',
      path: '/v1/chat/completions',
      body: chat('acme/bracketed', 'alpha', { messages: [{ role: 'user', content: 'x'.repeat(1500) }] }),
      usage: { prompt: 1500, completion: 100, cached: 500 },
      cost: 1000n * 2000n + 500n * 100n + 100n * 8000n,
      details: { bracket: 1000, cachedTokens: 500 },
    },
    {
      label: 'messages on delta: input, cache read and cache write, output',
      path: '/v1/messages',
      body: { model: 'beta-labs/sonnet-ish', max_tokens: 100, messages: USER, provider: { only: ['delta'] } },
      usage: { prompt: 100, completion: 40, cached: 50, cacheWrite: 20 },
      cost: 100n * 3000n + 50n * 300n + 20n * 3750n + 40n * 15_000n,
      details: { promptTokens: 170, cachedTokens: 50 },
    },
  ];
  for (const c of cases) await runCase(t, s, w, key, c);
  t.same(s.store.wallets.verify(), { ok: true, problems: [] });
});

t.test('beta: 25% off while the discount runs, list price from 2026-02-01', async (t) => {
  const clock = new ManualClock('2026-01-15T12:00:00Z');
  const s = await startStack(t, { clock });
  const key = s.key('open');
  s.credit('open', '100');
  const w = spyWallet(s);
  const usage = { prompt: 1000, completion: 500, cached: 200 };
  const list = 800n * 1000n + 200n * 500n + 500n * 2000n;
  const discounted = 800n * 750n + 200n * 375n + 500n * 1500n;
  t.equal(discounted, (list * 75n) / 100n, 'the hand arithmetic is 75% of list');
  await runCase(t, s, w, key, {
    label: 'on 2026-01-15',
    path: '/v1/chat/completions',
    body: chat('acme/chat-small', 'beta'),
    usage,
    cost: discounted,
  });
  clock.set('2026-01-31T23:59:59.999Z');
  await runCase(t, s, w, key, {
    label: 'the last millisecond of the discount',
    path: '/v1/chat/completions',
    body: chat('acme/chat-small', 'beta'),
    usage,
    cost: discounted,
  });
  clock.set('2026-02-01T00:00:00.000Z');
  await runCase(t, s, w, key, {
    label: 'at 2026-02-01T00:00:00Z (ends_at is exclusive)',
    path: '/v1/chat/completions',
    body: chat('acme/chat-small', 'beta'),
    usage,
    cost: list,
  });
  clock.set('2026-06-01T00:00:00.000Z');
  await runCase(t, s, w, key, {
    label: 'months later',
    path: '/v1/chat/completions',
    body: chat('acme/chat-small', 'beta'),
    usage,
    cost: list,
  });
  t.same(s.store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a channel above list bills its own price (routing-http acme/regional)', async (t) => {
  const s = await startStack(t, { config: 'routing-http' });
  const key = s.key('open');
  s.credit('open', '100');
  const w = spyWallet(s);
  const usage = { prompt: 1000, completion: 500, cached: 200 };
  const list = 800n * 3000n + 200n * 300n + 500n * 15_000n;
  const regional = 800n * 3300n + 200n * 330n + 500n * 16_500n;
  t.equal(regional, (list * 110n) / 100n, 'the hand arithmetic is 110% of list');
  await runCase(t, s, w, key, {
    label: 'gcp: 10 % above list',
    path: '/v1/chat/completions',
    body: chat('acme/regional', 'gcp'),
    usage,
    cost: regional,
    details: { provider: 'gcp' },
  });
  await runCase(t, s, w, key, {
    label: 'kappa: cheaper input, dearer output',
    path: '/v1/chat/completions',
    body: chat('acme/regional', 'kappa'),
    usage,
    cost: 800n * 2500n + 200n * 250n + 500n * 18_000n,
  });
  await runCase(t, s, w, key, {
    label: 'aws: list',
    path: '/v1/chat/completions',
    body: chat('acme/regional', 'aws'),
    usage,
    cost: list,
  });
  t.same(s.store.wallets.verify(), { ok: true, problems: [] });
});
