// Attempt order: order tiers, price sort on effective channel prices, weighted random shares
// (statistical bound), weight 0 last, down deployments last in their tier, the session pin first.
import t from 'tap';
import type { CompiledDeployment } from '../../src/config/compiled.ts';
import { orderDeployments } from '../../src/routing/order.ts';
import { type EffectivePolicy, mergePreferences, parseProviderPreferences } from '../../src/routing/preferences.ts';
import { type HealthView, declaredHealth } from '../../src/availability/serving.ts';
import { NOW, buildIndex, deployment, model, platform, prices, routing, seeded } from './fixtures.ts';

const platforms = ['p1', 'p2', 'p3', 'p4'].map((id) => platform(id));
const m = model('acme/chat', { listPricing: prices(2n, 8n) });

function world(deps: CompiledDeployment[]) {
  const index = buildIndex({ models: [m], platforms, deployments: deps });
  return { index, deployments: index.deploymentsOf('acme/chat') as CompiledDeployment[] };
}

function policy(over: Partial<EffectivePolicy> = {}): EffectivePolicy {
  return { ...mergePreferences(routing(), null), ...over };
}

const downSet = (ids: string[]): HealthView => ({ isDown: (d) => d.status === 'down' || ids.includes(d.id) });

const order = (
  w: ReturnType<typeof world>,
  p: EffectivePolicy,
  opts: { health?: HealthView; random?: () => number; pinned?: string | null; nowMs?: number } = {},
) =>
  orderDeployments({
    deployments: w.deployments,
    policy: p,
    index: w.index,
    health: opts.health ?? declaredHealth,
    nowMs: opts.nowMs ?? NOW,
    random: opts.random ?? seeded(1),
    pinned: opts.pinned ?? null,
  }).map((d) => d.id);

t.test('order tiers: listed platforms first in list order, unlisted follow', async (t) => {
  const w = world([
    deployment('a1', 'acme/chat', 'p1'),
    deployment('a2', 'acme/chat', 'p1'),
    deployment('b1', 'acme/chat', 'p2'),
    deployment('c1', 'acme/chat', 'p3'),
    deployment('d1', 'acme/chat', 'p4'),
  ]);
  for (let seed = 1; seed <= 50; seed++) {
    const got = order(w, policy({ order: ['p3', 'p1'] }), { random: seeded(seed) });
    t.equal(got[0], 'c1');
    t.same(new Set(got.slice(1, 3)), new Set(['a1', 'a2']));
    t.same(new Set(got.slice(3)), new Set(['b1', 'd1']), 'unlisted p2 and p4 share the last tier');
  }
  t.same(
    order(w, policy({ order: ['p4', 'p2', 'p4'], sort: 'price' })),
    ['d1', 'b1', 'a1', 'a2', 'c1'],
    'duplicate entries keep their first position',
  );
  t.same(
    order(w, policy({ order: ['nope'], sort: 'price' })),
    ['a1', 'a2', 'b1', 'c1', 'd1'],
    'a listed platform without deployments changes nothing',
  );
});

t.test('sort price: effective channel price now, ties by weight then id', async (t) => {
  const endsAt = new Date(NOW + 60_000).toISOString();
  const w = world([
    deployment('list-w50', 'acme/chat', 'p1', { weight: 50 }),
    deployment('list-w90', 'acme/chat', 'p1', { weight: 90 }),
    deployment('list-w90b', 'acme/chat', 'p2', { weight: 90 }),
    deployment('disc20', 'acme/chat', 'p2', { weight: 1, pricing: { kind: 'discount', percent: 20, endsAt } }),
    deployment('chan', 'acme/chat', 'p3', {
      weight: 1,
      pricing: { kind: 'channel', prices: prices(1n, 1n), endsAt: null },
    }),
    deployment('disc-over', 'acme/chat', 'p4', {
      pricing: { kind: 'discount', percent: 50, endsAt: new Date(NOW).toISOString() },
    }),
  ]);
  // prompt + completion: list 10, disc20 8, chan 2, disc-over has ended (exclusive end) → 10.
  t.same(order(w, policy({ sort: 'price' })), ['chan', 'disc20', 'disc-over', 'list-w90', 'list-w90b', 'list-w50']);
  t.same(
    order(w, policy({ sort: 'price' }), { nowMs: NOW + 60_000 }),
    ['chan', 'disc-over', 'list-w90', 'list-w90b', 'list-w50', 'disc20'],
    'once the discount ends it sorts at list price, weight 1 last among equals',
  );
  t.same(
    order(w, policy({ sort: 'price', order: ['p1', 'p2'] })),
    ['list-w90', 'list-w50', 'disc20', 'list-w90b', 'chan', 'disc-over'],
    'price ranks within each tier, never across tiers',
  );
  // The string and object forms of the request's sort give the same policy.
  const a = mergePreferences(routing(), parseProviderPreferences({ sort: 'price' }, w.index));
  const b = mergePreferences(routing(), parseProviderPreferences({ sort: { by: 'price' } }, w.index));
  t.same(order(w, a), order(w, b));
});

t.test('request sort mode replaces the workspace one as a whole', async (t) => {
  const w = world([
    deployment('cheap', 'acme/chat', 'p1', { pricing: { kind: 'discount', percent: 50, endsAt: null } }),
    deployment('dear', 'acme/chat', 'p2'),
  ]);
  const ws = routing({ order: ['p2'], sort: 'price' });
  t.same(order(w, mergePreferences(ws, null)), ['dear', 'cheap'], 'workspace order tiers first');
  t.same(
    order(w, mergePreferences(ws, { sort: 'price' })),
    ['cheap', 'dear'],
    'request sort drops the workspace order',
  );
  const reqOrder = mergePreferences(ws, { order: ['p1'] });
  t.equal(reqOrder.sort, null);
  t.same(order(w, reqOrder), ['cheap', 'dear']);
});

t.test('without sort, weight decides: first-choice shares 70/20/10 over 20,000 draws', async (t) => {
  const w = world([
    deployment('w70', 'acme/chat', 'p1', { weight: 70 }),
    deployment('w20', 'acme/chat', 'p2', { weight: 20 }),
    deployment('w10', 'acme/chat', 'p3', { weight: 10 }),
    deployment('w0', 'acme/chat', 'p4', { weight: 0 }),
  ]);
  const N = 20_000;
  const random = seeded(0xc0ffee);
  const first = new Map<string, number>();
  const secondAfter70 = new Map<string, number>();
  let after70 = 0;
  let zeroNotLast = 0;
  for (let i = 0; i < N; i++) {
    const got = order(w, policy(), { random });
    if (got[3] !== 'w0') zeroNotLast++;
    first.set(got[0] as string, (first.get(got[0] as string) ?? 0) + 1);
    if (got[0] === 'w70') {
      after70++;
      secondAfter70.set(got[1] as string, (secondAfter70.get(got[1] as string) ?? 0) + 1);
    }
  }
  // Bound: each count is Binomial(n, p); |observed − n·p| ≤ 4.5·sqrt(n·p·(1−p)). A correct sampler
  // fails one check with probability ~7e-6, a biased one (e.g. 2 points off at n = 20,000) fails.
  const within = (count: number, n: number, p: number, label: string) => {
    const sd = Math.sqrt(n * p * (1 - p));
    t.ok(
      Math.abs(count - n * p) <= 4.5 * sd,
      `${label}: observed ${count}, expected ${(n * p).toFixed(0)} ± ${(4.5 * sd).toFixed(0)}`,
    );
  };
  within(first.get('w70') ?? 0, N, 0.7, 'w70 first');
  within(first.get('w20') ?? 0, N, 0.2, 'w20 first');
  within(first.get('w10') ?? 0, N, 0.1, 'w10 first');
  t.equal(zeroNotLast, 0, 'weight 0 is never ahead of a positive weight');
  t.equal(first.get('w0') ?? 0, 0);
  // Without replacement: after w70, the second place is again proportional among the rest (2:1).
  within(secondAfter70.get('w20') ?? 0, after70, 2 / 3, 'w20 second given w70 first');
});

t.test('weight 0: after all positive weights, by id; first only when nothing else exists', async (t) => {
  const w = world([
    deployment('z-b', 'acme/chat', 'p1', { weight: 0 }),
    deployment('z-a', 'acme/chat', 'p2', { weight: 0 }),
    deployment('pos', 'acme/chat', 'p3', { weight: 1 }),
  ]);
  for (let seed = 1; seed <= 20; seed++) t.same(order(w, policy(), { random: seeded(seed) }), ['pos', 'z-a', 'z-b']);
  const zeros = world([
    deployment('z-b', 'acme/chat', 'p1', { weight: 0 }),
    deployment('z-a', 'acme/chat', 'p2', { weight: 0 }),
  ]);
  t.same(order(zeros, policy()), ['z-a', 'z-b']);
  t.same(order(w, policy({ order: ['p1'] })), ['z-b', 'pos', 'z-a'], 'tiers come before weight');
});

t.test('a random source at its extremes stays well-defined', async (t) => {
  const w = world([
    deployment('a', 'acme/chat', 'p1', { weight: 1 }),
    deployment('b', 'acme/chat', 'p2', { weight: 1000 }),
  ]);
  t.same(order(w, policy(), { random: () => 0 }), ['a', 'b'], 'u = 0 everywhere: ties by id');
  t.same(new Set(order(w, policy(), { random: () => 0.999999 })), new Set(['a', 'b']));
});

t.test('down deployments go after the healthy ones of their tier, keeping their order', async (t) => {
  const w = world([
    deployment('a-cheap', 'acme/chat', 'p1', { pricing: { kind: 'discount', percent: 50, endsAt: null } }),
    deployment('a-mid', 'acme/chat', 'p1', {
      pricing: { kind: 'discount', percent: 20, endsAt: null },
      status: 'down',
    }),
    deployment('a-dear', 'acme/chat', 'p1'),
    deployment('b-cheap', 'acme/chat', 'p2', { pricing: { kind: 'discount', percent: 60, endsAt: null } }),
    deployment('b-dear', 'acme/chat', 'p2'),
  ]);
  const p = policy({ sort: 'price', order: ['p1'] });
  t.same(order(w, p), ['a-cheap', 'a-dear', 'a-mid', 'b-cheap', 'b-dear'], 'declared down');
  t.same(
    order(w, p, { health: downSet(['a-cheap', 'b-cheap']) }),
    ['a-dear', 'a-cheap', 'a-mid', 'b-dear', 'b-cheap'],
    'tracker down: last in its own tier, still ahead of the next tier',
  );
  // Without sort, a down deployment is never first while a healthy one exists in its tier.
  const r = world([
    deployment('x', 'acme/chat', 'p1', { weight: 1000 }),
    deployment('y', 'acme/chat', 'p2', { weight: 1 }),
  ]);
  for (let seed = 1; seed <= 30; seed++)
    t.same(order(r, policy(), { random: seeded(seed), health: downSet(['x']) }), ['y', 'x']);
});

t.test('isDown is asked exactly once per deployment', async (t) => {
  const w = world([
    deployment('a', 'acme/chat', 'p1'),
    deployment('b', 'acme/chat', 'p2'),
    deployment('c', 'acme/chat', 'p3'),
  ]);
  const asked = new Map<string, number>();
  const health: HealthView = {
    isDown: (d) => {
      asked.set(d.id, (asked.get(d.id) ?? 0) + 1);
      return false;
    },
  };
  order(w, policy(), { health, pinned: 'b' });
  t.same(Object.fromEntries(asked), { a: 1, b: 1, c: 1 });
});

t.test('session pin goes first while present and not down', async (t) => {
  const w = world([
    deployment('a', 'acme/chat', 'p1'),
    deployment('b', 'acme/chat', 'p2'),
    deployment('c', 'acme/chat', 'p3'),
  ]);
  const p = policy({ sort: 'price', order: ['p1'] });
  t.same(order(w, p), ['a', 'b', 'c']);
  t.same(order(w, p, { pinned: 'c' }), ['c', 'a', 'b'], 'ahead of every tier');
  t.same(order(w, p, { pinned: 'a' }), ['a', 'b', 'c']);
  t.same(order(w, p, { pinned: 'c', health: downSet(['c']) }), ['a', 'b', 'c'], 'a down pin is not put first');
  t.same(order(w, p, { pinned: 'gone' }), ['a', 'b', 'c'], 'a pin that is not eligible is ignored');
});
