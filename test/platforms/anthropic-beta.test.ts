// The anthropic-beta policy of a platform: an allow list forwards only its names, a deny list all but
// its names, names compared without regard to case and kept as sent; nothing left means no header;
// without a policy (or a header) the client's headers are the same object, untouched.
import t from 'tap';
import { forwardedBetas, withBetaPolicy } from '../../src/platforms/anthropic-beta.ts';
import { BEDROCK_BETAS, bedrock } from '../../src/platforms/bedrock.ts';

t.test('allow and deny lists', async (t) => {
  const allow = { kind: 'allow' as const, names: ['a-2025-01-01', 'b-2025-01-01'] };
  const deny = { kind: 'deny' as const, names: ['a-2025-01-01'] };
  t.equal(forwardedBetas('A-2025-01-01, c-2025-01-01 ,b-2025-01-01', allow), 'A-2025-01-01,b-2025-01-01');
  t.equal(forwardedBetas('c-2025-01-01', allow), undefined);
  t.equal(forwardedBetas('a-2025-01-01,c-2025-01-01', deny), 'c-2025-01-01');
  t.equal(forwardedBetas(' , ', deny), undefined);
  t.equal(forwardedBetas('x', { kind: 'allow', names: [] }), undefined, 'an empty allow list forwards none');
});

t.test('the client headers an adapter sees', async (t) => {
  const headers = { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'a,b' };
  t.equal(withBetaPolicy(headers, null), headers, 'no policy: the same object');
  const none = { 'x-title': 'x' };
  t.equal(withBetaPolicy(none, BEDROCK_BETAS), none, 'no header: the same object');
  t.same(withBetaPolicy(headers, { kind: 'deny', names: ['a'] }), {
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'b',
  });
  t.same(
    withBetaPolicy(headers, { kind: 'allow', names: [] }),
    { 'anthropic-version': '2023-06-01' },
    'nothing left: no header',
  );
  t.same(
    headers,
    { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'a,b' },
    "the request's own headers untouched",
  );
});

t.test("Bedrock's default is its documented list", async (t) => {
  t.equal(bedrock.anthropicBeta, BEDROCK_BETAS);
  t.same(BEDROCK_BETAS, { kind: 'allow', names: ['computer-use-2024-10-22', 'interleaved-thinking-2025-05-14'] });
});
