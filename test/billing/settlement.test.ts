// The settlement of an answer (src/billing/settlement.ts): exact on the provider's final usage; an
// estimate flagged `estimated` when none came (input from the provider's own start counts when it
// stated them, else request bytes / 4; one output token per content event); the hold when the client
// side ended a stream on a platform that cannot cancel it; a drain is billed on the estimate anywhere.
// Never above the request's bound (a provider report priced above it is charged the bound, flagged
// `capped`), and an estimate never above the hold beyond what the provider itself stated.
import t from 'tap';
import { settlementBoundNano } from '../../src/billing/bound.ts';
import { estimatedPromptTokens, settlementFor, type SettledAnswer } from '../../src/billing/settlement.ts';
import type { CompiledPlatform } from '../../src/config/compiled.ts';
import { deployment, model, priceList } from './fixtures.ts';

// Per token: prompt $0.000001 (1000 nano-USD), completion 2000 nano, cache read 100 nano.
const M = model(priceList({ prompt: '0.000001', completion: '0.000002', input_cache_read: '0.0000001' }));
const DEPLOYMENT = deployment({ kind: 'list' });
function platform(cancellable: boolean): CompiledPlatform {
  return { id: 'p', supportsStreamCancellation: cancellable } as CompiledPlatform;
}

function answer(o: Partial<SettledAnswer>): SettledAnswer {
  return {
    usage: null,
    inputUsage: null,
    stream: true,
    completed: false,
    clientAborted: false,
    contentEvents: 7,
    contentBytes: 700,
    ...o,
  };
}

/** Prompt ≤ 100,000 tokens, output ≤ 1,000: at most 100,000 × 1000 + 1000 × 2000 nano-USD. */
const BOUND = { promptTokens: 100_000, completionTokens: 1000 };
const BOUND_NANO = 100_000n * 1000n + 1000n * 2000n;

function settle(o: Partial<SettledAnswer>, cancellable = true, holdNano = 9_999_999n) {
  return settlementFor({
    model: M,
    deployment: DEPLOYMENT,
    platform: platform(cancellable),
    outcome: answer(o),
    holdNano,
    requestBytes: 400,
    pricedAtMs: 0,
    bound: BOUND,
  });
}

t.test('final usage is billed exactly', async (t) => {
  const s = settle({ usage: { promptTokens: 1000, completionTokens: 10 }, completed: true });
  t.equal(s.costNano, 1000n * 1000n + 10n * 2000n);
  t.notOk(s.details.estimated);
});

t.test('no final usage: the estimate, on the provider’s input counts when it stated them', async (t) => {
  const bytes = settle({});
  t.equal(bytes.details.estimated, true);
  t.equal(bytes.details.promptTokens, estimatedPromptTokens(400), 'request bytes / 4');
  t.equal(bytes.details.completionTokens, 7, 'one token per content event');
  t.equal(bytes.costNano, 100n * 1000n + 7n * 2000n);
  const stated = settle({ inputUsage: { promptTokens: 3000, cacheReadTokens: 2000 } });
  t.equal(stated.details.estimated, true);
  t.equal(stated.details.promptTokens, 3000, 'the prompt the provider stated');
  t.equal(stated.details.cachedTokens, 2000, 'its cache reads at their own price');
  t.equal(stated.details.completionTokens, 7);
  t.equal(stated.costNano, 1000n * 1000n + 2000n * 100n + 7n * 2000n, 'uncached input, cache reads, estimated output');
});

t.test('the client side ended the stream: the hold where the platform cannot cancel, else the estimate', async (t) => {
  t.equal(settle({ clientAborted: true }, false, 999_999n).costNano, 999_999n);
  t.equal(settle({ clientAborted: true }, false).details.basis, 'hold_uncancellable_abort');
  t.equal(settle({ clientAborted: true }, true).details.estimated, true);
  t.equal(
    settle({ clientAborted: false }, false).details.estimated,
    true,
    'cut by the provider or drained: the estimate',
  );
  t.equal(
    settle({ clientAborted: true, completed: true, usage: { promptTokens: 1, completionTokens: 1 } }, false).costNano,
    3000n,
    'a complete answer is billed on its usage',
  );
});

t.test(
  'the bound: the prompt at the context, the output at the request limit, each at its dearest class',
  async (t) => {
    t.equal(settlementBoundNano(M.listPricing, BOUND), BOUND_NANO);
    const classes = priceList(
      {
        prompt: '0.000001',
        completion: '0.000002',
        input_cache_write: '0.00000125',
        internal_reasoning: '0.000003',
        request: '0.01',
        web_search: '0.01',
        image: '0.002',
      },
      [[50_000, { prompt: '0.000004' }]],
    );
    // Input: the long-context bracket's prompt (4000 nano) plus an image per token (2,000,000 nano);
    // output: reasoning (3000) plus a web search per token (10,000,000); the request fee once.
    t.equal(
      settlementBoundNano(classes, { promptTokens: 10, completionTokens: 5 }),
      10n * (4000n + 2_000_000n) + 5n * (3000n + 10_000_000n) + 10_000_000n,
    );
    t.throws(() => settlementBoundNano(classes, { promptTokens: -1, completionTokens: 0 }), RangeError);
  },
);

t.test('a provider report priced above the bound is charged the bound, flagged with what it reported', async (t) => {
  const within = settle({ usage: { promptTokens: 100_000, completionTokens: 1000 }, completed: true }, true, 1n);
  t.equal(within.costNano, BOUND_NANO, 'above the hold, up to the bound: billed in full');
  t.equal(within.capped, null);
  t.notOk(within.details.capped);
  const reportedAtto = (10n * 1000n + 10n ** 12n * 2000n) * 10n ** 9n;
  const huge = settle({ usage: { promptTokens: 10, completionTokens: 1e12 }, completed: true });
  t.equal(huge.costNano, BOUND_NANO, 'charged the bound');
  t.same(huge.capped, { cap: 'bound', reportedAtto, chargedNano: BOUND_NANO, boundNano: BOUND_NANO });
  t.match(huge.details, {
    capped: true,
    cap: 'bound',
    promptTokens: 10,
    completionTokens: 1e12,
    costAtto: String(BOUND_NANO * 10n ** 9n),
    boundNano: String(BOUND_NANO),
  });
  t.equal(huge.details.reportedCostAtto, String(reportedAtto), 'what the report priced at');
  const safe = settle({ usage: { promptTokens: 0, completionTokens: Number.MAX_SAFE_INTEGER }, completed: true });
  t.equal(
    safe.costNano,
    BOUND_NANO,
    'the largest count JSON carries exactly: charged the bound, which fits the ledger',
  );
});

t.test('an estimate never charges more than the hold beyond what the provider stated', async (t) => {
  // A 1 MB answer without usage: 262,144 estimated output tokens against a small hold.
  const big = settle({ stream: false, contentBytes: 1 << 20 }, true, 400_000n);
  t.equal(big.costNano, 400_000n, 'charged the hold');
  t.match(big.details, { estimated: true, capped: true, cap: 'hold', completionTokens: 262_144 });
  t.equal(
    settle({ stream: false, contentBytes: 40 }, true, 400_000n).capped,
    null,
    'an estimate within the hold is billed as estimated',
  );
  // The provider stated 3000 input tokens (3,000,000 nano) before the cut: billed as stated; the
  // estimated output adds nothing once that is above the hold.
  const stated = settle({ inputUsage: { promptTokens: 3000 }, contentEvents: 500 }, true, 1000n);
  t.equal(stated.costNano, 3000n * 1000n);
  t.equal(stated.details.cap, 'hold');
  const beyond = settle({ inputUsage: { promptTokens: 10_000_000 } }, true, 1000n);
  t.equal(beyond.costNano, BOUND_NANO, 'a stated input above the bound: the bound');
  t.equal(beyond.details.cap, 'bound');
});

t.test('an uncancellable abort is charged the hold, never above the bound', async (t) => {
  t.equal(settle({ clientAborted: true }, false, BOUND_NANO + 1n).costNano, BOUND_NANO);
});
