// The change log nodes read to apply a key or secret write to their caches (PostgreSQL migration 4):
// each changed row is one version, in order and without gaps (concurrent writers, a rolled-back
// write), naming the key's id or the secret's name; only the last 10,000 changes are kept.
import t, { type Test } from 'tap';
import pg from 'pg';
import { ManualClock } from '../../../src/clock.ts';
import { migratePg, PG_MIGRATIONS } from '../../../src/store/postgres/migrations.ts';
import { openPgStore, type PgStore } from '../../../src/store/postgres/store.ts';
import { startPrivatePg, type PrivatePg } from '../../helpers/pg.ts';
import { masterKey } from '../sqlite/fixtures/temp-db.ts';

let server: PrivatePg;
t.before(async () => {
  server = await startPrivatePg();
});
t.teardown(() => server.destroy());

const clock = new ManualClock(Date.UTC(2026, 0, 1));

async function fresh(t: Test): Promise<{ s: PgStore; sql: pg.Client }> {
  const url = await server.createDatabase();
  const m = await openPgStore(url, { clock, checkSchema: false, masterKey: masterKey(1) });
  await m.migrate();
  await m.close();
  const s = await openPgStore(url, { clock, masterKey: masterKey(1) });
  t.teardown(() => s.close());
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  t.teardown(() => sql.end());
  return { s, sql };
}

t.test('every write is one version naming what it changed, in order', async (t) => {
  const { s } = await fresh(t);
  const v0 = await s.changeVersion();
  const k = await s.apiKeys.create({ workspace: 'w' });
  await s.apiKeys.revoke(k.id);
  await s.apiKeys.revoke(k.id); // changes no row: no version
  await s.secrets.set('openai-main', 'sk-1');
  await s.secrets.set('openai-main', 'sk-2');
  await s.secrets.remove('openai-main');
  const v = await s.changeVersion();
  t.equal(v - v0, 5n, 'five rows changed, five versions');
  t.same(await s.changesBetween(v0, v), [
    { kind: 'key', ref: k.id },
    { kind: 'key', ref: k.id },
    { kind: 'secret', ref: 'openai-main' },
    { kind: 'secret', ref: 'openai-main' },
    { kind: 'secret', ref: 'openai-main' },
  ]);
  t.same(await s.changesBetween(v0 + 3n, v0 + 4n), [{ kind: 'secret', ref: 'openai-main' }], 'a range of them');
});

t.test('concurrent writers get dense versions; a rolled-back write takes its version back', async (t) => {
  const { s, sql } = await fresh(t);
  const v0 = await s.changeVersion();
  await sql.query('BEGIN');
  await sql.query(
    "INSERT INTO secrets (name, nonce, ciphertext, tag, key_id, created_at, updated_at) VALUES ('gone', '\\x00', '\\x00', '\\x00', 'k', 0, 0)",
  );
  // Twenty keys from other sessions while that write is open: they wait for its version's lock.
  const writes = Promise.all(Array.from({ length: 20 }, (_, i) => s.apiKeys.create({ workspace: `w${i}` })));
  await new Promise((resolve) => setTimeout(resolve, 50));
  await sql.query('ROLLBACK');
  const keys = await writes;
  const v = await s.changeVersion();
  t.equal(v - v0, 20n, 'twenty versions: the rolled-back one is not among them');
  const changes = await s.changesBetween(v0, v);
  t.equal(changes.length, 20, 'no gap');
  t.same(new Set(changes.map((c) => c.ref)), new Set(keys.map((k) => k.id)));
});

t.test('a statement changing many rows logs each; only the last 10,000 changes are kept', async (t) => {
  const { s, sql } = await fresh(t);
  const v0 = await s.changeVersion();
  await sql.query(
    `INSERT INTO secrets (name, nonce, ciphertext, tag, key_id, created_at, updated_at)
     SELECT 'n' || i, '\\x00', '\\x00', '\\x00', 'k', 0, 0 FROM generate_series(1, 10005) AS i`,
  );
  const v = await s.changeVersion();
  t.equal(v - v0, 10005n);
  const kept = await sql.query<{ n: string; lo: string }>(
    'SELECT COUNT(*) AS n, MIN(version) AS lo FROM store_change_log',
  );
  t.equal(Number(kept.rows[0]?.n), 10_000);
  t.equal(BigInt(kept.rows[0]?.lo ?? 0), v - 9_999n, 'the newest ones');
  t.equal((await s.changesBetween(v0, v)).length, 10_000, 'fewer rows than versions: a reader knows it is behind');
});

t.test('a database with keys and secrets written before the log existed: the log starts at its counter', async (t) => {
  const url = await server.createDatabase();
  const m = await openPgStore(url, { clock, checkSchema: false, masterKey: masterKey(1) });
  t.teardown(() => m.close());
  t.same(await migratePg(m.pool, clock.now(), PG_MIGRATIONS.slice(0, 3)), [1, 2, 3]);
  const before = await m.apiKeys.create({ workspace: 'w' });
  await m.secrets.set('openai-main', 'sk-1');
  const v3 = await m.changeVersion();
  t.ok(v3 > 0n, 'the counter moved before the log existed');
  t.same(await m.migrate(), [4]);
  t.equal(await m.changeVersion(), v3, 'the counter carries on');
  await m.apiKeys.revoke(before.id);
  const v = await m.changeVersion();
  t.same(await m.changesBetween(v3, v), [{ kind: 'key', ref: before.id }]);
  t.equal(
    (await m.changesBetween(0n, v)).length,
    1,
    'older versions are not in the log: a node that far behind reloads',
  );
});
