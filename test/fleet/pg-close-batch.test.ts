// Settlements and releases of one event-loop turn go to PostgreSQL as one statement, and one
// request's refused close never takes the others of its turn with it.
import t, { type Test } from 'tap';
import { PgWalletService } from '../../src/fleet/pg-wallet-service.ts';
import { ManualClock } from '../../src/clock.ts';
import type { HoldClose } from '../../src/store/postgres/holds.ts';
import { openPgStore, type PgStore } from '../../src/store/postgres/store.ts';
import { type PrivatePg, startPrivatePg } from '../helpers/pg.ts';
import { masterKey } from '../store/sqlite/fixtures/temp-db.ts';

let server: PrivatePg;
t.before(async () => {
  server = await startPrivatePg();
});
t.teardown(() => server.destroy());

const clock = new ManualClock(Date.UTC(2026, 0, 15, 12));

/** A migrated database, a wallet service on it, and a count of the batches its holds saw. */
async function rig(t: Test): Promise<{ store: PgStore; service: PgWalletService; batches: number[] }> {
  const url = await server.createDatabase();
  const m = await openPgStore(url, { clock, checkSchema: false, masterKey: masterKey(1) });
  await m.migrate();
  await m.close();
  const store = await openPgStore(url, { clock, masterKey: masterKey(1) });
  const batches: number[] = [];
  const closeMany = store.holds.closeMany.bind(store.holds);
  store.holds.closeMany = (closes: readonly HoldClose[], now: number) => {
    batches.push(closes.length);
    return closeMany(closes, now);
  };
  const service = new PgWalletService(store, { clock, node: 'n', timer: false });
  t.teardown(async () => {
    await service.close();
    await store.close();
  });
  return { store, service, batches };
}

t.test('the closes of one turn are one statement; each wallet ends exact', async (t) => {
  const { store, service, batches } = await rig(t);
  await store.wallets.credit('a', 10_000n, 'seed');
  await store.wallets.credit('b', 10_000n, 'seed');
  for (let i = 0; i < 30; i++) t.same(await service.hold(i % 3 === 0 ? 'b' : 'a', `r${i}`, 300n), { ok: true });
  const closes = Array.from({ length: 30 }, (_, i) =>
    i % 5 === 4 ? service.release(`r${i}`).then(() => true) : service.settle(`r${i}`, BigInt(i), { model: 'v/m' }),
  );
  t.ok((await Promise.all(closes)).every((x) => x));
  t.same(batches, [30], 'one statement for the turn');
  const charged = (ws: string) =>
    Array.from({ length: 30 }, (_, i) => i)
      .filter((i) => i % 5 !== 4 && (i % 3 === 0) === (ws === 'b'))
      .reduce((n, i) => n + BigInt(i), 0n);
  t.match(await store.wallets.show('a', clock.now()), { balance: 10_000n - charged('a'), held: 0n, openHolds: 0 });
  t.match(await store.wallets.show('b', clock.now()), { balance: 10_000n - charged('b'), held: 0n, openHolds: 0 });
  const kinds = await store.pool.query<{ kind: string; n: string }>(
    'SELECT kind, COUNT(*)::text AS n FROM ledger GROUP BY kind ORDER BY kind',
  );
  t.same(
    kinds.rows.map((r) => `${r.kind}:${r.n}`),
    ['credit:2', 'hold:30', 'release:6', 'settle:24'],
  );
  t.same(await store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a close the database refuses fails alone; the rest of its turn is written', async (t) => {
  const { store, service, batches } = await rig(t);
  await store.wallets.credit('w', 10_000n, 'seed');
  for (let i = 0; i < 10; i++) await service.hold('w', `r${i}`, 500n);
  const outcomes = await Promise.allSettled(
    Array.from({ length: 10 }, (_, i) => service.settle(`r${i}`, i === 4 ? 2n ** 63n : 100n, {})),
  );
  t.match(outcomes[4], { status: 'rejected', reason: { code: 'amount_out_of_range' } });
  t.same(
    outcomes.filter((_o, i) => i !== 4).map((o) => (o.status === 'fulfilled' ? o.value : o.reason)),
    Array(9).fill(true),
    'the other nine settled',
  );
  t.equal(batches[0], 10, 'they went as one batch first');
  t.match(await store.wallets.show('w', clock.now()), { balance: 9_100n, held: 0n, openHolds: 0 });
  const r4 = await store.pool.query<{ kind: string }>("SELECT kind FROM ledger WHERE trace_id = 'r4' ORDER BY id");
  t.same(
    r4.rows.map((r) => r.kind),
    ['hold', 'release'],
    'the refused one was released at no cost',
  );
  t.same(await store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a settle and a release of one trace in one turn: the first decides', async (t) => {
  const { store, service } = await rig(t);
  await store.wallets.credit('w', 1_000n, 'seed');
  await service.hold('w', 'x', 400n);
  const settled = service.settle('x', 150n, {});
  const released = service.release('x');
  t.equal(await settled, true);
  await released;
  t.match(await store.wallets.show('w', clock.now()), { balance: 850n, held: 0n });
  t.same(await store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a turn whose statement met a passing failure is retried and charged, never released free', async (t) => {
  const { store, service, batches } = await rig(t);
  await store.wallets.credit('w', 10_000n, 'seed');
  for (let i = 0; i < 6; i++) await service.hold('w', `r${i}`, 500n);
  // The first two statements fail the way a busy database fails them: a statement timeout, then a
  // deadlock with another node's batch; the third passes.
  const closeMany = store.holds.closeMany.bind(store.holds);
  const failures = ['57014', '40P01'];
  store.holds.closeMany = (closes: readonly HoldClose[], now: number) => {
    const code = failures.shift();
    if (code) return Promise.reject(Object.assign(new Error(`failed with ${code}`), { code }));
    return closeMany(closes, now);
  };
  const outcomes = await Promise.all(Array.from({ length: 6 }, (_, i) => service.settle(`r${i}`, 100n, {})));
  t.same(outcomes, Array(6).fill(true), 'all six charged');
  t.match(await store.wallets.show('w', clock.now()), { balance: 9_400n, held: 0n, openHolds: 0 });
  const kinds = await store.pool.query<{ kind: string; n: string }>(
    "SELECT kind, COUNT(*)::text AS n FROM ledger WHERE kind <> 'credit' GROUP BY kind ORDER BY kind",
  );
  t.same(
    kinds.rows.map((r) => `${r.kind}:${r.n}`),
    ['hold:6', 'settle:6'],
    'no hold released at no cost',
  );
  t.ok(batches.length >= 1);
  t.same(await store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a hold whose statement ran out of time is a 503 to retry, not an error of the request', async (t) => {
  const { store, service } = await rig(t);
  await store.wallets.credit('w', 1_000n, 'seed');
  const hold = store.holds.hold.bind(store.holds);
  let failures = 1;
  store.holds.hold = (...args: Parameters<typeof hold>) =>
    failures-- > 0
      ? Promise.reject(Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }))
      : hold(...args);
  await t.rejects(service.hold('w', 'x', 400n), { code: 'store_unavailable', status: 503 });
  t.match(await service.hold('w', 'y', 400n), { ok: true }, 'the next one is admitted');
  await service.release('x');
  t.match(await store.wallets.show('w', clock.now()), { held: 400n, openHolds: 1 });
});

t.test('a settlement that keeps timing out gives up within the lease, not after every attempt', async (t) => {
  const url = await server.createDatabase();
  const m = await openPgStore(url, { clock, checkSchema: false, masterKey: masterKey(1) });
  await m.migrate();
  await m.close();
  const store = await openPgStore(url, { clock, masterKey: masterKey(1) });
  // A lease of 2 s renewed after 1 s: 1 s to retry in, at most five attempts of 200 ms apart.
  const service = new PgWalletService(store, { clock, node: 'n', timer: false, leaseMs: 2_000, renewMs: 1_000 });
  t.teardown(async () => {
    await service.close();
    await store.close();
  });
  await store.wallets.credit('w', 1_000n, 'seed');
  await service.hold('w', 'slow', 400n);
  let calls = 0;
  // Each statement waits 400 ms for a row, then runs out of time.
  store.holds.closeMany = async () => {
    calls++;
    await new Promise((r) => setTimeout(r, 400));
    throw Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
  };
  await t.rejects(service.settle('slow', 100n, {}), { code: '57014' });
  t.ok(calls <= 3, `given up after ${calls} statements (five would be ~3 s)`);
  t.match(
    await store.wallets.show('w', clock.now()),
    { held: 400n },
    'the hold is left to its lease, not released free',
  );
});
