// The database and every file beside it (key hashes, sealed secrets, the ledger; who owns it) are
// created readable by their owner only, 0600, whatever the umask.
import t from 'tap';
import { chmodSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { claimDatabase, configDirFile, pidFile, reloadFile } from '../../src/runtime/owner-files.ts';
import { ManualClock } from '../../src/clock.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { tempDir } from '../helpers/admission.ts';

function mode(file: string): string {
  return (statSync(file).mode & 0o777).toString(8).padStart(3, '0');
}

t.test(
  'with umask 000: the database, its -wal and -shm, .lock, .pid, .config-dir and .reload.json are 0600',
  async (t) => {
    const previous = process.umask(0o000);
    t.teardown(() => void process.umask(previous));
    const db = join(tempDir(t, 'pi-modes-'), 'gateway.db');
    const owner = claimDatabase(db, { configDir: 'config' });
    const store = openStore(db, { clock: new ManualClock(Date.UTC(2026, 0, 1)) });
    store.apiKeys.create({ workspace: 'acme', name: 'k' });
    owner.recordReload({ ok: true, hash: 'h', problems: [], restartNeeded: [], at: 0 });
    try {
      for (const file of [db, `${db}-wal`, `${db}-shm`, `${db}.lock`, pidFile(db), configDirFile(db), reloadFile(db)])
        t.equal(mode(file), '600', file);
    } finally {
      store.close();
      owner.release();
    }
  },
);

t.test('an existing database keeps the mode its operator gave it', async (t) => {
  const db = join(tempDir(t, 'pi-modes-'), 'gateway.db');
  writeFileSync(db, '');
  chmodSync(db, 0o640);
  const store = openStore(db);
  store.close();
  t.equal(mode(db), '640');
});
