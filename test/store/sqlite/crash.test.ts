// Crash safety: a gateway-like writer (the wallet book's group commits, plus CLI-style credits)
// SIGKILLed mid-burst leaves a consistent ledger in which every reported commit is present exactly
// once; its open holds are released at the next startup. Also with holds settled in the very commit
// that took them (which write no holds row).
import t from 'tap';
import { openDatabase } from '../../../src/store/sqlite/db.ts';
import { openStore } from '../../../src/store/sqlite/store.ts';
import { spawnFixture, watch } from './fixtures/child.ts';
import { tempDbFile } from './fixtures/temp-db.ts';

/** The child should reach the kill point in well under a second; this only stops a stuck run. */
const WATCHDOG_MS = 60_000;

for (const [killAfter, mode] of [
  [60, 'split'],
  [400, 'split'],
  [1200, 'split'],
  [400, 'paired'],
  [1200, 'paired'],
] as const) {
  const paired = mode === 'paired' ? ', some holds settled in the commit that took them' : '';
  t.test(`SIGKILL after ${killAfter} reported commits${paired}`, async (t) => {
    const file = tempDbFile(t);
    openStore(file).close(); // migrate before the child starts, so the kill never lands in a migration
    const reported: { kind: string; trace: string }[] = [];
    const child = spawnFixture('crash-worker.ts', [file, 'acme', mode]);
    let stuck = false;
    const watchdog = setTimeout(() => {
      stuck = true;
      child.kill('SIGKILL');
    }, WATCHDOG_MS);
    const exit = await watch(child, (line) => {
      const [kind, trace] = line.split(' ') as [string, string];
      if (kind === 'pid') return;
      reported.push({ kind, trace });
      if (reported.length === killAfter) child.kill('SIGKILL');
    });
    clearTimeout(watchdog);
    t.notOk(stuck, `the child reached ${killAfter} commits before the watchdog (got ${reported.length})`);
    t.equal(exit.signal, 'SIGKILL', exit.stderr);
    t.ok(reported.length >= killAfter);

    const store = openStore(file);
    const raw = openDatabase(file);
    const openTraces = raw
      .prepare("SELECT trace_id FROM holds WHERE state = 'open' ORDER BY created_at, trace_id")
      .pluck()
      .all() as string[];
    // The books agree; what verify names is each hold the crash left open (nothing will close it
    // before the next start releases it), and nothing else.
    t.same(
      store.wallets
        .verify()
        .problems.map(
          (p) =>
            /^hold (\S+) of workspace acme is open but nothing serves it: the process that took it \(pid \d+\) is gone/.exec(
              p,
            )?.[1] ?? p,
        ),
      openTraces,
      'after the crash, verify names exactly the holds it left open',
    );
    const rows = new Map<string, number>();
    for (const r of raw.prepare('SELECT trace_id, kind, COUNT(*) AS n FROM ledger GROUP BY trace_id, kind').all() as {
      trace_id: string;
      kind: string;
      n: number;
    }[]) {
      rows.set(`${r.kind} ${r.trace_id}`, r.n);
    }
    const notOnce = reported.filter((r) => rows.get(`${r.kind} ${r.trace}`) !== 1);
    t.same(notOnce, [], `all ${reported.length} reported commits present exactly once`);
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
