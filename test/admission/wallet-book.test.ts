// The gateway's wallet book: admission in memory (never beyond the balance, one hold per trace,
// idempotent closes), holds/settlements/releases group-committed to the ledger, a settlement's promise
// resolving only once it is committed, and recovery from a failed batch.
import t from 'tap';
import { WalletBook } from '../../src/admission/wallet-book.ts';
import { ManualClock } from '../../src/clock.ts';
import { type LedgerOp, openStore, type Store, WalletError } from '../../src/store/sqlite/store.ts';

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

t.test('credit, hold, settle, release', async (t) => {
  const clock = new ManualClock('2026-01-15T23:59:00Z');
  const store = openStore(':memory:', { clock });
  const book = new WalletBook(store);
  t.teardown(() => {
    book.close();
    store.close();
  });
  const w = store.wallets;
  /** The wallet as the ledger has it, once the book wrote what is pending. */
  const ledger = (at = clock.now()) => {
    book.flush();
    return w.show('acme', at);
  };
  t.same(ledger(), { workspace: 'acme', balance: 0n, held: 0n, available: 0n, spendToday: 0n, openHolds: 0 });
  t.same(book.hold('acme', 'r0', 1n), { ok: false, available: 0n }, 'no wallet: nothing available');
  t.same(book.hold('acme', 'r0b', 0n), { ok: true }, 'a zero hold fits an empty wallet');

  const c = w.credit('acme', 1_000n, 'top-up');
  t.match(c.traceId, /^credit_[0-9a-f-]{36}$/);
  t.equal(c.balance, 1_000n);
  book.refresh(); // what StoreView.sync triggers when it notices the credit
  t.same(book.hold('acme', 'r1', 600n), { ok: true });
  t.same(book.hold('acme', 'r2', 401n), { ok: false, available: 400n });
  t.same(book.hold('acme', 'r2', 400n), { ok: true }, 'a refused trace may try again');
  t.throws(() => book.hold('acme', 'r1', 1n), WalletError, 'a trace holds once');
  t.throws(() => book.hold('acme', 'r1', 1n), { code: 'duplicate_trace' });
  t.same(ledger(), { workspace: 'acme', balance: 1_000n, held: 1_000n, available: 0n, spendToday: 0n, openHolds: 3 });

  t.equal(
    await book.settle('r1', 550n, {
      model: 'openai/gpt-4o',
      provider: 'openai',
      deployment: 'openai/gpt-4o',
      promptTokens: 10,
    }),
    true,
  );
  t.equal(await book.settle('r1', 550n, {}), false, 'second settle is a no-op');
  book.release('r1');
  t.same([ledger().held, ledger().balance, ledger().openHolds], [400n, 450n, 2], 'release after settle is a no-op');
  book.release('r2');
  t.same([ledger().held, ledger().openHolds], [0n, 1], 'release closes the hold at zero cost');
  book.release('r2');
  t.same([ledger().held, ledger().balance, ledger().openHolds], [0n, 450n, 1], 'a second release is a no-op');
  t.equal(await book.settle('r2', 5n, {}), false, 'settle after release is a no-op');
  book.release('never-held');
  t.equal(await book.settle('never-held', 5n, {}), false, 'settling a trace that never held charges nothing');
  t.same(book.view('acme'), { balance: 450n, held: 0n, available: 450n });
  t.equal(await book.settle('r0b', 0n, { model: 'a/free', provider: 'p' }), true);

  clock.advance(60_000); // next UTC day
  t.same(book.hold('acme', 'r3', 100n), { ok: true });
  t.equal(await book.settle('r3', 200n, { model: 'openai/gpt-4o', provider: 'azure' }), true, 'cost above the hold');
  t.same(ledger(), { workspace: 'acme', balance: 250n, held: 0n, available: 250n, spendToday: 200n, openHolds: 0 });
  t.equal(ledger(clock.now() - 60_000).spendToday, 550n, 'spend is per UTC day');
  t.same(book.view('acme'), { balance: 250n, held: 0n, available: 250n }, 'memory = the ledger');

  t.same(w.usage('acme'), [
    { model: 'openai/gpt-4o', provider: 'openai', requests: 1, costNano: 550n },
    { model: 'openai/gpt-4o', provider: 'azure', requests: 1, costNano: 200n },
    { model: 'a/free', provider: 'p', requests: 1, costNano: 0n },
  ]);
  t.same(w.verify(), { ok: true, problems: [] });

  t.throws(() => book.hold('acme', 'r9', -1n), RangeError);
  t.throws(() => book.hold('acme', 'r9', 1 as unknown as bigint), RangeError, 'numbers are refused');
  t.throws(() => book.hold('', 'r9', 1n), RangeError);
  t.throws(() => book.hold('acme', '', 1n), RangeError);
  t.throws(() => book.settle('r3', -1n, {}), RangeError);
  t.same(w.workspaces(), ['acme']);
});

t.test('overdraft: holds refused while available is negative', async (t) => {
  const { store, book } = fresh(t);
  store.wallets.credit('w', 100n, '');
  t.same(book.hold('w', 'a', 100n), { ok: true });
  t.equal(await book.settle('a', 250n, {}), true);
  t.equal(store.wallets.show('w', 0).balance, -150n);
  t.same(book.hold('w', 'b', 0n), { ok: false, available: -150n });
  book.flush();
  t.same(store.wallets.verify(), { ok: true, problems: [] });
});

t.test(
  'a trace id reused after its hold closed is refused alone, loudly; the rest of its batch is written',
  async (t) => {
    const { store, book, errors } = fresh(t);
    store.wallets.credit('w', 1000n, 'seed');
    book.hold('w', 'once', 100n);
    t.equal(await book.settle('once', 10n, {}), true);
    t.same(book.hold('w', 'once', 100n), { ok: true }, 'the book no longer knows the closed trace');
    book.hold('w', 'same-turn', 50n);
    book.flush();
    t.equal(errors.length, 1, 'the refused hold was reported');
    t.match(String(errors[0]), /hold of trace once/);
    t.same(book.view('w'), { balance: 990n, held: 50n, available: 940n }, 'memory = the ledger again');
    t.same(store.wallets.show('w', 0).openHolds, 1, 'the other hold of the batch was written');
    t.equal(await book.settle('once', 10n, {}), false, 'the refused hold is forgotten');
    book.release('same-turn');
    book.flush();
    t.same(store.wallets.verify(), { ok: true, problems: [] });
  },
);

t.test(
  'a settlement the store cannot hold is refused alone: the others of its group commit are written, its hold released',
  async (t) => {
    const { store, book, errors } = fresh(t);
    store.wallets.credit('w', 1000n, 'seed');
    store.wallets.credit('v', 1000n, 'seed');
    for (const trace of ['a', 'b', 'c']) book.hold('w', trace, 100n);
    book.hold('v', 'other-workspace', 100n);
    book.flush();
    // One turn, one transaction: four settlements, one priced beyond what the ledger's columns hold.
    const settled = [
      book.settle('a', 40n, {}),
      book.settle('b', 2n ** 63n, {}),
      book.settle('c', 60n, {}),
      book.settle('other-workspace', 70n, {}),
    ];
    book.flush();
    const results = await Promise.allSettled(settled);
    t.same(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
      'only the oversized settlement is refused',
    );
    t.match(String((results[1] as PromiseRejectedResult).reason), /amount_out_of_range|outside what the ledger holds/);
    t.equal(errors.length, 1, 'and reported');
    t.same(
      book.view('w'),
      { balance: 900n, held: 0n, available: 900n },
      'memory = the ledger: two charges, no hold left',
    );
    t.match(store.wallets.show('w', 0), { balance: 900n, held: 0n, openHolds: 0 }, 'the ledger agrees');
    t.equal(store.wallets.show('v', 0).balance, 930n, "another workspace's settlement in the same commit is written");
    const b = store.wallets.ledgerOf('b');
    t.same(
      b.map((e) => [e.kind, e.amount]),
      [
        ['hold', 100n],
        ['release', 100n],
      ],
      'the refused settlement’s hold is released, charging nothing',
    );
    t.match(b[1]?.note, /settlement refused by the store/);
    t.same(store.wallets.verify(), { ok: true, problems: [] });
  },
);

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

t.test('with a hold delay, a hold waits for its own close, or goes once the delay is over', async (t) => {
  const store = openStore(':memory:', { clock: new ManualClock('2026-01-15T12:00:00Z') });
  store.wallets.credit('w', 10_000n, 'seed');
  /** What the writer thread would receive: each batch's operations, acknowledged on the next turn. */
  const sent: string[][] = [];
  let last: Promise<undefined> = Promise.resolve(undefined);
  const writer = {
    commit: (ops: LedgerOp[]) => {
      sent.push(ops.map((o) => `${o.kind}:${o.traceId}`));
      last = new Promise<undefined>((resolve) =>
        setImmediate(() => resolve(store.batch(() => void store.wallets.apply(ops)))),
      );
      return last;
    },
    commitNow: (ops: LedgerOp[]): undefined => {
      sent.push(ops.map((o) => `${o.kind}:${o.traceId}`));
      store.batch(() => store.wallets.apply(ops));
    },
  };
  const never = new WalletBook(store, () => undefined, writer, 3_600_000);
  never.hold('w', 'a', 100n);
  for (let i = 0; i < 5; i++) await tick();
  t.same(sent, [], 'a hold alone waits (nobody waits on its row)');
  never.hold('w', 'b', 100n);
  t.equal(await never.settle('a', 40n, {}), true);
  t.same(sent, [['hold:a', 'settle:a']], 'the hold goes with its own settlement; the younger one waits for its close');
  never.hold('w', 'c', 100n);
  never.release('b');
  for (let i = 0; i < 3; i++) await tick();
  t.same(sent[1], ['hold:b', 'release:b'], 'a release is sent this turn, with its hold before it');
  never.hold('w', 'd', 100n);
  never.close();
  t.same(sent[2], ['hold:c', 'hold:d'], 'close writes the waiting holds');
  t.same(store.wallets.show('w', 0).openHolds, 2);

  sent.length = 0;
  const soon = new WalletBook(store, () => undefined, writer, 1);
  t.teardown(() => {
    soon.close();
    store.close();
  });
  soon.hold('w', 'e', 100n);
  await new Promise<void>((resolve) => {
    const check = (): void => void (sent.length > 0 ? resolve() : setImmediate(check));
    check();
  });
  t.same(sent, [['hold:e']], 'once the delay is over the hold goes alone');
  await last;
  t.equal(store.wallets.show('w', 0).openHolds, 3);
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

t.test('a failed batch rejects its settlements, forgets its holds, owes the closes of earlier holds', async (t) => {
  const { store, book, errors } = fresh(t);
  store.wallets.credit('w', 1000n, 'seed');
  book.hold('w', 'kept', 100n);
  book.hold('w', 'freed', 300n);
  book.flush();
  const batchEach = store.batchEach.bind(store);
  store.batchEach = () => {
    throw new Error('disk full');
  };
  book.hold('w', 'lost', 200n);
  const p = book.settle('kept', 50n, {});
  book.release('freed');
  await t.rejects(p, /disk full/);
  t.equal(errors.length, 1);
  t.same(
    book.view('w'),
    { balance: 1000n, held: 0n, available: 1000n },
    'memory = the ledger with what is owed: both earlier holds closed, nothing charged, the lost hold gone',
  );
  t.equal(await book.settle('lost', 10n, {}), false, 'the lost hold is forgotten');
  store.batchEach = batchEach;
  book.flush();
  const v = store.wallets.show('w', 0);
  t.same([v.balance, v.held, v.openHolds], [1000n, 0n, 0], 'the owed closes were written: no hold left open');
  const kept = store.wallets.ledgerOf('kept');
  t.same(
    kept.map((e) => [e.kind, e.amount]),
    [
      ['hold', 100n],
      ['release', 100n],
    ],
    'the settlement that was not written went as the release of its hold',
  );
  t.match(kept[1]?.note, /settlement not written: disk full/);
  t.same(
    store.wallets.ledgerOf('freed').map((e) => e.kind),
    ['hold', 'release'],
  );
  t.same(store.wallets.ledgerOf('lost'), [], 'the rolled-back hold left no row');
  t.same(store.wallets.verify(), { ok: true, problems: [] });
});

t.test('after a batch is rolled back, what it owes is retried later, not in a loop', async (t) => {
  const store = openStore(':memory:', { clock: new ManualClock('2026-01-15T12:00:00Z') });
  store.wallets.credit('w', 1000n, 'seed');
  let failing = true;
  const sent: string[][] = [];
  const writer = {
    commit: (ops: LedgerOp[]) => {
      sent.push(ops.map((o) => `${o.kind}:${o.traceId}`));
      return new Promise<undefined>((resolve, reject) =>
        setImmediate(() =>
          failing ? reject(new Error('disk I/O error')) : resolve(store.batch(() => void store.wallets.apply(ops))),
        ),
      );
    },
    commitNow: (ops: LedgerOp[]): undefined => {
      sent.push(ops.map((o) => `${o.kind}:${o.traceId}`));
      if (failing) throw new Error('disk I/O error');
      store.batch(() => store.wallets.apply(ops));
    },
  };
  const errors: unknown[] = [];
  const book = new WalletBook(store, (e) => errors.push(e), writer, 1);
  t.teardown(() => {
    book.close();
    store.close();
  });
  failing = false;
  book.hold('w', 'a', 400n);
  book.flush();
  failing = true;
  await t.rejects(book.settle('a', 40n, {}), /disk I\/O error/);
  // With a 1-ms hold delay, a book that sent what it owes at once would have tried ~20 more times.
  for (let i = 0; i < 5; i++) await tick();
  await new Promise((r) => setTimeout(r, 20));
  t.same(sent.slice(1), [['settle:a']], 'one attempt: the owed release waits for the retry');
  t.equal(errors.length, 1);
  t.same(book.view('w'), { balance: 1000n, held: 0n, available: 1000n });
  failing = false;
  book.flush();
  t.same(sent.at(-1), ['release:a'], 'the retry (here forced by flush) writes the release');
  t.same(store.wallets.show('w', 0).openHolds, 0);
  t.same(store.wallets.verify(), { ok: true, problems: [] });
});

t.test('after a rolled-back batch, a settlement that arrived meanwhile goes at once, with what is owed', async (t) => {
  const store = openStore(':memory:', { clock: new ManualClock('2026-01-15T12:00:00Z') });
  store.wallets.credit('w', 1000n, 'seed');
  let failing = false;
  const sent: string[][] = [];
  const writer = {
    commit: (ops: LedgerOp[]) => {
      sent.push(ops.map((o) => `${o.kind}:${o.traceId}`));
      const fail = failing; // decided when the batch is sent
      // Answered two turns later: a pump a new settlement schedules meanwhile finds the batch in flight.
      return new Promise<undefined>((resolve, reject) =>
        setImmediate(() =>
          setImmediate(() =>
            fail ? reject(new Error('disk I/O error')) : resolve(store.batch(() => void store.wallets.apply(ops))),
          ),
        ),
      );
    },
    commitNow: (ops: LedgerOp[]): undefined => {
      sent.push(ops.map((o) => `${o.kind}:${o.traceId}`));
      store.batch(() => store.wallets.apply(ops));
    },
  };
  const book = new WalletBook(store, () => undefined, writer, 1);
  t.teardown(() => {
    book.close();
    store.close();
  });
  book.hold('w', 'a', 400n);
  book.hold('w', 'b', 300n);
  book.flush();
  failing = true;
  const a = book.settle('a', 40n, {});
  await tick();
  t.same(sent.at(-1), ['settle:a'], 'the batch that will fail is in flight');
  failing = false;
  const b = book.settle('b', 30n, {});
  let written: boolean | null = null;
  void b.then((ok) => (written = ok));
  await t.rejects(a, /disk I\/O error/);
  // Turns of the event loop, not time: the retry timer (a second) cannot have fired.
  for (let i = 0; i < 20 && written === null; i++) await tick();
  t.equal(written, true, 'the later settlement is written without waiting for the retry');
  t.same(sent.at(-1)?.sort(), ['release:a', 'settle:b'], 'with the release the failed batch owed');
  const v = store.wallets.show('w', 0);
  t.same([v.balance, v.held, v.openHolds], [970n, 0n, 0]);
});
