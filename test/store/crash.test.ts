// Crash safety: a writer SIGKILLed mid-burst leaves a consistent ledger in which every reported
// commit is present exactly once; its open holds are released at the next startup.
import t from 'tap';
import { openDatabase } from '../../src/store/db.ts';
import { openStore } from '../../src/store/store.ts';
import { spawnFixture, watch } from './fixtures/child.ts';
import { tempDbFile } from './fixtures/temp-db.ts';

for (const killAfter of [150, 900, 2500]) {
  t.test(`SIGKILL after ${killAfter} reported commits`, async (t) => {
    const file = tempDbFile(t);
    openStore(file).close(); // migrate before the child starts, so the kill never lands in a migration
    const reported: { kind: string; trace: string }[] = [];
    const child = spawnFixture('crash-worker.ts', [file, 'acme']);
    const exit = await watch(child, (line) => {
      const [kind, trace] = line.split(' ') as [string, string];
      if (kind === 'pid') return;
      reported.push({ kind, trace });
      if (reported.length === killAfter) child.kill('SIGKILL');
    });
    t.equal(exit.signal, 'SIGKILL', exit.stderr);
    t.ok(reported.length >= killAfter);

    const store = openStore(file);
    t.same(store.wallets.verify(), { ok: true, problems: [] }, 'verify passes after the crash');
    const raw = openDatabase(file);
    const count = raw.prepare('SELECT COUNT(*) FROM ledger WHERE trace_id = ? AND kind = ?').pluck();
    let missing = 0;
    for (const r of reported) if (count.get(r.trace, r.kind) !== 1) missing++;
    t.equal(missing, 0, `all ${reported.length} reported commits present exactly once`);
    const open = () => raw.prepare("SELECT COUNT(*) FROM holds WHERE state = 'open'").pluck().get() as number;
    t.ok(open() > 0, 'the crash left open holds');
    const before = store.wallets.show('acme', 0);
    t.equal(store.wallets.releaseOrphanedHolds(), before.openHolds, 'every open hold was an orphan');
    t.equal(open(), 0, 'no hold is open after releaseOrphanedHolds');
    const after = store.wallets.show('acme', 0);
    t.equal(after.balance, before.balance, 'releasing charges nothing');
    t.equal(after.held, 0n);
    t.same(store.wallets.verify(), { ok: true, problems: [] });
    raw.close();
    store.close();
  });
}
