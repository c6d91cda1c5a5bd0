// Weighted routing through a real gateway with a seeded random source: among equals, first choices
// are shared in proportion to weight (a statistical bound on hundreds of requests), a down
// deployment never goes first however heavy, and ties are broken by ascending deployment id
// wherever the order is not a draw (constant random, price sort, the catalog).
import t, { type Test } from 'tap';
import { seededRandom } from '../../helpers/prng.ts';
import { routingStack, upstreams, type RoutingStack } from './routing-helpers.ts';

/** First choices of `n` plain requests, counted by upstream model (requests sent 25 at a time). */
async function firstChoices(
  r: RoutingStack,
  n: number,
  body: Record<string, unknown> = {},
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (let done = 0; done < n; done += 25) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(25, n - done) }, async () => {
        const res = await r.chat(body);
        await res.text();
        return res.status === 200 ? (res.headers.get('x-pi-upstream-model') ?? '?') : `status ${res.status}`;
      }),
    );
    for (const m of batch) counts.set(m, (counts.get(m) ?? 0) + 1);
  }
  return counts;
}

/** |observed − n·p| within 4.5 standard deviations of the binomial (plus one for discreteness). */
function withinBound(t: Test, observed: number, n: number, p: number, what: string): void {
  const mean = n * p;
  const bound = 4.5 * Math.sqrt(n * p * (1 - p)) + 1;
  t.ok(
    Math.abs(observed - mean) <= bound,
    `${what}: ${observed} of ${n}, expected ${mean.toFixed(1)} ± ${bound.toFixed(1)}`,
  );
}

t.test(
  'first choices are shared in proportion to weight; the declared-down heavyweight never goes first',
  async (t) => {
    const r = await routingStack(t, { random: seededRandom(20260115) });
    const n = 800;
    const counts = await firstChoices(r, n);
    const weights: Record<string, number> = {
      'multi-aws': 70,
      'multi-gcp': 60,
      'multi-gemini': 50,
      'multi-kappa': 40,
      'multi-lambda': 30,
      'multi-mu': 20,
      'multi-mu-a': 20,
      'multi-nu': 10,
    };
    const total = Object.values(weights).reduce((a, b) => a + b, 0);
    for (const [m, w] of Object.entries(weights)) withinBound(t, counts.get(m) ?? 0, n, w / total, m);
    t.equal(counts.get('multi-kappa-down') ?? 0, 0, 'kappa/multi-down (weight 1000, declared down) never first');
    t.same(
      [...counts.keys()].filter((k) => !(k in weights)),
      [],
      'nothing else answered',
    );
    t.equal(r.s.sim.requests.length, n, 'one attempt per request');
    // The heavier one wins more often than the lighter one, pairwise along the weight order.
    const order = Object.keys(weights).filter((m) => m !== 'multi-mu-a');
    for (let i = 1; i < order.length; i++) {
      t.ok(
        (counts.get(order[i - 1] as string) ?? 0) > (counts.get(order[i] as string) ?? 0),
        `${order[i - 1]} > ${order[i]}`,
      );
    }
  },
);

t.test('within an order tier the weighted draw applies among that tier only', async (t) => {
  const r = await routingStack(t, { random: seededRandom(99) });
  const n = 300;
  const counts = await firstChoices(r, n, { provider: { order: ['mu', 'nu'] } });
  withinBound(t, counts.get('multi-mu') ?? 0, n, 0.5, 'mu/multi (20 of 40)');
  withinBound(t, counts.get('multi-mu-a') ?? 0, n, 0.5, 'mu/multi-a (20 of 40)');
  t.equal(
    (counts.get('multi-mu') ?? 0) + (counts.get('multi-mu-a') ?? 0),
    n,
    'nothing outside the first tier went first',
  );

  const counts2 = await firstChoices(r, n, { provider: { only: ['aws', 'nu'] } });
  withinBound(t, counts2.get('multi-aws') ?? 0, n, 70 / 80, 'aws (70 of 80)');
  withinBound(t, counts2.get('multi-nu') ?? 0, n, 10 / 80, 'nu (10 of 80)');
});

t.test('the whole attempt order is a weighted draw too: second choices follow the weights of the rest', async (t) => {
  // aws always fails before its first byte: the second choice among gcp (60), gemini (50), nu (10).
  const r = await routingStack(t, { random: seededRandom(5) });
  const n = 240;
  const seconds = new Map<string, number>();
  for (let done = 0; done < n; done += 20) {
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        const res = await r.chat({
          provider: { only: ['aws', 'gcp', 'gemini', 'nu'], order: ['aws'] },
          sim: { by_model: { 'multi-aws': { status: 409 } } },
        });
        await res.text();
        const m = res.headers.get('x-pi-upstream-model') ?? '?';
        seconds.set(m, (seconds.get(m) ?? 0) + 1);
      }),
    );
  }
  withinBound(t, seconds.get('multi-gcp') ?? 0, n, 60 / 120, 'gcp');
  withinBound(t, seconds.get('multi-gemini') ?? 0, n, 50 / 120, 'gemini');
  withinBound(t, seconds.get('multi-nu') ?? 0, n, 10 / 120, 'nu');
  t.equal(upstreams(r.s).filter((m) => m === 'multi-aws').length, n, 'aws first every time (its own tier)');
});

t.test('ties are broken by ascending deployment id wherever the order is not a draw', async (t) => {
  const r = await routingStack(t);
  const tried = async (provider: Record<string, unknown>): Promise<string[]> => {
    const from = r.s.sim.requests.length;
    const res = await r.chat({ provider, sim: { status: 409 } });
    await res.text();
    return upstreams(r.s).slice(from);
  };
  t.same(await tried({ only: ['mu'] }), ['multi-mu', 'multi-mu-a'], 'equal weights, no draw (constant random)');
  t.same(await tried({ only: ['mu'], sort: 'price' }), ['multi-mu', 'multi-mu-a'], 'equal price and weight');
  const view = (await (await fetch(`${r.s.url}/v1/models/acme/multi/endpoints`)).json()) as {
    data: { endpoints: { provider: string; quantization: string | null }[] };
  };
  t.equal(view.data.endpoints.find((e) => e.provider === 'mu')?.quantization, 'fp4', 'catalog entry: mu/multi');
});
