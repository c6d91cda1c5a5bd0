// Table tests for effective channel prices: bracket selection at exact thresholds, brackets that
// do not restate a class, percent discounts, channel price lists, discount windows, rendering.
import t from 'tap';
import type { ChannelPricing, PriceClass } from '../../src/config/compiled.ts';
import { bracketAt, effectivePricing, pricesAt, renderPricing, unitPriceForSort } from '../../src/billing/price.ts';
import { decimalToAtto } from '../../src/money.ts';
import { deployment, model, priceList, priceSet } from './fixtures.ts';

const atto = decimalToAtto;

// A Gemini-like list: base, a 200k bracket restating prompt/completion/cache read, a 1M bracket
// restating only prompt.
const tiered = priceList(
  { prompt: '0.00000125', completion: '0.00001', input_cache_read: '0.0000003125', web_search: '0.035' },
  [
    [200_000, { prompt: '0.0000025', completion: '0.000015', input_cache_read: '0.000000625' }],
    [1_000_000, { prompt: '0.000005' }],
  ],
);

t.test('bracket selection at exact thresholds', async (t) => {
  const cases: [
    string,
    { given: number; want: { min: number | null; prompt: string; completion: string; cacheRead: string } },
  ][] = [
    [
      'zero tokens → base',
      { given: 0, want: { min: null, prompt: '0.00000125', completion: '0.00001', cacheRead: '0.0000003125' } },
    ],
    [
      'first min − 1 → base',
      { given: 199_999, want: { min: null, prompt: '0.00000125', completion: '0.00001', cacheRead: '0.0000003125' } },
    ],
    [
      'first min → first bracket',
      { given: 200_000, want: { min: 200_000, prompt: '0.0000025', completion: '0.000015', cacheRead: '0.000000625' } },
    ],
    [
      'first min + 1 → first bracket',
      { given: 200_001, want: { min: 200_000, prompt: '0.0000025', completion: '0.000015', cacheRead: '0.000000625' } },
    ],
    [
      'between brackets → first bracket',
      { given: 640_000, want: { min: 200_000, prompt: '0.0000025', completion: '0.000015', cacheRead: '0.000000625' } },
    ],
    [
      'second min − 1 → first bracket',
      { given: 999_999, want: { min: 200_000, prompt: '0.0000025', completion: '0.000015', cacheRead: '0.000000625' } },
    ],
    // The 1M bracket restates only prompt: completion and cache read keep the BASE price, not the
    // previous bracket's and never zero.
    [
      'second min → second bracket, unrestated classes at base',
      {
        given: 1_000_000,
        want: { min: 1_000_000, prompt: '0.000005', completion: '0.00001', cacheRead: '0.0000003125' },
      },
    ],
    [
      'above last bracket',
      {
        given: 5_000_000,
        want: { min: 1_000_000, prompt: '0.000005', completion: '0.00001', cacheRead: '0.0000003125' },
      },
    ],
  ];
  for (const [name, { given, want }] of cases) {
    const p = pricesAt(tiered, given);
    t.equal(bracketAt(tiered, given)?.minPromptTokens ?? null, want.min, `${name}: bracket`);
    t.equal(p.prompt, atto(want.prompt), `${name}: prompt`);
    t.equal(p.completion, atto(want.completion), `${name}: completion`);
    t.equal(p.input_cache_read, atto(want.cacheRead), `${name}: input_cache_read`);
    t.equal(p.web_search, atto('0.035'), `${name}: web_search from base`);
    t.equal(p.request, undefined, `${name}: unpriced class stays absent`);
  }
});

t.test('bracket selection does not rely on the declared order', async (t) => {
  const unordered = { base: tiered.base, overrides: [...tiered.overrides].reverse() };
  t.equal(pricesAt(unordered, 300_000).prompt, atto('0.0000025'));
  t.equal(pricesAt(unordered, 1_500_000).prompt, atto('0.000005'));
});

t.test('a bracket entry explicitly undefined does not blank the base', async (t) => {
  const list = priceList({ prompt: '0.000001', completion: '0.000002' }, [[10, {}]]);
  const b = list.overrides[0];
  if (b) b.prices = { prompt: undefined, completion: atto('0.000003') };
  t.equal(pricesAt(list, 10).prompt, atto('0.000001'));
  t.equal(pricesAt(list, 10).completion, atto('0.000003'));
});

const NOW = Date.parse('2026-03-01T00:00:00Z');
const listOnly = priceList(
  {
    prompt: '0.000003',
    completion: '0.000015',
    request: '0.001',
    input_cache_read: '0.0000003',
    input_cache_write: '0.00000375',
  },
  [[200_000, { prompt: '0.000006', completion: '0.0000225' }]],
);

function eff(pricing: ChannelPricing, now = NOW, list = listOnly) {
  return effectivePricing(model(list), deployment(pricing), now);
}

t.test('list channel', async (t) => {
  const e = eff({ kind: 'list' });
  t.equal(e.pricing, listOnly);
  t.equal(e.list, listOnly);
  t.equal(e.discount, null);
});

t.test('percent discount applies to every class and bracket, exactly', async (t) => {
  const e = eff({ kind: 'discount', percent: 20, endsAt: null });
  t.strictSame(e.discount, { percentOff: 20, endsAt: null });
  t.equal(e.list, listOnly);
  t.strictSame(
    e.pricing.base,
    priceSet({
      prompt: '0.0000024',
      completion: '0.000012',
      request: '0.0008',
      input_cache_read: '0.00000024',
      input_cache_write: '0.000003',
    }),
  );
  t.equal(e.pricing.overrides.length, 1);
  t.equal(e.pricing.overrides[0]?.minPromptTokens, 200_000);
  t.strictSame(e.pricing.overrides[0]?.prices, priceSet({ prompt: '0.0000048', completion: '0.000018' }));
  // Exactness: discounted × 100 = list × (100 − p) for every class.
  for (const [cls, v] of Object.entries(listOnly.base) as [PriceClass, bigint][]) {
    t.equal((e.pricing.base[cls] ?? -1n) * 100n, v * 80n, `${cls} exact`);
  }
});

t.test('100% discount makes everything free and is still a discount', async (t) => {
  const e = eff({ kind: 'discount', percent: 100, endsAt: '2026-04-01T00:00:00Z' });
  t.strictSame(e.discount, { percentOff: 100, endsAt: '2026-04-01T00:00:00Z' });
  t.equal(e.pricing.base.prompt, 0n);
  t.equal(e.pricing.overrides[0]?.prices.completion, 0n);
});

t.test('discount window: ends_at is exclusive', async (t) => {
  const endsAt = '2026-03-01T00:00:00Z';
  const end = Date.parse(endsAt);
  const before = eff({ kind: 'discount', percent: 10, endsAt }, end - 1);
  t.strictSame(before.discount, { percentOff: 10, endsAt }, 'active at ends_at − 1 ms');
  t.equal(before.pricing.base.prompt, atto('0.0000027'));
  const at = eff({ kind: 'discount', percent: 10, endsAt }, end);
  t.equal(at.discount, null, 'inactive at ends_at');
  t.equal(at.pricing, listOnly, 'list prices at ends_at');
  const after = eff({ kind: 'discount', percent: 10, endsAt }, end + 86_400_000);
  t.equal(after.discount, null, 'inactive after');

  const chList = priceList({ prompt: '0.0000015', completion: '0.0000075' });
  const chBefore = eff({ kind: 'channel', prices: chList, endsAt }, end - 1);
  t.equal(chBefore.pricing, chList, 'channel list active at ends_at − 1 ms');
  const chAt = eff({ kind: 'channel', prices: chList, endsAt }, end);
  t.equal(chAt.pricing, listOnly, 'channel list inactive at ends_at');
  t.equal(chAt.discount, null);
});

t.test('unparseable ends_at counts as ended', async (t) => {
  const e = eff({ kind: 'discount', percent: 10, endsAt: 'soon' });
  t.equal(e.pricing, listOnly);
  t.equal(e.discount, null);
});

t.test('channel price lists', async (t) => {
  type Want = { percentOff: number | null };
  const cases: [string, { given: ReturnType<typeof priceList>; list?: ReturnType<typeof priceList>; want: Want }][] = [
    [
      'half price on text, same other classes',
      {
        given: priceList(
          {
            prompt: '0.0000015',
            completion: '0.0000075',
            request: '0.001',
            input_cache_read: '0.0000003',
            input_cache_write: '0.00000375',
          },
          [[200_000, { prompt: '0.000006', completion: '0.0000225' }]],
        ),
        want: { percentOff: 50 },
      },
    ],
    [
      // (3 + 15) → (2.7 + 13.6): 1 − 16.3/18 = 9.444…% → 9
      'rounded percent: 9.44 → 9',
      {
        given: priceList(
          {
            prompt: '0.0000027',
            completion: '0.0000136',
            request: '0.001',
            input_cache_read: '0.0000003',
            input_cache_write: '0.00000375',
          },
          [[200_000, { prompt: '0.000006', completion: '0.0000225' }]],
        ),
        want: { percentOff: 9 },
      },
    ],
    [
      // (3 + 15) → (2.91 + 15): 1 − 17.91/18 = 0.5% exactly → rounds half up to 1
      'rounded percent: exactly 0.5 → 1',
      {
        given: priceList(
          {
            prompt: '0.00000291',
            completion: '0.000015',
            request: '0.001',
            input_cache_read: '0.0000003',
            input_cache_write: '0.00000375',
          },
          [[200_000, { prompt: '0.000006', completion: '0.0000225' }]],
        ),
        want: { percentOff: 1 },
      },
    ],
    [
      'identical to list → no discount',
      {
        given: priceList(
          {
            prompt: '0.000003',
            completion: '0.000015',
            request: '0.001',
            input_cache_read: '0.0000003',
            input_cache_write: '0.00000375',
          },
          [[200_000, { prompt: '0.000006', completion: '0.0000225' }]],
        ),
        want: { percentOff: null },
      },
    ],
    [
      // Same resolved prices everywhere, just written without the redundant bracket keys.
      'same billed prices, different spelling → no discount',
      {
        given: priceList(
          {
            prompt: '0.000003',
            completion: '0.000015',
            request: '0.001',
            input_cache_read: '0.0000003',
            input_cache_write: '0.00000375',
          },
          [[200_000, { prompt: '0.000006', completion: '0.0000225', request: '0.001' }]],
        ),
        want: { percentOff: null },
      },
    ],
    [
      'cheaper only on cache reads → discount with 0% headline',
      {
        given: priceList(
          {
            prompt: '0.000003',
            completion: '0.000015',
            request: '0.001',
            input_cache_read: '0.0000001',
            input_cache_write: '0.00000375',
          },
          [[200_000, { prompt: '0.000006', completion: '0.0000225' }]],
        ),
        want: { percentOff: 0 },
      },
    ],
    [
      // Dropping the cache-read price bills reads at prompt: dearer, so not a discount even though
      // the text prices are lower.
      'cheaper text but reads billed at prompt → not below list',
      {
        given: priceList(
          { prompt: '0.0000015', completion: '0.0000075', request: '0.001', input_cache_write: '0.00000375' },
          [[200_000, { prompt: '0.000006', completion: '0.0000225' }]],
        ),
        want: { percentOff: null },
      },
    ],
    [
      'dearer channel → billed, not a discount',
      {
        given: priceList(
          {
            prompt: '0.000004',
            completion: '0.000015',
            request: '0.001',
            input_cache_read: '0.0000003',
            input_cache_write: '0.00000375',
          },
          [[200_000, { prompt: '0.000006', completion: '0.0000225' }]],
        ),
        want: { percentOff: null },
      },
    ],
    [
      'free-text list, channel equal → no discount',
      {
        given: priceList({ prompt: '0', completion: '0', request: '0.01' }),
        list: priceList({ prompt: '0', completion: '0', request: '0.01' }),
        want: { percentOff: null },
      },
    ],
    [
      // List text is free; the saving is on the request fee, so the basket widens to all base classes.
      'free-text list, cheaper request fee → percent on the widened basket',
      {
        given: priceList({ prompt: '0', completion: '0', request: '0.0075' }),
        list: priceList({ prompt: '0', completion: '0', request: '0.01' }),
        want: { percentOff: 25 },
      },
    ],
  ];
  for (const [name, { given, list, want }] of cases) {
    const e = eff({ kind: 'channel', prices: given, endsAt: '2026-06-01T00:00:00Z' }, NOW, list ?? listOnly);
    t.equal(e.pricing, given, `${name}: billed at the channel list`);
    t.equal(e.list, list ?? listOnly, `${name}: list kept`);
    t.strictSame(
      e.discount,
      want.percentOff === null ? null : { percentOff: want.percentOff, endsAt: '2026-06-01T00:00:00Z' },
      `${name}: discount`,
    );
  }
});

t.test('percent discount on an all-free list is not a discount', async (t) => {
  const free = priceList({ prompt: '0', completion: '0' });
  t.equal(eff({ kind: 'discount', percent: 30, endsAt: null }, NOW, free).discount, null);
});

t.test('renderPricing', async (t) => {
  t.strictSame(
    renderPricing(priceList({ prompt: '0', completion: '0' })),
    { prompt: '0', completion: '0' },
    'free single-priced',
  );
  const rendered = renderPricing(tiered);
  t.strictSame(rendered, {
    prompt: '0.00000125',
    completion: '0.00001',
    web_search: '0.035',
    input_cache_read: '0.0000003125',
    overrides: [
      { min_prompt_tokens: 200_000, prompt: '0.0000025', completion: '0.000015', input_cache_read: '0.000000625' },
      { min_prompt_tokens: 1_000_000, prompt: '0.000005' },
    ],
  });
  t.strictSame(
    Object.keys(rendered),
    ['prompt', 'completion', 'web_search', 'input_cache_read', 'overrides'],
    'spec key order',
  );
  const all = priceList({
    image_token: '0.00001',
    input_cache_write_1h: '0.000006',
    input_cache_write: '0.00000375',
    input_cache_read: '0.0000003',
    internal_reasoning: '0.000015',
    web_search: '0.01',
    input_audio_cache: '0.0000025',
    audio_output: '0.00008',
    audio: '0.00004',
    image_output: '0.00004',
    image: '0.001',
    request: '0.0001',
    completion: '0.000015',
    prompt: '0.000003',
  });
  t.strictSame(
    Object.keys(renderPricing(all)),
    [
      'prompt',
      'completion',
      'request',
      'image',
      'image_output',
      'audio',
      'audio_output',
      'input_audio_cache',
      'web_search',
      'internal_reasoning',
      'input_cache_read',
      'input_cache_write',
      'input_cache_write_1h',
      'image_token',
    ],
    'every class in spec order',
  );
  t.notOk('overrides' in renderPricing(all), 'no overrides key when there are none');
});

t.test('unitPriceForSort is base prompt + completion', async (t) => {
  t.equal(unitPriceForSort(tiered), atto('0.00001125'));
  t.equal(unitPriceForSort(priceList({ prompt: '0', completion: '0', request: '1' })), 0n);
});

t.test('invalid percent is a programming error', async (t) => {
  t.throws(() => eff({ kind: 'discount', percent: 12.5, endsAt: null }), RangeError);
  t.throws(() => eff({ kind: 'discount', percent: 101, endsAt: null }), RangeError);
});
