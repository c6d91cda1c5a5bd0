// An idle writer empties its WAL: when (once per idle spell, a set time after its last commit, the
// clock injected) and how (a TRUNCATE checkpoint that never waits for a reader in its way).
import { statSync } from 'node:fs';
import t from 'tap';
import { ManualClock } from '../../src/clock.ts';
import { BUSY_TIMEOUT_MS, openDatabase } from '../../src/store/db.ts';
import { IdleWalTruncation, truncateWal } from '../../src/store/idle-wal.ts';
import { tempDbFile } from './fixtures/temp-db.ts';

t.test('due once per idle spell, the set time after the last commit', async (t) => {
  const clock = new ManualClock();
  const idle = new IdleWalTruncation(clock, 10_000);
  clock.advance(60_000);
  t.equal(idle.due(), false, 'nothing committed yet: nothing to empty');
  idle.committed();
  clock.advance(9_999);
  t.equal(idle.due(), false, 'not idle long enough');
  idle.committed();
  clock.advance(9_999);
  t.equal(idle.due(), false, 'a commit starts the idle spell over');
  clock.advance(1);
  t.equal(idle.due(), true, 'idle the set time since the last commit');
  idle.attempted(false);
  t.equal(idle.due(), true, 'a busy attempt is tried again');
  idle.attempted(true);
  clock.advance(60_000);
  t.equal(idle.due(), false, 'emptied: nothing to do until the next commit');
  idle.committed();
  clock.advance(10_000);
  t.equal(idle.due(), true, 'the next idle spell');
});

t.test('truncateWal empties the WAL, and gives up at once when a reader holds it', async (t) => {
  const file = tempDbFile(t);
  const db = openDatabase(file);
  t.teardown(() => db.close());
  db.exec('CREATE TABLE x (v TEXT)');
  const insert = db.prepare('INSERT INTO x (v) VALUES (?)');
  for (let i = 0; i < 200; i++) insert.run('x'.repeat(500));
  t.ok(statSync(`${file}-wal`).size > 0, 'the WAL holds frames');

  const reader = openDatabase(file, { readonly: true });
  t.teardown(() => reader.close());
  reader.exec('BEGIN');
  reader.prepare('SELECT COUNT(*) FROM x').get();
  const t0 = performance.now();
  t.equal(truncateWal(db, BUSY_TIMEOUT_MS), false, 'a read transaction on the WAL: not emptied');
  t.ok(performance.now() - t0 < 1000, 'without waiting for the reader');
  t.ok(statSync(`${file}-wal`).size > 0, 'the WAL is left as it was');
  t.equal(db.pragma('busy_timeout', { simple: true }), BUSY_TIMEOUT_MS, 'the busy timeout is restored');
  reader.exec('COMMIT');

  t.equal(truncateWal(db, BUSY_TIMEOUT_MS), true, 'no reader: emptied');
  t.equal(statSync(`${file}-wal`).size, 0, 'the WAL is zero bytes');
  t.equal(db.prepare('SELECT COUNT(*) AS n FROM x').get()?.['n' as never], 200, 'every row is in the database');
  insert.run('after');
  t.ok(statSync(`${file}-wal`).size > 0, 'the next commit writes the WAL again');
});
