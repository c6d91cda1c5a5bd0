// Table tests for admission hold sizing: the worst price across brackets and candidate price
// lists, per-request and per-image fees, rounding up, and the body-bytes prompt bound.
import t from 'tap';
import { promptTokenBound, worstCaseHoldNano } from '../../src/billing/hold.ts';
import { priceList } from './fixtures.ts';

const cheap = priceList({ prompt: '0.000001', completion: '0.000002' });
const tiered = priceList(
  { prompt: '0.000003', completion: '0.000015', input_cache_write_1h: '0.000006', internal_reasoning: '0.00002' },
  [[200_000, { prompt: '0.000006', completion: '0.0000225' }]],
);
const fees = priceList(
  { prompt: '0.000001', completion: '0.000001', request: '0.002', image: '0.01', audio_output: '0.00008' },
  [[1000, { request: '0.003' }]],
);

const cases: [string, { given: Parameters<typeof worstCaseHoldNano>[0]; want: bigint }][] = [
  [
    'no price list → nothing to hold',
    { given: { pricings: [], promptTokenBound: 1000, completionTokenBound: 1000 }, want: 0n },
  ],
  // 1000 × 1e-6 + 500 × 2e-6 = 0.002 USD
  [
    'single text list',
    { given: { pricings: [cheap], promptTokenBound: 1000, completionTokenBound: 500 }, want: 2_000_000n },
  ],
  // input max = 6e-6 (bracket prompt, tied with the base 1h write); output max = 2.25e-5 (bracket
  // completion, above the base reasoning 2e-5): 1000 × 6e-6 + 100 × 2.25e-5 = 0.006 + 0.00225
  [
    'highest class in any bracket',
    { given: { pricings: [tiered], promptTokenBound: 1000, completionTokenBound: 100 }, want: 8_250_000n },
  ],
  [
    'max over candidate lists',
    { given: { pricings: [cheap, tiered], promptTokenBound: 1000, completionTokenBound: 100 }, want: 8_250_000n },
  ],
  // 10 × 1e-6 + 10 × 8e-5 + 0.003 (bracket request fee) + 2 × 0.01
  [
    'request fee (highest bracket) and images',
    { given: { pricings: [fees], promptTokenBound: 10, completionTokenBound: 10, inputImages: 2 }, want: 23_810_000n },
  ],
  // 1 token × 1e-12 USD = 0.001 nano → rounds UP to 1 nano
  [
    'rounded up to a whole nano',
    {
      given: {
        pricings: [priceList({ prompt: '0.000000000001', completion: '0' })],
        promptTokenBound: 1,
        completionTokenBound: 0,
      },
      want: 1n,
    },
  ],
];

t.test('worstCaseHoldNano table', async (t) => {
  for (const [name, { given, want }] of cases) t.equal(worstCaseHoldNano(given), want, name);
});

t.test('bad bounds are a caller bug', async (t) => {
  t.throws(() => worstCaseHoldNano({ pricings: [cheap], promptTokenBound: -1, completionTokenBound: 0 }), RangeError);
  t.throws(() => worstCaseHoldNano({ pricings: [cheap], promptTokenBound: 1, completionTokenBound: 0.5 }), RangeError);
});

t.test('promptTokenBound: one token per body byte', async (t) => {
  t.equal(promptTokenBound(0), 0);
  t.equal(promptTokenBound(12_345), 12_345);
  t.throws(() => promptTokenBound(-1), RangeError);
  t.throws(() => promptTokenBound(Number.NaN), RangeError);
});
