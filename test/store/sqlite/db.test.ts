// Opening the database: pragmas, versioned migrations run once and atomically, read-only mode.
import t from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import Database from 'better-sqlite3';
import { StoreError } from '../../../src/store/errors.ts';
import { migrate, openDatabase, PAGE_CACHE_KIB, PAGE_SIZE } from '../../../src/store/sqlite/db.ts';
import { MIGRATIONS } from '../../../src/store/sqlite/migrations.ts';
import { openStore } from '../../../src/store/sqlite/store.ts';
import { hold, write } from './fixtures/ledger.ts';
import { tempDbFile } from './fixtures/temp-db.ts';

const clock = new ManualClock();
const LATEST = Math.max(...MIGRATIONS.map((m) => m.version));

t.test('pragmas: WAL, synchronous NORMAL, foreign keys, busy timeout', async (t) => {
  const db = openDatabase(tempDbFile(t), { clock });
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  t.equal(db.pragma('synchronous', { simple: true }), 1, 'NORMAL');
  t.equal(db.pragma('foreign_keys', { simple: true }), 1);
  t.equal(db.pragma('busy_timeout', { simple: true }), 5000);
  db.close();
});

t.test("every connection's page cache is bounded well below better-sqlite3's 16 MB default", async (t) => {
  const file = tempDbFile(t);
  const db = openDatabase(file, { clock });
  t.equal(db.pragma('cache_size', { simple: true }), -PAGE_CACHE_KIB, 'a writing connection');
  const ro = openDatabase(file, { readonly: true });
  t.equal(ro.pragma('cache_size', { simple: true }), -PAGE_CACHE_KIB, 'a read-only one');
  t.equal(new Database(':memory:').pragma('cache_size', { simple: true }), -16000, 'the package default it replaces');
  t.ok(PAGE_CACHE_KIB <= 4096, `${PAGE_CACHE_KIB} KiB`);
  ro.close();
  db.close();
});

t.test('a new file gets the small page size; a database made with another keeps its own', async (t) => {
  const db = openDatabase(tempDbFile(t), { clock });
  t.equal(db.pragma('page_size', { simple: true }), PAGE_SIZE);
  t.equal(PAGE_SIZE, 1024, 'a commit rewrites whole pages: 1 KiB ones');
  db.close();
  const file = tempDbFile(t);
  const made = new Database(file);
  made.pragma('page_size = 4096');
  made.exec('CREATE TABLE before_us (x INTEGER)');
  made.close();
  const old = openDatabase(file, { clock });
  t.equal(old.pragma('page_size', { simple: true }), 4096, 'not rewritten on open');
  t.equal(old.pragma('journal_mode', { simple: true }), 'wal');
  old.close();
  const s = openStore(file, { clock });
  s.wallets.credit('w', 10n, 'works as before');
  t.same(s.wallets.verify(), { ok: true, problems: [] });
  s.close();
});

t.test('migrations run once, in order, and are recorded', async (t) => {
  const file = tempDbFile(t);
  const db = openDatabase(file, { clock });
  const rows = db.prepare('SELECT version, name, applied_at FROM schema_migrations ORDER BY version').all();
  t.same(
    rows,
    MIGRATIONS.map((m) => ({ version: m.version, name: m.name, applied_at: clock.now() })),
  );
  t.same(migrate(db, MIGRATIONS, clock), [], 'a second run applies nothing');
  db.close();

  clock.advance(1000);
  const again = openDatabase(file, { clock });
  t.equal(
    again.prepare('SELECT COUNT(*) FROM schema_migrations').pluck().get(),
    MIGRATIONS.length,
    'reopen adds no rows',
  );
  const extra = [
    ...MIGRATIONS,
    { version: LATEST + 2, name: 'two', sql: 'ALTER TABLE t2 ADD COLUMN b INTEGER' },
    { version: LATEST + 1, name: 'one', sql: 'CREATE TABLE t2 (a INTEGER)' },
  ];
  t.same(migrate(again, extra, clock), [LATEST + 1, LATEST + 2], 'new versions applied in version order');
  t.same(migrate(again, extra, clock), []);
  again.close();
});

t.test('a database made by an earlier build is upgraded in place', async (t) => {
  const file = tempDbFile(t);
  const v1 = openDatabase(file, { clock, migrations: MIGRATIONS.filter((m) => m.version === 1) });
  v1.prepare("INSERT INTO wallets (workspace, balance_nano, held_nano, updated_at) VALUES ('w', 0, 0, 0)").run();
  v1.close();
  const store = openStore(file, { clock });
  store.wallets.credit('w', 10n, 'after upgrade');
  write(store, hold('w', 'h', 5n));
  t.equal(store.wallets.show('w', 0).held, 5n, 'holds work on the upgraded schema');
  t.same(store.wallets.verify(), { ok: true, problems: [] });
  store.close();
});

t.test('a failing migration rolls back entirely', async (t) => {
  const db = openDatabase(tempDbFile(t), { clock });
  const bad = [
    ...MIGRATIONS,
    { version: LATEST + 1, name: 'bad', sql: 'CREATE TABLE half (a INTEGER); CREATE TABLE oops (' },
  ];
  t.throws(() => migrate(db, bad, clock));
  t.equal(db.prepare('SELECT MAX(version) FROM schema_migrations').pluck().get(), LATEST);
  t.notOk(db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'half'").get(), 'partial DDL undone');
  db.close();
});

t.test('a database newer than the build is refused', async (t) => {
  const file = tempDbFile(t);
  const db = openDatabase(file, {
    clock,
    migrations: [...MIGRATIONS, { version: LATEST + 1, name: 'future', sql: 'SELECT 1' }],
  });
  db.close();
  t.throws(() => openDatabase(file, { clock }), /newer than this build/);
  t.throws(() => openDatabase(file, { clock, readonly: true }), StoreError);
});

t.test('read-only: file must exist and be migrated; writes refused', async (t) => {
  const file = tempDbFile(t);
  t.throws(() => openStore(file, { readonly: true }), /cannot open database .* read-only/);
  openStore(file, { clock }).close();
  const ro = openStore(file, { clock, readonly: true });
  t.same(ro.apiKeys.list(), []);
  t.throws(() => ro.wallets.credit('w', 1n, 'x'), /readonly/);
  t.throws(() => ro.requestLog.append({} as never), /read-only/);
  ro.close();
  ro.close();
  t.pass('close is idempotent');
});

t.test(
  'changedSinceLastCheck sees commits of other connections, and only the own writes caches depend on',
  async (t) => {
    const file = tempDbFile(t);
    const a = openStore(file, { clock });
    const b = openStore(file, { clock });
    t.equal(a.changedSinceLastCheck(), false);
    a.wallets.credit('w', 5n, 'own credit');
    t.equal(a.changedSinceLastCheck(), true, 'an own credit counts: the gateway wallet book reloads balances');
    t.equal(a.changedSinceLastCheck(), false, 'reported once');
    write(a, hold('w', 'trace-own', 1n));
    t.equal(a.changedSinceLastCheck(), false, 'own holds (every request, group-committed) do not count');
    b.apiKeys.create({ workspace: 'w' });
    t.equal(a.changedSinceLastCheck(), true);
    t.equal(a.changedSinceLastCheck(), false, 'reset after the call');
    a.close();
    b.close();
  },
);
