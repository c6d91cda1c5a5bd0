// The settlement of an answer (src/billing/settlement.ts): exact on the provider's final usage; an
// estimate flagged `estimated` when none came (input from the provider's own start counts when it
// stated them, else request bytes / 4; one output token per content event); the hold when the client
// side ended a stream on a platform that cannot cancel it; a drain is billed on the estimate anywhere.
import t from 'tap';
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
  return { usage: null, inputUsage: null, stream: true, completed: false, clientAborted: false, contentEvents: 7, contentBytes: 700, ...o };
}

function settle(o: Partial<SettledAnswer>, cancellable = true) {
  return settlementFor({ model: M, deployment: DEPLOYMENT, platform: platform(cancellable), outcome: answer(o), holdNano: 999_999n, requestBytes: 400, pricedAtMs: 0 });
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
  t.equal(settle({ clientAborted: true }, false).costNano, 999_999n);
  t.equal(settle({ clientAborted: true }, false).details.basis, 'hold_uncancellable_abort');
  t.equal(settle({ clientAborted: true }, true).details.estimated, true);
  t.equal(settle({ clientAborted: false }, false).details.estimated, true, 'cut by the provider or drained: the estimate');
  t.equal(settle({ clientAborted: true, completed: true, usage: { promptTokens: 1, completionTokens: 1 } }, false).costNano, 3000n, 'a complete answer is billed on its usage');
});
