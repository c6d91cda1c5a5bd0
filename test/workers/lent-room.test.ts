// A fleet node's serving threads take holds from room its escrow's slices lend to shared memory
// (src/workers/lent-room-owner.ts, lent-room-client.ts): no message per hold; an announced hold is
// charged to the slice its room came from, even after the room was emptied and the slice lost; a
// thread that dies gives back what it took unannounced; the room is emptied whenever the escrow
// needs it back (idle, PostgreSQL not answering); and threads racing on one room never take more
// than it held. Time is a ManualClock: the tests drive the escrow's `tick()`.
import { Worker } from 'node:worker_threads';
import t, { type Test } from 'tap';
import { ManualClock } from '../../src/clock.ts';
import { EscrowWalletService } from '../../src/fleet/pg-escrow.ts';
import type { EscrowTuning } from '../../src/fleet/pg-escrow-slice.ts';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { SharedBook } from '../../src/workers/shared-book.ts';
import { lentRoomRig } from '../helpers/coordinator-rig.ts';
import { type PrivatePg, startPrivatePg } from '../helpers/pg.ts';
import { migratedDatabase, walletRow } from '../helpers/pg-database.ts';
import { masterKey } from '../store/sqlite/fixtures/temp-db.ts';

let server: PrivatePg;
t.before(async () => {
  server = await startPrivatePg();
});
t.teardown(() => server.destroy());

const LEASE = 30_000;
const RENEW = 10_000;
const RACER = new URL('../fixtures/workers/room-racer.ts', import.meta.url);

const database = (clock: ManualClock): Promise<string> => migratedDatabase(server, clock);

/** A node's escrow on the database (its own pool), closed when `t` ends. */
async function escrowNode(t: Test, url: string, clock: ManualClock, name: string, tuning: Partial<EscrowTuning> = {}) {
  const store = await openPgStore(url, { clock, masterKey: masterKey(1) });
  const escrow = new EscrowWalletService(store, {
    clock,
    node: name,
    timer: false,
    tuning: { fallbackHolds: 0, probeMs: 0, ...tuning },
    leaseMs: LEASE,
    renewMs: RENEW,
  });
  t.teardown(async () => {
    await escrow.close();
    await store.close();
  });
  return { store, escrow };
}

const wallet = walletRow;

const opsSince = (sent: { ops: string[] }[], from: number) => sent.slice(from).flatMap((m) => m.ops);

t.test('holds come from the room without a message; settled and released as before, the books exact', async (t) => {
  const clock = new ManualClock();
  const { store, escrow } = await escrowNode(t, await database(clock), clock, 'a');
  await store.wallets.credit('w', 1_000_000n, 'seed');
  const rig = lentRoomRig(t, clock, escrow, 2);
  const one = rig.worker(1);
  const two = rig.worker(2);
  t.same(await one.wallets.hold('w', 'first', 1_000n), { ok: true }, 'the first hold asks (the slot, a slice)');
  t.ok(rig.owner.room('w') > 0n, 'the slice’s free part is lent to the room');
  t.same(await two.wallets.hold('w', 'second', 1_000n), { ok: true }, 'each thread asks for the slot once');
  const before = rig.sent.length;
  for (let i = 0; i < 5; i++) {
    const a = one.wallets.hold('w', `a${i}`, 100n);
    const b = two.wallets.hold('w', `b${i}`, 100n);
    t.notOk(a instanceof Promise || b instanceof Promise, 'decided at once, in shared memory');
    t.same([a, b], [{ ok: true }, { ok: true }]);
  }
  await new Promise((resolve) => setImmediate(resolve));
  t.same(opsSince(rig.sent, before), [], 'no message yet: the holds are announced with the next one');
  for (let i = 0; i < 5; i++) t.equal(await one.wallets.settle(`a${i}`, 40n, {}), true);
  for (let i = 0; i < 5; i++) await two.wallets.release(`b${i}`);
  t.equal(await one.wallets.settle('first', 1_000n, {}), true);
  await two.wallets.release('second');
  t.same(
    [...new Set(opsSince(rig.sent, before))].sort(),
    ['held', 'release', 'settle'],
    'only announcements and closes went to the coordinator',
  );
  t.equal(rig.owner.adopted, 11, 'eleven holds announced from the room');
  await escrow.flush();
  t.same(await wallet(store, 'w'), { balance: 1_000_000n - 1_200n, held: 0n });
  t.same(await store.wallets.verify(), { ok: true, problems: [] });
});

t.test(
  'an announced hold is charged to its room’s slice: after that slice is lost, the next waits for it',
  async (t) => {
    const clock = new ManualClock();
    const url = await database(clock);
    const a = await escrowNode(t, url, clock, 'a');
    const b = await escrowNode(t, url, clock, 'b');
    await a.store.wallets.credit('w', 1_000_000n, 'seed');
    const rig = lentRoomRig(t, clock, a.escrow, 2);
    const one = rig.worker(1);
    const two = rig.worker(2);
    t.same(await one.wallets.hold('w', 'settled', 1_000n), { ok: true });
    t.equal(await one.wallets.settle('settled', 500n, {}), true);
    // Taken from the room, not announced yet (it waits for the thread's next message).
    t.same(one.wallets.hold('w', 'late', 2_000n), { ok: true });
    // Node a stops renewing (its event loop blocked, say): its slice lapses and node b releases it.
    clock.advance(LEASE + 1);
    await b.escrow.tick();
    await a.escrow.tick();
    t.equal(rig.owner.room('w'), 0n, 'the lost slice’s room was emptied at once');
    t.same(await two.wallets.hold('w', 'next', 3_000n), { ok: true }, 'by message: a new slice');
    t.equal(rig.owner.room('w'), 0n, 'the new slice lends nothing while a hold from the old room is unannounced');
    one.client.close();
    await new Promise((resolve) => setImmediate(resolve));
    t.ok(rig.owner.room('w') > 0n, 'announced (against the old slice): the new slice lends now');
    t.equal(await one.wallets.settle('late', 2_000n, {}), false, 'the old slice is gone: its hold charges nothing');
    t.equal(await two.wallets.settle('next', 3_000n, {}), true);
    await a.escrow.flush();
    t.same(await wallet(a.store, 'w'), { balance: 1_000_000n - 3_500n, held: 0n });
    t.same(await a.store.wallets.verify(), { ok: true, problems: [] });
  },
);

t.test('a thread that dies: what it took and never announced goes back to the slice', async (t) => {
  const clock = new ManualClock();
  const { store, escrow } = await escrowNode(t, await database(clock), clock, 'a');
  await store.wallets.credit('w', 100_000n, 'seed');
  const rig = lentRoomRig(t, clock, escrow, 2);
  const one = rig.worker(1);
  const two = rig.worker(2);
  t.same(await two.wallets.hold('w', 'kept', 1_000n), { ok: true });
  t.same(await one.wallets.hold('w', 'gone', 1_000n), { ok: true }, 'the slot is known to both threads');
  await one.wallets.release('gone');
  const room = rig.owner.room('w');
  t.same(one.wallets.hold('w', 'x', 2_000n), { ok: true });
  t.same(one.wallets.hold('w', 'y', 3_000n), { ok: true });
  t.equal(rig.owner.room('w'), room - 5_000n);
  t.equal(rig.coordinator.detach(1), 0, 'no announced hold of it to release');
  one.client.close(); // what the dead thread had queued arrives late: ignored
  t.equal(rig.owner.adopted, 1, 'only the hold announced before the thread died');
  await escrow.flush();
  t.same(await wallet(store, 'w'), { balance: 100_000n, held: 1_000n }, 'only the live thread’s hold is held');
  t.equal(await two.wallets.settle('kept', 1_000n, {}), true);
  t.same(await store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a quiet slice takes its room back and is returned; PostgreSQL not answering empties the room', async (t) => {
  const clock = new ManualClock();
  const { store, escrow } = await escrowNode(t, await database(clock), clock, 'a', { idleMs: 2_000 });
  await store.wallets.credit('w', 100_000n, 'seed');
  const rig = lentRoomRig(t, clock, escrow, 1);
  const one = rig.worker(1);
  t.same(await one.wallets.hold('w', 'a', 1_000n), { ok: true });
  t.equal(await one.wallets.settle('a', 1_000n, {}), true);
  t.ok(rig.owner.room('w') > 0n);
  clock.advance(1_999);
  await escrow.tick();
  t.ok(rig.owner.room('w') > 0n, 'not quiet yet');
  clock.advance(1);
  await escrow.tick();
  t.equal(rig.owner.room('w'), 0n, 'quiet: the room came back');
  t.same(await wallet(store, 'w'), { balance: 99_000n, held: 0n }, 'and the slice was returned');

  t.same(await one.wallets.hold('w', 'b', 1_000n), { ok: true });
  t.ok(rig.owner.room('w') > 0n, 'a new slice lends again');
  store.pool.emit('error', new Error('connection lost'));
  t.equal(rig.owner.room('w'), 0n, 'the escrow stops admitting against its slices: so do the threads');
  const before = rig.sent.length;
  t.same(await one.wallets.hold('w', 'c', 1_000n), { ok: true }, 'PostgreSQL answers: a per-request hold');
  t.ok(opsSince(rig.sent, before).includes('hold'), 'decided by message');
  t.equal(await one.wallets.settle('b', 1_000n, {}), true);
  t.equal(await one.wallets.settle('c', 1_000n, {}), true);
  await escrow.flush();
  t.same(await wallet(store, 'w'), { balance: 97_000n, held: 0n });
  t.same(await store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a settlement above its hold takes the room back to charge it from the slice', async (t) => {
  const clock = new ManualClock();
  const { store, escrow } = await escrowNode(t, await database(clock), clock, 'a');
  await store.wallets.credit('w', 100_000n, 'seed');
  const rig = lentRoomRig(t, clock, escrow, 1);
  const one = rig.worker(1);
  t.same(await one.wallets.hold('w', 'a', 1_000n), { ok: true });
  t.same(one.wallets.hold('w', 'b', 1_000n), { ok: true });
  t.equal(await one.wallets.settle('b', 1_500n, {}), true);
  t.equal(await one.wallets.settle('a', 1_000n, {}), true);
  await escrow.flush();
  t.same(await wallet(store, 'w'), { balance: 97_500n, held: 0n }, 'charged in full, not capped at the hold');
  t.same(await store.wallets.verify(), { ok: true, problems: [] });
});

t.test('threads racing on one room while it is emptied never take more than it held', async (t) => {
  const THREADS = 4;
  const memory = SharedBook.create(THREADS);
  const words = new BigInt64Array(memory.buffer);
  const ROOM = 600_002n;
  Atomics.store(words, 0, ROOM);
  const start = new SharedArrayBuffer(4);
  const racers = Array.from({ length: THREADS }, (_, i) => {
    const worker = new Worker(RACER, {
      workerData: { memory, start, worker: i + 1, tries: 100_000, amount: 3n },
    });
    return new Promise<{ taken: number }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  const flag = new Int32Array(start);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  // The coordinator's recall, in the middle of the race: whatever is left comes back at once.
  let recalled = 0n;
  while (recalled === 0n && Atomics.load(words, 0) > 300_000n) recalled = 0n;
  recalled = Atomics.exchange(words, 0, 0n);
  const results = await Promise.all(racers);
  const taken = results.reduce((n, r) => n + BigInt(r.taken) * 3n, 0n);
  t.equal(taken + recalled + Atomics.load(words, 0), ROOM, 'every nano-dollar taken once or recalled, none made up');
  t.equal(Atomics.load(words, 0), 0n, 'nothing taken after the recall');
  const pending = results.map((_, i) => Atomics.load(words, i + 1));
  t.same(
    pending,
    results.map((r) => BigInt(r.taken) * 3n),
    'each thread’s pending word is exactly what it took (refusals left nothing)',
  );
});

t.test('a hold sent by message that the room, refilled meanwhile, covers is admitted from it', async (t) => {
  const clock = new ManualClock();
  // fraction 1: the slice takes the whole wallet, so no statement could grow it.
  const { store, escrow } = await escrowNode(t, await database(clock), clock, 'a', { fraction: 1, probeMs: 1_000 });
  await store.wallets.credit('w', 8_000n, 'seed');
  const rig = lentRoomRig(t, clock, escrow, 2);
  const one = rig.worker(1);
  const two = rig.worker(2);
  t.same(await one.wallets.hold('w', 'a', 1_000n), { ok: true });
  t.same(await wallet(store, 'w'), { balance: 8_000n, held: 8_000n }, 'the slice holds the whole wallet');
  t.same(await two.wallets.hold('w', 'b', 6_000n), { ok: true });
  two.client.close();
  await two.wallets.release('b');
  t.equal(rig.owner.room('w'), 1_000n, 'the release went to the slice, not the room');
  const c = one.wallets.hold('w', 'c', 2_000n);
  t.ok(c instanceof Promise, 'the room is short: asked by message');
  // Before that message is read, another thread's announcement refills the room from the slice.
  t.same(two.wallets.hold('w', 'd', 100n), { ok: true });
  two.client.close();
  t.equal(rig.owner.room('w'), 6_900n);
  t.same(await c, { ok: true });
  t.same(
    await wallet(store, 'w'),
    { balance: 8_000n, held: 8_000n },
    'admitted from the slice: nothing given back for a per-request hold',
  );
  t.ok(rig.owner.room('w') > 0n, 'and the slice still lends to the threads');
  await one.wallets.release('a');
  await one.wallets.release('c');
  await two.wallets.release('d');
  await escrow.flush();
  t.same(await wallet(store, 'w'), { balance: 8_000n, held: 0n });
  t.same(await store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a hold the coordinator refused is not counted as a hold the threads took', async (t) => {
  const clock = new ManualClock();
  const { store, escrow } = await escrowNode(t, await database(clock), clock, 'a');
  await store.wallets.credit('w', 1_000n, 'seed');
  const rig = lentRoomRig(t, clock, escrow, 1);
  const one = rig.worker(1);
  t.same(await one.wallets.hold('w', 'a', 500n), { ok: true });
  t.match(await one.wallets.hold('w', 'b', 5_000n), { ok: false }, 'refused: the wallet cannot cover it');
  t.same(rig.coordinator.holds, { sharedMemory: 0, message: 1 }, 'one hold taken, by message');
  await one.wallets.release('a');
});
