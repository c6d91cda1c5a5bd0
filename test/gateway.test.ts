// A gateway whose database holds sealed credentials refuses to start without the master key that
// sealed them (missing or wrong), with a clear message, and opens no port; the `serve` command exits 1.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { startGateway } from '../src/gateway.ts';
import { openStore } from '../src/store/sqlite/store.ts';
import { fixtureConfig } from './helpers/stack.ts';

t.test('startGateway refuses a missing or wrong master key', async (t) => {
  const file = join(t.testdir({}), 'gw.db');
  const key = randomBytes(32).toString('base64');
  const seed = openStore(file, { masterKey: key });
  seed.secrets.set('alpha-1', 'upstream-secret');
  seed.close();
  for (const [label, masterKey] of [
    ['missing', undefined],
    ['wrong', randomBytes(32).toString('base64')],
  ] as const) {
    const store = openStore(file, { masterKey });
    await t.rejects(
      startGateway({ config: fixtureConfig('gateway'), store, log: () => undefined }),
      /master key|PI_MASTER_KEY/i,
      `${label} key`,
    );
    store.close();
  }
  const ok = openStore(file, { masterKey: key });
  const gw = await startGateway({ config: fixtureConfig('gateway'), store: ok, log: () => undefined });
  t.ok(gw.port > 0, 'the right key starts');
  await gw.close();
  ok.close();
});

t.test('`serve` exits 1 with the message and never listens', async (t) => {
  const file = join(t.testdir({}), 'gw.db');
  const seed = openStore(file, { masterKey: randomBytes(32).toString('base64') });
  seed.secrets.set('alpha-1', 'upstream-secret');
  seed.close();
  const r = spawnSync(
    process.execPath,
    ['src/cli/main.ts', 'serve', '--config', 'test/fixtures/config/gateway', '--db', file, '--port', '0'],
    {
      env: { ...process.env, PI_MASTER_KEY: '' },
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  t.equal(r.status, 1);
  t.match(r.stderr, /master key|PI_MASTER_KEY/i);
  t.notMatch(r.stderr, /"listening"/);
  t.notMatch(r.stderr, /upstream-secret/, 'the secret is never printed');
});
