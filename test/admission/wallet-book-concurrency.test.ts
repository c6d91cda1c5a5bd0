// Admission under concurrency, on the path the gateway takes (its wallet book admits in memory and
// group-commits the ledger): 200 interleaved admissions against a wallet worth a few requests never
// overdraw, whether the ledger is read from other connections mid-burst or other processes (the CLI)
// write to the same file meanwhile. One gateway process owns a file's admission (docs/operations.md: Limits).
import t from 'tap';
import { WalletBook } from '../../src/admission/wallet-book.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { spawnFixture, watch } from '../store/sqlite/fixtures/child.ts';
import { tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';

const HOLD = 300n;
const BALANCE = 7n * HOLD + 123n; // worth 7 requests

const tick = () => new Promise((r) => setImmediate(r));

t.test('200 concurrent admissions in one process, over 3 connections', async (t) => {
  const file = tempDbFile(t);
  const stores = [openStore(file), openStore(file), openStore(file)];
  stores[2]!.wallets.credit('acme', BALANCE, 'seed');
  stores[2]!.wallets.credit('other', 1_000n, 'seed');
  const book = new WalletBook(stores[0]!);
  let commits = 0;
  const batch = stores[0]!.batch.bind(stores[0]);
  stores[0]!.batch = (fn) => {
    commits++;
    return batch(fn);
  };
  const attempts = Array.from({ length: 200 }, (_, i) => async () => {
    await Promise.resolve();
    // Spread over several event-loop turns, so group commits land between admissions.
    for (let k = 0; k < i % 4; k++) await tick();
    // A mix: every tenth attempt is a request for another workspace, which must not interfere.
    if (i % 10 === 9) return book.hold('other', `o-${i}`, 1n).ok ? 'other' : 'refused';
    // Readers on the other connections mid-burst never see an overdraft.
    const seen = stores[1 + (i % 2)]!.wallets.show('acme', 0);
    if (seen.available < 0n || seen.held > seen.balance) return 'overdrawn';
    return book.hold('acme', `r-${i}`, HOLD).ok ? 'admitted' : 'refused';
  });
  const results = await Promise.all(attempts.map((f) => f()));
  t.equal(results.filter((r) => r === 'other').length, 20, 'the other workspace was admitted throughout');
  t.equal(results.filter((r) => r === 'overdrawn').length, 0);
  book.flush();
  t.ok(commits > 1, `admissions spanned ${commits} group commits`);
  t.equal(results.filter((r) => r === 'admitted').length, Number(BALANCE / HOLD));
  const v = stores[1]!.wallets.show('acme', 0);
  t.same([v.balance, v.held, v.available], [BALANCE, 7n * HOLD, 123n]);
  t.ok(v.available >= 0n);
  t.same(book.view('acme'), { balance: BALANCE, held: 7n * HOLD, available: 123n }, 'memory = the ledger');
  t.same(stores[2]!.wallets.verify(), { ok: true, problems: [] });
  book.close();
  for (const s of stores) s.close();
});

t.test('200 admissions while 4 other processes write to the file', async (t) => {
  const file = tempDbFile(t);
  const store = openStore(file);
  store.wallets.credit('acme', BALANCE, 'seed');
  const book = new WalletBook(store);
  const children = [0, 1, 2, 3].map((n) => spawnFixture('credit-worker.ts', [file, `cli-${n}`, '50']));
  let ready = 0;
  let go: () => void = () => {};
  const allReady = new Promise<void>((resolve) => (go = resolve));
  const outputs: { credits: number }[] = [];
  const exits = Promise.all(
    children.map((c) =>
      watch(c, (line) => {
        if (line === 'ready' && ++ready === children.length) go();
        else if (line.startsWith('{')) outputs.push(JSON.parse(line) as { credits: number });
      }),
    ),
  );
  await allReady;
  // Released together so their commits contend with the book's group commits for the write lock.
  for (const c of children) c.stdin.end('go\n');
  let admitted = 0;
  let refused = 0;
  let refreshes = 0;
  for (let i = 0; i < 200; i++) {
    // What StoreView.sync does once per request: another process committed, so write what is
    // pending and reload balances.
    if (store.changedSinceLastCheck()) {
      book.refresh();
      refreshes++;
    }
    if (book.hold('acme', `r-${i}`, HOLD).ok) admitted++;
    else refused++;
    await tick();
  }
  const ends = await exits;
  for (const e of ends) t.equal(e.code, 0, e.stderr);
  t.same(outputs, [{ credits: 50 }, { credits: 50 }, { credits: 50 }, { credits: 50 }]);
  t.comment(`${refreshes} refreshes while the other processes wrote`);
  book.flush();
  t.equal(admitted, Number(BALANCE / HOLD), 'admitted = floor(balance / hold)');
  t.equal(refused, 200 - Number(BALANCE / HOLD));
  const v = store.wallets.show('acme', 0);
  t.same([v.balance, v.held, v.available, v.openHolds], [BALANCE, 7n * HOLD, 123n, 7]);
  t.same(store.wallets.verify(), { ok: true, problems: [] });
  t.equal(store.wallets.show('cli-3', 0).balance, 50_000n, 'the other processes committed too');
  book.close();
  store.close();
  // The gateway is gone (its store closed): its holds are orphans for the next start.
  const next = openStore(file);
  t.equal(next.wallets.releaseOrphanedHolds(), 7, 'the gateway exited, so its holds are orphans');
  t.equal(next.wallets.show('acme', 0).available, BALANCE);
  next.close();
});
