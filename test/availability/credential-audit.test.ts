// The credential audit behind serve's start-up warnings: which credentials active deployments of
// routable models need but the store lacks (with those deployments), which stored secrets no resource
// names, and how many deployments can serve. Inactive deployments and resources, and expired or
// disabled models, need nothing.
import t from 'tap';
import { auditCredentials } from '../../src/availability/credential-audit.ts';
import { DEFAULT_NOW, fixtureConfig } from '../helpers/stack.ts';

const NOW = Date.parse(DEFAULT_NOW);

t.test('missing credentials name the deployments that cannot serve', async (t) => {
  const config = fixtureConfig('gateway');
  const a = auditCredentials(config, new Set(['alpha-1', 'alpha', 'openai-us']), NOW);
  t.same(a.unused, ['alpha', 'openai-us'], 'stored names no resource uses');
  t.notOk(
    a.missing.some((m) => m.credential === 'alpha-1'),
    'a stored credential is not missing',
  );
  const beta = a.missing.find((m) => m.credential === 'beta-1');
  t.same(beta, { credential: 'beta-1', resources: ['beta-1'], deployments: ['beta/chat-small', 'beta/reasoner'] });
  t.notOk(
    a.missing.some((m) => m.deployments.includes('beta/chat-small-off')),
    'a deployment on an inactive resource needs nothing',
  );
  t.notOk(
    a.missing.some((m) => m.deployments.includes('gcp/chat-small')),
    'an inactive deployment needs nothing',
  );
  const zeta = a.missing.find((m) => m.credential === 'zeta-unsealed-key');
  t.same(zeta?.deployments, ['zeta/chat-big-unsealed']);
  t.ok(a.servable > 0, 'alpha serves');
  t.same(
    a.missing.map((m) => m.credential),
    [...a.missing.map((m) => m.credential)].sort(),
    'sorted by credential',
  );
});

t.test('expired and disabled models need no credential', async (t) => {
  const config = fixtureConfig('gateway');
  const before = auditCredentials(config, new Set(), Date.parse('2026-01-01T00:00:00Z'));
  const after = auditCredentials(config, new Set(), NOW);
  const all = (a: typeof before) => a.missing.flatMap((m) => m.deployments);
  t.ok(all(before).includes('alpha/retired'), 'acme/retired before its expiration date');
  t.notOk(all(after).includes('alpha/retired'), 'not after it');
  t.notOk(
    all(after).some((d) => config.deployments.find((x) => x.id === d)?.model === 'acme/disabled'),
    'a disabled model’s deployments',
  );
  t.equal(after.servable, 0, 'nothing stored: nothing servable');
  t.same(after.unused, []);
});
