// The owner lock (src/store/sqlite/owner-lock.ts): one holder at a time (in this process too), given back
// on release, never created just to ask whether a server runs; a directory that does not exist is
// named. That it dies with its process is shown in test/spec/operations/ownership.test.ts.
import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { acquireOwnerLock, OwnerLockError, ownerLockFile, ownerLockHeld } from '../../../src/store/sqlite/store.ts';

t.test('one holder at a time; release gives it back', async (t) => {
  const db = join(t.testdir({}), 'gateway.db');
  t.equal(ownerLockHeld(db), false, 'no server yet');
  t.notOk(existsSync(ownerLockFile(db)), 'asking created no file');
  const a = acquireOwnerLock(db);
  t.ok(a, 'taken');
  t.equal(acquireOwnerLock(db), null, 'a second taker is refused');
  t.equal(ownerLockHeld(db), true);
  a?.release();
  a?.release();
  t.equal(ownerLockHeld(db), false, 'released');
  const b = acquireOwnerLock(db);
  t.ok(b, 'taken again');
  b?.release();
  t.ok(existsSync(ownerLockFile(db)), 'the lock file stays (never deleted)');
  t.notOk(existsSync(`${ownerLockFile(db)}-journal`), 'no journal file beside it');
});

t.test('a missing directory is named', async (t) => {
  const db = join(t.testdir({}), 'nope', 'gateway.db');
  t.throws(() => acquireOwnerLock(db), OwnerLockError);
  t.throws(() => acquireOwnerLock(db), { message: /cannot open database .*: the directory .*nope does not exist/ });
});
