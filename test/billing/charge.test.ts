// Table tests for computeCharge: the input/output splits, fallbacks for unpriced classes,
// clamping, per-unit fees, bracket choice and the single half-up rounding to nano-USD.
import t from 'tap';
import { type ChargeLine, computeCharge } from '../../src/billing/charge.ts';
import type { Usage } from '../../src/billing/usage.ts';
import type { PriceClass } from '../../src/config/compiled.ts';
import { decimalToAtto } from '../../src/money.ts';
import { priceList } from './fixtures.ts';

const atto = decimalToAtto;

/** Lines as [class, units, unit price] for compact expectations. */
function lines(ls: ChargeLine[]): [PriceClass, number, bigint][] {
  return ls.map((l) => [l.priceClass, l.units, l.unitPriceAtto]);
}

const claude = priceList(
  {
    prompt: '0.000003',
    completion: '0.000015',
    input_cache_read: '0.0000003',
    input_cache_write: '0.00000375',
    input_cache_write_1h: '0.000006',
    web_search: '0.01',
  },
  [
    [
      200_000,
      {
        prompt: '0.000006',
        completion: '0.0000225',
        input_cache_read: '0.0000006',
        input_cache_write: '0.0000075',
        input_cache_write_1h: '0.000012',
      },
    ],
  ],
);

const textOnly = priceList({ prompt: '0.000002', completion: '0.000008' });

const everything = priceList({
  prompt: '0.000001',
  completion: '0.000002',
  request: '0.0005',
  image: '0.001',
  image_output: '0.00004',
  audio: '0.00004',
  audio_output: '0.00008',
  input_audio_cache: '0.0000025',
  web_search: '0.025',
  internal_reasoning: '0.000003',
  input_cache_read: '0.0000001',
  input_cache_write: '0.00000125',
  input_cache_write_1h: '0.000002',
  image_token: '0.00001',
});

type Want = { lines: [PriceClass, number, string][]; totalAtto: string; totalNano: bigint; bracket: number | null };
const cases: [string, { given: { usage: Usage; pricing: ReturnType<typeof priceList> }; want: Want }][] = [
  [
    'text only',
    {
      given: { usage: { promptTokens: 1000, completionTokens: 500 }, pricing: textOnly },
      want: {
        lines: [
          ['prompt', 1000, '0.000002'],
          ['completion', 500, '0.000008'],
        ],
        totalAtto: '0.006',
        totalNano: 6_000_000n,
        bracket: null,
      },
    },
  ],
  [
    'Anthropic cache tiers and web search, base bracket',
    {
      given: {
        usage: {
          promptTokens: 10_050,
          completionTokens: 300,
          cacheReadTokens: 0,
          cacheWriteTokens: 4_000,
          cacheWrite1hTokens: 6_000,
          webSearchCalls: 2,
        },
        pricing: claude,
      },
      want: {
        lines: [
          ['prompt', 50, '0.000003'],
          ['completion', 300, '0.000015'],
          ['web_search', 2, '0.01'],
          ['input_cache_write', 4_000, '0.00000375'],
          ['input_cache_write_1h', 6_000, '0.000006'],
        ],
        // 50×3e-6 + 300×15e-6 + 2×0.01 + 4000×3.75e-6 + 6000×6e-6 = 0.00015+0.0045+0.02+0.015+0.036
        totalAtto: '0.07565',
        totalNano: 75_650_000n,
        bracket: null,
      },
    },
  ],
  [
    'long context: every class at the bracket price',
    {
      given: { usage: { promptTokens: 250_000, completionTokens: 1_000, cacheReadTokens: 200_000 }, pricing: claude },
      want: {
        lines: [
          ['prompt', 50_000, '0.000006'],
          ['completion', 1_000, '0.0000225'],
          ['input_cache_read', 200_000, '0.0000006'],
        ],
        totalAtto: '0.4425',
        totalNano: 442_500_000n,
        bracket: 200_000,
      },
    },
  ],
  [
    'unpriced input classes bill at prompt, merged into its line',
    {
      given: {
        usage: {
          promptTokens: 1000,
          completionTokens: 0,
          cacheReadTokens: 100,
          cacheWriteTokens: 100,
          cacheWrite1hTokens: 100,
          audioInputTokens: 100,
          imageInputTokens: 100,
          cachedAudioInputTokens: 100,
        },
        pricing: textOnly,
      },
      want: { lines: [['prompt', 1000, '0.000002']], totalAtto: '0.002', totalNano: 2_000_000n, bracket: null },
    },
  ],
  [
    '1h writes fall back to input_cache_write when only that is priced',
    {
      given: {
        usage: { promptTokens: 1000, completionTokens: 0, cacheWriteTokens: 200, cacheWrite1hTokens: 300 },
        pricing: priceList({ prompt: '0.000003', completion: '0.000015', input_cache_write: '0.00000375' }),
      },
      want: {
        lines: [
          ['prompt', 500, '0.000003'],
          ['input_cache_write', 500, '0.00000375'],
        ],
        totalAtto: '0.003375',
        totalNano: 3_375_000n,
        bracket: null,
      },
    },
  ],
  [
    'unpriced output classes bill at completion',
    {
      given: {
        usage: {
          promptTokens: 0,
          completionTokens: 1000,
          reasoningTokens: 600,
          audioOutputTokens: 100,
          imageOutputTokens: 100,
        },
        pricing: textOnly,
      },
      want: { lines: [['completion', 1000, '0.000008']], totalAtto: '0.008', totalNano: 8_000_000n, bracket: null },
    },
  ],
  [
    'every class priced',
    {
      given: {
        usage: {
          promptTokens: 1000,
          completionTokens: 1000,
          cacheReadTokens: 100,
          cacheWriteTokens: 100,
          cacheWrite1hTokens: 100,
          cachedAudioInputTokens: 100,
          audioInputTokens: 100,
          imageInputTokens: 100,
          reasoningTokens: 200,
          audioOutputTokens: 200,
          imageOutputTokens: 200,
          inputImages: 3,
          webSearchCalls: 1,
        },
        pricing: everything,
      },
      want: {
        lines: [
          ['prompt', 400, '0.000001'],
          ['completion', 400, '0.000002'],
          ['request', 1, '0.0005'],
          ['image', 3, '0.001'],
          ['image_output', 200, '0.00004'],
          ['audio', 100, '0.00004'],
          ['audio_output', 200, '0.00008'],
          ['input_audio_cache', 100, '0.0000025'],
          ['web_search', 1, '0.025'],
          ['internal_reasoning', 200, '0.000003'],
          ['input_cache_read', 100, '0.0000001'],
          ['input_cache_write', 100, '0.00000125'],
          ['input_cache_write_1h', 100, '0.000002'],
          ['image_token', 100, '0.00001'],
        ],
        // 0.0004 + 0.0008 + 0.0005 + 0.003 + 0.008 + 0.004 + 0.016 + 0.00025 + 0.025 + 0.0006
        // + 0.00001 + 0.000125 + 0.0002 + 0.001
        totalAtto: '0.059885',
        totalNano: 59_885_000n,
        bracket: null,
      },
    },
  ],
  [
    'sub-counts above the total are clamped in order (no negative remainder)',
    {
      given: {
        usage: {
          promptTokens: 100,
          completionTokens: 50,
          cacheReadTokens: 80,
          cacheWriteTokens: 80,
          reasoningTokens: 70,
        },
        pricing: claude,
      },
      // prompt 100: read 80, write min(80, 20) = 20, remainder 0; completion 50: reasoning min(70, 50)
      // = 50, and claude does not price internal_reasoning, so it bills at completion.
      want: {
        lines: [
          ['completion', 50, '0.000015'],
          ['input_cache_read', 80, '0.0000003'],
          ['input_cache_write', 20, '0.00000375'],
        ],
        totalAtto: '0.000849',
        totalNano: 849_000n,
        bracket: null,
      },
    },
  ],
  [
    'per-unit classes without a price are free',
    {
      given: {
        usage: { promptTokens: 10, completionTokens: 10, inputImages: 4, webSearchCalls: 3 },
        pricing: textOnly,
      },
      want: {
        lines: [
          ['prompt', 10, '0.000002'],
          ['completion', 10, '0.000008'],
        ],
        totalAtto: '0.0001',
        totalNano: 100_000n,
        bracket: null,
      },
    },
  ],
  [
    'request fee is charged even with zero tokens; zero-unit lines omitted',
    {
      given: {
        usage: { promptTokens: 0, completionTokens: 0 },
        pricing: priceList({ prompt: '0.000001', completion: '0.000002', request: '0.0005' }),
      },
      want: { lines: [['request', 1, '0.0005']], totalAtto: '0.0005', totalNano: 500_000n, bracket: null },
    },
  ],
  [
    'free model keeps zero-price lines',
    {
      given: { usage: { promptTokens: 7, completionTokens: 3 }, pricing: priceList({ prompt: '0', completion: '0' }) },
      want: {
        lines: [
          ['prompt', 7, '0'],
          ['completion', 3, '0'],
        ],
        totalAtto: '0',
        totalNano: 0n,
        bracket: null,
      },
    },
  ],
];

t.test('computeCharge table', async (t) => {
  for (const [name, { given, want }] of cases) {
    const c = computeCharge(given.usage, given.pricing);
    t.strictSame(
      lines(c.lines),
      want.lines.map(([cls, n, p]) => [cls, n, atto(p)]),
      `${name}: lines`,
    );
    for (const l of c.lines)
      t.equal(l.amountAtto, BigInt(l.units) * l.unitPriceAtto, `${name}: ${l.priceClass} amount`);
    t.equal(c.totalAtto, atto(want.totalAtto), `${name}: totalAtto`);
    t.equal(c.totalNano, want.totalNano, `${name}: totalNano`);
    t.equal(c.bracketMinPromptTokens, want.bracket, `${name}: bracket`);
  }
});

t.test('rounding to nano: once, half up', async (t) => {
  // 0.5 nano per token: an odd count lands exactly on .5 nano.
  const half = priceList({ prompt: '0.0000000005', completion: '0' });
  t.equal(computeCharge({ promptTokens: 1, completionTokens: 0 }, half).totalNano, 1n, '0.5 → 1');
  t.equal(computeCharge({ promptTokens: 3, completionTokens: 0 }, half).totalNano, 2n, '1.5 → 2');
  // Just below .5: 0.499999999999 nano → 0.
  const below = priceList({ prompt: '0.000000000499999', completion: '0' });
  t.equal(computeCharge({ promptTokens: 1, completionTokens: 0 }, below).totalNano, 0n, '0.499999 → 0');
  // Rounded once: two lines of 0.4 nano each sum to 0.8 → 1 (per-line rounding would give 0).
  const fortyPct = priceList({ prompt: '0.0000000004', completion: '0.0000000004' });
  t.equal(
    computeCharge({ promptTokens: 1, completionTokens: 1 }, fortyPct).totalNano,
    1n,
    'rounded on the total, not per line',
  );
});

t.test('bad counts are a caller bug', async (t) => {
  t.throws(() => computeCharge({ promptTokens: -1, completionTokens: 0 }, textOnly), RangeError);
  t.throws(() => computeCharge({ promptTokens: 1, completionTokens: 0, cacheReadTokens: 0.5 }, textOnly), RangeError);
});
