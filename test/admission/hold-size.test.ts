// Sizing a request's hold over its route plan: the most expensive of every model and deployment it
// may reach, each model with its own output bound, at the price in force (discounts that ended no
// longer lower it).
import t from 'tap';
import { requestHoldNano } from '../../src/admission/hold-size.ts';
import { deployment, model, NOW, prices } from '../routing/fixtures.ts';

const small = model('acme/small', { listPricing: prices(1n, 2n) }); // $1 / $2 per million tokens
const big = model('acme/big', { listPricing: prices(10n, 30n) });
const bounds = { promptTokens: 1000, outputTokens: (m: { id: string }) => (m.id === 'acme/big' ? 100 : 4000) };

t.test('the worst case over every model and deployment of the plan', async (t) => {
  t.equal(requestHoldNano([], bounds, NOW), 0n, 'nothing reachable: nothing held');
  // small: 1000 × 1e-6 + 4000 × 2e-6 = $0.009; big: 1000 × 1e-5 + 100 × 3e-5 = $0.013
  const smallOnly = [{ model: small, deployments: [deployment('p1/small', small.id, 'p1')] }];
  t.equal(requestHoldNano(smallOnly, bounds, NOW), 9_000_000n);
  const withFallback = [...smallOnly, { model: big, deployments: [deployment('p1/big', big.id, 'p1')] }];
  t.equal(requestHoldNano(withFallback, bounds, NOW), 13_000_000n, 'a fallback model costs more');
  const dearChannel = [
    {
      model: small,
      deployments: [
        deployment('p1/small', small.id, 'p1'),
        deployment('p2/small', small.id, 'p2', { pricing: { kind: 'channel', prices: prices(2n, 4n), endsAt: null } }),
      ],
    },
  ];
  t.equal(requestHoldNano(dearChannel, bounds, NOW), 18_000_000n, 'the dearest deployment of a model');
});

t.test('a discount that ended no longer lowers the hold', async (t) => {
  const ends = new Date(NOW + 60_000).toISOString();
  const plan = [
    {
      model: small,
      deployments: [
        deployment('p1/small', small.id, 'p1', { pricing: { kind: 'discount', percent: 50, endsAt: ends } }),
      ],
    },
  ];
  t.equal(requestHoldNano(plan, bounds, NOW), 4_500_000n, 'half price while the discount runs');
  t.equal(requestHoldNano(plan, bounds, NOW + 120_000), 9_000_000n, 'list price after it ended');
});
