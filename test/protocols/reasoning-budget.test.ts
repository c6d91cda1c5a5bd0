// Transformation 5's split (src/protocols/reasoning-budget.ts) as a table and as properties over every
// level and limit: reasoning + reply == limit whenever a limit is set, the budget never exceeds the
// level's, the reply keeps min(min_reply_tokens, limit); and prepareChat never mutates the original
// body it is given (every attempt starts from it).
import t from 'tap';
import fc from 'fast-check';
import { REASONING_LEVELS, type CompiledPlatform } from '../../src/config/compiled.ts';
import { prepareChat } from '../../src/protocols/chat-completions.ts';
import { splitBudget, type BudgetPolicy } from '../../src/protocols/reasoning-budget.ts';
import type { PrepareTarget } from '../../src/protocols/types.ts';
import { fixtureConfig } from '../helpers/stack.ts';

const POLICY: BudgetPolicy = { tokens: { minimal: 512, low: 1024, medium: 4096, high: 16384 }, minReplyTokens: 256 };

t.test('the split table', async (t) => {
  const table: [Parameters<typeof splitBudget>[0], number | null, ReturnType<typeof splitBudget>][] = [
    ['medium', null, { reasoningTokens: 4096, replyLimit: null }],
    ['medium', 10_000, { reasoningTokens: 4096, replyLimit: 5904 }],
    ['medium', 4352, { reasoningTokens: 4096, replyLimit: 256 }],
    ['medium', 4351, { reasoningTokens: 4095, replyLimit: 256 }],
    ['high', 1000, { reasoningTokens: 744, replyLimit: 256 }],
    ['low', 256, { reasoningTokens: 0, replyLimit: 256 }],
    ['low', 100, { reasoningTokens: 0, replyLimit: 100 }],
    ['minimal', 1, { reasoningTokens: 0, replyLimit: 1 }],
    ['none', 500, { reasoningTokens: 0, replyLimit: 500 }],
    ['none', null, { reasoningTokens: 0, replyLimit: null }],
    ['xhigh', 500, null],
    ['max', null, null],
  ];
  for (const [level, limit, expected] of table)
    t.same(splitBudget(level, limit, POLICY), expected, `${level} / ${limit}`);
});

t.test('properties: reasoning + reply never exceed the limit', async (t) => {
  fc.assert(
    fc.property(
      fc.constantFrom(...REASONING_LEVELS),
      fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: null }),
      fc.dictionary(fc.constantFrom(...REASONING_LEVELS), fc.integer({ min: 0, max: 200_000 })),
      fc.integer({ min: 1, max: 5000 }),
      (level, limit, tokens, minReplyTokens) => {
        const r = splitBudget(level, limit, { tokens, minReplyTokens });
        if (level === 'none') return r !== null && r.reasoningTokens === 0 && r.replyLimit === limit;
        const budget = tokens[level];
        if (budget === undefined) return r === null;
        if (r === null) return false;
        if (r.reasoningTokens < 0 || r.reasoningTokens > budget) return false;
        if (limit === null) return r.replyLimit === null && r.reasoningTokens === budget;
        return (
          r.replyLimit !== null &&
          r.reasoningTokens + r.replyLimit === limit &&
          r.replyLimit >= Math.min(minReplyTokens, limit)
        );
      },
    ),
    { numRuns: 2000 },
  );
  t.pass('2000 random cases');
});

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

t.test('prepareChat never mutates the original body', async (t) => {
  const config = fixtureConfig('gateway');
  const model = config.models.find((m) => m.id === 'acme/reasoner');
  const vocabularies = config.vocabularies;
  const original = deepFreeze({
    model: 'acme/reasoner',
    messages: [{ role: 'user', content: 'x' }],
    stream: true,
    stream_options: { include_usage: false, extra: 1 },
    reasoning: { effort: 'high', exclude: true },
    thinking: { type: 'disabled' },
    max_tokens: 3000,
    top_k: 3,
  });
  const snapshot = JSON.stringify(original);
  for (const platformId of ['alpha', 'beta', 'gamma', 'zeta']) {
    const platform = config.platforms.find((p) => p.id === platformId) as CompiledPlatform;
    const deployment = config.deployments.find((d) => d.platform === platformId) ?? config.deployments[0];
    if (!model || !deployment) throw new Error('fixture changed');
    const target: PrepareTarget = { model, platform, deployment, vocabularies };
    const body = prepareChat(original, target);
    t.equal(JSON.stringify(original), snapshot, `${platformId}: original untouched`);
    t.equal(body['model'], deployment.upstreamModel);
    t.same(body['stream_options'], { include_usage: true, extra: 1 });
    if (platformId === 'gamma')
      t.same(
        body['reasoning'],
        { exclude: true, max_tokens: 2744 },
        'gamma: budget from reasoning.effort, limit split',
      );
    if (platformId === 'beta') t.notOk('top_k' in body, 'beta: top_k dropped');
  }
});
