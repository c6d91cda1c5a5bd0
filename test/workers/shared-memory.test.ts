// The admission memory the threads of `serve --workers N` share (src/workers/shared-book.ts,
// shared-windows.ts, shared-owner.ts, shared-client.ts): exact under real threads racing on one
// slot, a dead thread's holds given back, and a credit from another process seen before a hold.
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { WalletBook } from '../../src/admission/wallet-book.ts';
import { ManualClock } from '../../src/clock.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { MAX_WALLET_SLOTS, SharedBook, SharedBookOwner } from '../../src/workers/shared-book.ts';
import { SharedWindows, SharedWindowsOwner } from '../../src/workers/shared-windows.ts';
import { memoryBook, sharedAdmissionRig } from '../helpers/coordinator-rig.ts';
import { tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 30);
const RACER = new URL('../fixtures/workers/shared-racer.ts', import.meta.url);

t.test('four threads racing on one wallet and one window: never overdrawn, exactly the limit admitted', async (t) => {
  const THREADS = 4;
  const TRIES = 100_000;
  const memory = SharedBook.create(THREADS);
  const owner = new SharedBookOwner(memory);
  t.equal(
    owner.slotOf('w', () => 600_002n),
    0,
  );
  const windows = SharedWindows.create();
  t.equal(new SharedWindowsOwner(windows).slotOf('k'), 0);
  const start = new SharedArrayBuffer(4);
  const racers = Array.from({ length: THREADS }, (_, i) => {
    const worker = new Worker(RACER, {
      workerData: { book: memory, windows, start, worker: i + 1, tries: TRIES, amount: 3n, limit: 200_000, now: NOW },
    });
    return new Promise<{ held: number; remaining: number[] }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
  });
  // Every thread waits on the flag: released together, they race on the same two words.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const flag = new Int32Array(start);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  const results = await Promise.all(racers);
  const held = results.reduce((n, r) => n + r.held, 0);
  t.equal(held, 200_000, '600,002 nano-USD hold exactly 200,000 holds of 3');
  t.equal(owner.available(0), 2n, 'never overdrawn: the last 2 nano-USD are left');
  const pending = results.map((_, i) => owner.pending(0, i + 1));
  t.same(
    pending.map((p, i) => p === 3n * BigInt(results[i]?.held ?? 0)),
    results.map(() => true),
    "each thread's pending word is what it held",
  );
  const remaining = results.flatMap((r) => r.remaining).sort((a, b) => a - b);
  t.equal(remaining.length, 200_000, `exactly the limit admitted of ${THREADS * TRIES} decisions`);
  t.equal(
    remaining.findIndex((r, i) => r !== i),
    -1,
    'each admitted request saw its own count (0 … limit − 1, once each)',
  );
});

t.test(
  'a worker that dies: its announced holds are released through the book, the others come back at once',
  async (t) => {
    const clock = new ManualClock(NOW);
    const { store, book } = memoryBook(t, clock);
    const rig = sharedAdmissionRig(t, clock, book, 2);
    store.wallets.credit('ws', 1_000n, 'test');
    book.refresh();
    const one = rig.worker(1);
    const two = rig.worker(2);
    t.same(await two.wallets.hold('ws', 'c', 100n), { ok: true });
    two.client.close();
    t.same(await one.wallets.hold('ws', 'a', 300n), { ok: true });
    one.client.close(); // announced: the book has it
    // Not announced yet: it waits for the thread's next message, and no macrotask runs before the detach.
    t.same(one.wallets.hold('ws', 'b', 200n), { ok: true });
    t.equal(rig.owner.available('ws'), 400n);
    t.equal(rig.coordinator.detach(1), 1, 'its one announced hold released');
    t.equal(rig.owner.available('ws'), 900n, 'both of its holds are available again; the other worker’s stays');
    one.client.close(); // what the dead thread had queued arrives late: ignored
    t.equal(rig.owner.available('ws'), 900n);
    book.flush();
    const w = store.wallets.show('ws', clock.now());
    t.same({ balance: w.balance, held: w.held }, { balance: 1_000n, held: 100n });
    t.same(store.wallets.verify(), { ok: true, problems: [] });
    t.equal(await two.wallets.settle('c', 60n, {}), true);
    t.equal(rig.owner.available('ws'), 940n);
  },
);

t.test('a credit from another process: a hold after the thread saw it is decided with it', async (t) => {
  const clock = new ManualClock(NOW);
  const file = tempDbFile(t);
  const store = openStore(file, { clock });
  const book = new WalletBook(store);
  t.teardown(() => {
    book.close();
    store.close();
  });
  const { wallets } = sharedAdmissionRig(t, clock, book).worker(1);
  t.same(await wallets.hold('ws', 'a', 100n), { ok: false, available: 0n });
  // `pi-gateway wallet credit`: another connection commits; the thread's key view notices and
  // calls refresh, and the next hold of this turn must see the credit.
  const cli = openStore(file, { clock });
  cli.wallets.credit('ws', 100n, 'cli');
  cli.close();
  void wallets.refresh();
  t.same(await wallets.hold('ws', 'b', 100n), { ok: true });
  t.same(await wallets.hold('ws', 'c', 1n), { ok: false, available: 0n }, 'and only with it');
});

t.test('a batch the store refused gives its holds back to shared memory', async (t) => {
  const clock = new ManualClock(NOW);
  const errors: unknown[] = [];
  const { store, book } = memoryBook(t, clock, (err) => errors.push(err));
  const rig = sharedAdmissionRig(t, clock, book, 1);
  store.wallets.credit('ws', 1_000n, 'test');
  book.refresh();
  const { wallets, client } = rig.worker(1);
  t.same(await wallets.hold('ws', 'x', 400n), { ok: true });
  t.equal(await wallets.settle('x', 100n, {}), true);
  t.equal(rig.owner.available('ws'), 900n);
  // The trace is closed in the ledger: a hold on it again is refused by the store, not by memory.
  t.same(await wallets.hold('ws', 'x', 500n), { ok: true });
  client.close();
  book.flush();
  t.equal(errors.length, 1, 'the refusal is reported');
  t.equal(rig.owner.available('ws'), 900n, 'the refused hold is available again');
  t.equal(await wallets.settle('x', 500n, {}), false, 'and its settlement charges nothing');
  t.equal(rig.owner.available('ws'), 900n);
});

t.test(
  'slots: a workspace or key beyond the memory is decided by message; slots start where the book is',
  async (t) => {
    const owner = new SharedBookOwner(SharedBook.create(1));
    t.equal(
      owner.slotOf('a', () => 70n),
      0,
    );
    t.equal(
      owner.slotOf('a', () => 1n),
      0,
      'a known workspace keeps its slot',
    );
    t.equal(owner.available(0), 70n);
    for (let i = 1; i < 300; i++) owner.slotOf(`w${i}`, () => BigInt(i));
    t.equal(owner.available(299), 299n, 'the buffer grew; earlier slots kept');
    t.equal(owner.available(0), 70n);
    const windows = new SharedWindowsOwner(SharedWindows.create());
    for (let i = 0; i < 1_000; i++) windows.slotOf(`k${i}`);
    t.equal(windows.take(999, 2, NOW).ok, true);
    for (let i = 300; i < MAX_WALLET_SLOTS; i++) owner.slotOf(`w${i}`, () => 0n);
    t.equal(
      owner.slotOf('one too many', () => 0n),
      -1,
      'a full memory makes no slot',
    );
  },
);

t.test('a workspace shared memory has no room for is held by the coordinator’s book, exactly', async (t) => {
  const clock = new ManualClock(NOW);
  const { store, book } = memoryBook(t, clock);
  const rig = sharedAdmissionRig(t, clock, book, 1);
  for (let i = 0; i < MAX_WALLET_SLOTS; i++) rig.owner.slot('wallet', `w${i}`);
  store.wallets.credit('late', 500n, 'test');
  book.refresh();
  const { wallets } = rig.worker(1);
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => wallets.hold('late', `t${i}`, 100n)));
  t.equal(results.filter((r) => r.ok).length, 5);
  t.equal(rig.owner.available('late'), null, 'not in shared memory');
  t.same(book.view('late'), { balance: 500n, held: 500n, available: 0n });
  t.equal(await wallets.settle('t0', 100n, {}), true);
  t.same(book.view('late'), { balance: 400n, held: 400n, available: 0n });
});

t.test('admission sends no message: slots are asked for once, holds ride with their settlement', async (t) => {
  const clock = new ManualClock(NOW);
  const { store, book } = memoryBook(t, clock);
  const rig = sharedAdmissionRig(t, clock, book, 1);
  store.wallets.credit('ws', 1_000n, 'test');
  book.refresh();
  const { wallets, limiter } = rig.worker(1);
  t.same(await limiter.take('key', 100), { ok: true, remaining: 99 });
  t.same(await wallets.hold('ws', 'first', 10n), { ok: true });
  t.same(
    rig.sent.map((m) => m.ops),
    [['slot'], ['slot']],
    'the first use of a key and of a workspace asks for their slots',
  );
  rig.sent.length = 0;
  for (let i = 0; i < 10; i++) {
    t.same(limiter.take('key', 100), { ok: true, remaining: 98 - i }, 'decided at once');
    t.same(wallets.hold('ws', `t${i}`, 10n), { ok: true }, 'decided at once');
    await new Promise((resolve) => setImmediate(resolve));
  }
  t.equal(await wallets.settle('t0', 5n, {}), true);
  const ops = rig.sent.flatMap((m) => m.ops);
  t.same(
    ops.filter((op) => op !== 'held'),
    ['settle'],
    'ten admissions, no message of their own (their announcements ride with whatever goes next)',
  );
  t.equal(ops.filter((op) => op === 'held').length, 11, 'every hold announced');
  t.equal(ops.indexOf('settle'), ops.length - 1, 'before the settlement');
  t.equal(rig.owner.available('ws'), 1_000n - 11n * 10n + 10n - 5n);
});
