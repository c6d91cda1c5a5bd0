// The gateway's wallet book: admission in memory, holds/settlements/releases group-committed to the
// ledger, a settlement's promise resolving only once it is committed, and recovery from a failed batch.
import t from 'tap';
import { ManualClock } from '../../src/clock.ts';
import { openStore, type Store, WalletBook } from '../../src/store/store.ts';

function fresh(t: { teardown(fn: () => void): void }): { store: Store; book: WalletBook; errors: unknown[] } {
  const store = openStore(':memory:', { clock: new ManualClock('2026-01-15T12:00:00Z') });
  const errors: unknown[] = [];
  const book = new WalletBook(store, (e) => errors.push(e));
  t.teardown(() => {
    book.close();
    store.close();
  });
  return { store, book, errors };
}

const tick = () => new Promise((r) => setImmediate(r));

t.test('admits against memory, never beyond the balance', async (t) => {
  const { store, book } = fresh(t);
  store.wallets.credit('w', 1000n, 'seed');
  const admitted = Array.from({ length: 200 }, (_, i) => book.hold('w', `t${i}`, 300n).ok).filter(Boolean).length;
  t.equal(admitted, 3, 'floor(1000 / 300) holds');
  t.same(book.view('w'), { balance: 1000n, held: 900n, available: 100n });
  t.match(book.hold('w', 'x', 101n), { ok: false, available: 100n });
});

t.test('one event-loop turn is one transaction; the ledger matches memory', async (t) => {
  const { store, book } = fresh(t);
  store.wallets.credit('w', 10_000n, 'seed');
  let batches = 0;
  const batch = store.batch.bind(store);
  store.batch = (fn) => {
    batches++;
    return batch(fn);
  };
  for (let i = 0; i < 50; i++) book.hold('w', `t${i}`, 100n);
  t.equal(store.wallets.show('w', 0).held, 0n, 'nothing written yet');
  await tick();
  t.equal(batches, 1, 'fifty holds, one transaction');
  t.equal(store.wallets.show('w', 0).held, 5000n);
  const settled = Promise.all(Array.from({ length: 25 }, (_, i) => book.settle(`t${i}`, 40n, { model: 'm' })));
  for (let i = 25; i < 50; i++) book.release(`t${i}`);
  t.same(await settled, Array(25).fill(true));
  t.equal(batches, 2, 'twenty-five settlements and releases, one more transaction');
  const v = store.wallets.show('w', 0);
  t.equal(v.balance, 10_000n - 25n * 40n);
  t.equal(v.held, 0n);
  t.same(book.view('w'), { balance: v.balance, held: 0n, available: v.balance });
  t.same(store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a settlement resolves only after its row is committed', async (t) => {
  const { store, book } = fresh(t);
  store.wallets.credit('w', 1000n, 'seed');
  book.hold('w', 'a', 500n);
  const p = book.settle('a', 123n, {});
  t.equal(store.wallets.show('w', 0).balance, 1000n, 'not yet written when settle returns');
  t.equal(await p, true);
  t.equal(store.wallets.show('w', 0).balance, 877n, 'written by the time it resolves');
  t.equal(await book.settle('a', 123n, {}), false, 'a second settle is a no-op');
  book.release('a');
  book.release('never-held');
  await tick();
  t.same(store.wallets.verify(), { ok: true, problems: [] });
});

t.test('refresh reloads a credit made elsewhere, after writing what is pending', async (t) => {
  const { store, book } = fresh(t);
  store.wallets.credit('w', 100n, 'seed');
  t.equal(book.hold('w', 'a', 100n).ok, true);
  t.equal(book.hold('w', 'b', 1n).ok, false);
  store.wallets.credit('w', 50n, 'top-up');
  book.refresh();
  t.same(book.view('w'), { balance: 150n, held: 100n, available: 50n });
  t.equal(store.wallets.show('w', 0).held, 100n, 'the pending hold was written first');
  t.equal(book.hold('w', 'b', 50n).ok, true);
});

t.test('a failed batch rejects its settlements, forgets its holds and rebuilds memory', async (t) => {
  const { store, book, errors } = fresh(t);
  store.wallets.credit('w', 1000n, 'seed');
  book.hold('w', 'kept', 100n);
  book.flush();
  const batch = store.batch.bind(store);
  store.batch = () => {
    throw new Error('disk full');
  };
  book.hold('w', 'lost', 200n);
  const p = book.settle('kept', 50n, {});
  await t.rejects(p, /disk full/);
  t.equal(errors.length, 1);
  store.batch = batch;
  t.same(book.view('w'), { balance: 1000n, held: 100n, available: 900n }, 'memory = the ledger again');
  t.equal(await book.settle('lost', 10n, {}), false, 'the lost hold is forgotten');
  book.release('kept');
  book.flush();
  t.same(store.wallets.verify(), { ok: true, problems: [] });
  t.equal(store.wallets.show('w', 0).balance, 1000n);
});
