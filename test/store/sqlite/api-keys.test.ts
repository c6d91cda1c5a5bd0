// API keys: format, hash-only storage, verify statuses (expiry boundary), revocation across connections.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import t from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { openDatabase } from '../../../src/store/sqlite/db.ts';
import { keyState, openStore } from '../../../src/store/sqlite/store.ts';
import { tempDbFile } from './fixtures/temp-db.ts';

t.test('format and returned record', async (t) => {
  const clock = new ManualClock();
  const s = openStore(':memory:', { clock });
  const k = s.apiKeys.create({ workspace: 'acme', name: 'ci', rpm: 60, expiresAt: clock.now() + 1000 });
  t.match(k.key, /^sk-pi-[A-Za-z0-9_-]{43}$/);
  t.equal(k.prefix, k.key.slice(0, 14));
  t.match(k.id, /^key_[0-9a-f]{16}$/);
  t.same(
    {
      workspace: k.workspace,
      name: k.name,
      rpm: k.rpm,
      expiresAt: k.expiresAt,
      createdAt: k.createdAt,
      revokedAt: k.revokedAt,
    },
    { workspace: 'acme', name: 'ci', rpm: 60, expiresAt: clock.now() + 1000, createdAt: clock.now(), revokedAt: null },
  );
  const keys = new Set(Array.from({ length: 50 }, () => s.apiKeys.create({ workspace: 'acme' }).key));
  t.equal(keys.size, 50, 'random');
  t.throws(() => s.apiKeys.create({ workspace: '' }));
  t.throws(() => s.apiKeys.create({ workspace: 'a', rpm: 0 }));
  t.throws(() => s.apiKeys.create({ workspace: 'a', rpm: 1.5 }));
  t.notOk('key' in (s.apiKeys.get(k.id) ?? {}), 'get() has no plaintext');
  s.close();
});

t.test('only the hash is stored', async (t) => {
  const file = tempDbFile(t);
  const s = openStore(file);
  const k = s.apiKeys.create({ workspace: 'acme' });
  s.close();
  t.notOk(existsSync(file + '-wal'), 'WAL checkpointed on close');
  const bytes = readFileSync(file);
  t.notOk(bytes.includes(k.key), 'the key is absent');
  t.notOk(bytes.includes(k.key.slice(14)), 'its random part is absent');
  t.ok(bytes.includes(createHash('sha256').update(k.key).digest()), 'its sha256 is there');
  const raw = openDatabase(file);
  t.same(Object.keys(raw.prepare('SELECT * FROM api_keys').get() as object).sort(), [
    'created_at',
    'expires_at',
    'hash',
    'id',
    'name',
    'prefix',
    'revoked_at',
    'rpm',
    'workspace',
  ]);
  raw.close();
});

t.test('verify statuses', async (t) => {
  const clock = new ManualClock();
  const s = openStore(':memory:', { clock });
  const T = clock.now() + 60_000;
  const k = s.apiKeys.create({ workspace: 'acme', expiresAt: T });
  const body = k.key.slice(6);
  for (const bad of [
    '',
    'sk-pi-',
    'sk-pi-short',
    'sk-px-' + body,
    'SK-PI-' + body,
    k.key + 'A',
    k.key.slice(0, -1),
    'sk-pi-' + body.slice(0, -1) + '=',
    'sk-pi-' + body.slice(0, -1) + '!',
    ' ' + k.key,
    'Bearer ' + k.key,
  ]) {
    t.same(s.apiKeys.verify(bad, clock.now()), { status: 'invalid' }, JSON.stringify(bad));
  }
  const unknown = 'sk-pi-' + 'A'.repeat(43);
  t.same(s.apiKeys.verify(unknown, clock.now()), { status: 'not_found' });
  const sibling = k.key.slice(0, 14) + 'x'.repeat(35);
  t.same(s.apiKeys.verify(sibling, clock.now()), { status: 'not_found' }, 'same prefix, different secret');

  const ok = s.apiKeys.verify(k.key, T - 1);
  t.equal(ok.status, 'ok', 'one millisecond before expiry');
  if (ok.status === 'ok') t.equal(ok.key.id, k.id);
  t.same(s.apiKeys.verify(k.key, T), { status: 'expired' }, 'expired exactly at expiresAt');
  t.equal(keyState(s.apiKeys.get(k.id)!, T), 'expired');

  t.equal(s.apiKeys.revoke(k.id), true);
  t.equal(s.apiKeys.revoke(k.id), false, 'already revoked');
  t.equal(s.apiKeys.revoke('key_nope'), false);
  t.same(s.apiKeys.verify(k.key, T - 1), { status: 'revoked' });
  t.same(s.apiKeys.verify(k.key, T), { status: 'revoked' }, 'revoked wins over expired');
  t.equal(s.apiKeys.get(k.id)?.revokedAt, clock.now());
  t.equal(s.apiKeys.get('key_nope'), null);
  s.close();
});

t.test('prefix collision: candidates are told apart by hash', async (t) => {
  const file = tempDbFile(t);
  const s = openStore(file);
  const k = s.apiKeys.create({ workspace: 'acme' });
  const raw = openDatabase(file);
  raw
    .prepare("INSERT INTO api_keys (id, prefix, hash, workspace, created_at) VALUES ('key_twin', ?, ?, 'other', 0)")
    .run(k.prefix, createHash('sha256').update('something else').digest());
  raw.close();
  const r = s.apiKeys.verify(k.key, 0);
  t.equal(r.status === 'ok' && r.key.id, k.id);
  s.close();
});

t.test('list and filters', async (t) => {
  const clock = new ManualClock();
  const s = openStore(':memory:', { clock });
  const a = s.apiKeys.create({ workspace: 'a' });
  clock.advance(1);
  const b = s.apiKeys.create({ workspace: 'b' });
  clock.advance(1);
  const c = s.apiKeys.create({ workspace: 'a' });
  t.same(
    s.apiKeys.list().map((k) => k.id),
    [a.id, b.id, c.id],
  );
  t.same(
    s.apiKeys.list('a').map((k) => k.id),
    [a.id, c.id],
  );
  t.same(s.apiKeys.list('zzz'), []);
  t.notMatch(JSON.stringify(s.apiKeys.list()), a.key.slice(14));
  s.close();
});

t.test('revocation is seen by a second connection', async (t) => {
  const file = tempDbFile(t);
  const server = openStore(file);
  const cli = openStore(file);
  const k = cli.apiKeys.create({ workspace: 'acme' });
  t.equal(server.apiKeys.verify(k.key, 0).status, 'ok');
  server.changedSinceLastCheck();
  t.equal(cli.apiKeys.revoke(k.id), true);
  t.equal(server.changedSinceLastCheck(), true, 'the server learns something changed');
  t.same(server.apiKeys.verify(k.key, 0), { status: 'revoked' }, 'and verify sees it with no cache to drop');
  server.close();
  cli.close();
});
