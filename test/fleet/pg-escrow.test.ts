// Escrow on PostgreSQL: a node's slice of a wallet is taken in one statement, admits in memory,
// is renewed, returned when idle and released by any node when its lease lapses; below the
// threshold the node admits with per-request holds; two nodes on one wallet never overdraw, and a
// request is refused only when the database's available balance (slices counted as held) cannot
// cover it. Time is a ManualClock: the tests drive `tick()`.
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { EscrowWalletService } from '../../src/fleet/pg-escrow.ts';
import type { EscrowTuning } from '../../src/fleet/pg-escrow-slice.ts';
import { ManualClock } from '../../src/clock.ts';
import { openPgStore, type PgStore } from '../../src/store/postgres/store.ts';
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

const database = (clock: ManualClock): Promise<string> => migratedDatabase(server, clock);

/** A node: its own pool and escrow service on the database. `kill` drops it without a word. */
async function node(t: Test, url: string, clock: ManualClock, name: string, tuning: Partial<EscrowTuning> = {}) {
  const store = await openPgStore(url, { clock, masterKey: masterKey(1) });
  const service = new EscrowWalletService(store, {
    clock,
    node: name,
    timer: false,
    tuning,
    leaseMs: LEASE,
    renewMs: RENEW,
  });
  let dead = false;
  t.teardown(async () => {
    if (!dead) await service.close();
    await store.close();
  });
  return {
    store,
    service,
    /** As SIGKILL: nothing more is written by this node (its pool stays for the teardown). */
    kill() {
      dead = true;
    },
  };
}

const wallet = walletRow;

async function slices(store: PgStore) {
  const r = await store.pool.query<{ id: string; amount: bigint; spent: bigint; state: string; lease: bigint }>(
    'SELECT id, amount_nano AS amount, spent_nano AS spent, state, lease_until AS lease FROM slices ORDER BY created_at, id',
  );
  return r.rows;
}

async function count(store: PgStore, sql: string): Promise<number> {
  return Number((await store.pool.query<{ n: bigint }>(sql)).rows[0]?.n ?? 0n);
}

t.test('a slice is taken in one statement, admits in memory, is renewed and returned when idle', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a');
  await a.store.wallets.credit('w', 1_000_000_000n, 'seed');
  // Cold: the first holds size the slice from the rate they show (it grows as they come).
  const warm = await Promise.all(Array.from({ length: 20 }, (_, i) => a.service.hold('w', `warm${i}`, 1_000n)));
  t.ok(warm.every((r) => r.ok));
  for (let i = 0; i < 20; i++) a.service.release(`warm${i}`);
  const after = [];
  for (let i = 0; i < 20; i++) after.push(a.service.hold('w', `r${i}`, 1_000n));
  t.ok(
    after.every((r) => !(r instanceof Promise) && r.ok),
    'at the same rate, every hold is decided at once, in memory',
  );
  let s = await slices(a.store);
  t.equal(s.length, 1, 'one slice');
  t.equal(s[0]?.state, 'open');
  t.equal(await count(a.store, 'SELECT COUNT(*) AS n FROM holds'), 0, 'no per-request hold rows');
  t.equal((await wallet(a.store, 'w')).held, s[0]?.amount, 'the wallet holds the slice');
  const charged = await Promise.all(
    Array.from({ length: 20 }, (_, i) => a.service.settle(`r${i}`, 10n * BigInt(i), { model: 'v/m' })),
  );
  t.ok(
    charged.every((x) => x),
    'every settlement charged',
  );
  t.ok(a.service.batchStats.batches < 20, `settlements batched (${a.service.batchStats.batches} statements for 20)`);
  t.equal((await wallet(a.store, 'w')).balance, 1_000_000_000n - 1_900n);
  t.equal(await a.service.settle('r3', 30n, {}), false, 'a second settlement of a trace charges nothing');
  t.equal(await count(a.store, "SELECT COUNT(*) AS n FROM ledger WHERE kind = 'settle' AND slice_id IS NOT NULL"), 20);
  t.same(await a.store.wallets.verify(), { ok: true, problems: [] }, 'verify counts the open slice as held');

  const lease0 = (await slices(a.store))[0]?.lease ?? 0n;
  clock.advance(RENEW);
  await a.service.tick();
  s = await slices(a.store);
  t.equal(s[0]?.state, 'returned', 'idle for longer than idleMs: returned');
  t.equal((await wallet(a.store, 'w')).held, 0n, 'nothing held after the return');
  t.ok(s[0]?.lease !== undefined && s[0].lease >= lease0, 'the lease was renewed before it went');
  t.equal(s[0]?.spent, 1_900n);
  t.same(await a.store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a busy slice is renewed, not returned; an idle one goes after idleMs', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a', { idleMs: 2_000 });
  await a.store.wallets.credit('w', 1_000_000_000n, 'seed');
  t.same(await a.service.hold('w', 'open', 1_000n), { ok: true });
  const lease0 = (await slices(a.store))[0]?.lease ?? 0n;
  clock.advance(RENEW);
  await a.service.tick();
  let s = await slices(a.store);
  t.equal(s[0]?.state, 'open', 'a slice with a request in flight stays');
  t.equal(s[0]?.lease, lease0 + BigInt(RENEW), 'its lease is pushed by the renew interval');
  a.service.release('open');
  clock.advance(1_999);
  await a.service.tick();
  t.equal((await slices(a.store))[0]?.state, 'open', 'not yet idle for idleMs');
  clock.advance(1);
  await a.service.tick();
  s = await slices(a.store);
  t.equal(s[0]?.state, 'returned');
  t.same(await wallet(a.store, 'w'), { balance: 1_000_000_000n, held: 0n });
});

t.test('an idle slice whose return fails (not for want of an answer) is closed by the next tick', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const logged: string[] = [];
  const store = await openPgStore(url, { clock, masterKey: masterKey(1) });
  const service = new EscrowWalletService(store, {
    clock,
    node: 'a',
    timer: false,
    tuning: { idleMs: 2_000 },
    leaseMs: LEASE,
    renewMs: RENEW,
    log: (event) => void logged.push(event),
  });
  t.teardown(async () => {
    await service.close();
    await store.close();
  });
  await store.wallets.credit('w', 1_000_000_000n, 'seed');
  t.same(await service.hold('w', 'r', 1_000n), { ok: true });
  service.release('r');
  const close = store.slices.close.bind(store.slices);
  store.slices.close = async () => {
    throw Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
  };
  clock.advance(2_000);
  await service.tick();
  t.ok(logged.includes('slice_return_failed'), 'the failure is logged');
  t.equal((await slices(store))[0]?.state, 'open', 'the slice is still held in the database');
  store.slices.close = close;
  clock.advance(500);
  await service.tick();
  t.equal((await slices(store))[0]?.state, 'returned', 'the next tick returns it, well within the lease');
  t.same(await wallet(store, 'w'), { balance: 1_000_000_000n, held: 0n });
});

t.test('a killed node’s slice lapses and another node releases it; nothing settled is lost or doubled', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a');
  const b = await node(t, url, clock, 'b');
  await a.store.wallets.credit('w', 1_000_000n, 'seed');
  for (let i = 0; i < 10; i++) t.same(await a.service.hold('w', `a${i}`, 1_000n), { ok: true });
  for (let i = 0; i < 6; i++) t.equal(await a.service.settle(`a${i}`, 100n, {}), true);
  a.kill(); // four requests in flight die with it
  const held = (await wallet(a.store, 'w')).held;
  t.ok(held > 0n, 'the dead node’s slice is still held');
  clock.advance(LEASE - 1);
  await b.service.tick();
  t.equal((await wallet(b.store, 'w')).held, held, 'not before the lease lapsed');
  clock.advance(2);
  const v = await b.store.wallets.verify();
  t.match(
    v.problems.join('\n'),
    /slice a\/.* is open but nothing serves it: its lease lapsed/,
    'verify names the orphaned slice',
  );
  clock.advance(RENEW);
  await b.service.tick();
  t.same(await wallet(b.store, 'w'), { balance: 1_000_000n - 600n, held: 0n }, 'released; the six settlements kept');
  t.equal((await slices(b.store))[0]?.state, 'lapsed');
  t.equal(await a.service.settle('a7', 100n, {}), false, 'a settlement after the sweep charges nothing');
  t.equal(await count(b.store, "SELECT COUNT(*) AS n FROM ledger WHERE kind = 'settle'"), 6, 'none doubled');
  t.same(await b.store.wallets.verify(), { ok: true, problems: [] });
});

t.test('below the threshold a node admits with per-request holds, exact to the nano-dollar', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a', { fallbackHolds: 4 });
  await a.store.wallets.credit('w', 3_999n, 'seed');
  for (let i = 0; i < 3; i++) t.same(await a.service.hold('w', `r${i}`, 1_000n), { ok: true });
  t.same(await a.service.hold('w', 'r3', 1_000n), { ok: false, available: 999n });
  t.same(await a.service.hold('w', 'r4', 999n), { ok: true }, 'the last nano-dollar is admitted');
  t.equal((await slices(a.store)).length, 0, 'no slice below four holds');
  t.equal(await count(a.store, "SELECT COUNT(*) AS n FROM holds WHERE state = 'open'"), 4);
  t.equal(await a.service.settle('r0', 1_000n, {}), true);
  t.same(await wallet(a.store, 'w'), { balance: 2_999n, held: 2_999n });
  t.same(await a.store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a wallet that empties moves from a slice to per-request holds and gives its free part back', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a', { fallbackHolds: 4 });
  await a.store.wallets.credit('w', 20_000n, 'seed');
  let admitted = 0;
  for (let i = 0; i < 30; i++) if ((await a.service.hold('w', `r${i}`, 1_000n)).ok) admitted++;
  t.equal(admitted, 20, 'every request the balance covers is admitted, none more');
  const s = await slices(a.store);
  t.ok(s.length >= 1 && (s[0]?.amount ?? 0n) < 20_000n, 'a slice was used while the wallet was above the threshold');
  t.equal(
    (await count(a.store, "SELECT COUNT(*) AS n FROM holds WHERE state = 'open'")) > 0,
    true,
    'then per-request holds',
  );
  t.same(await wallet(a.store, 'w'), { balance: 20_000n, held: 20_000n });
  for (let i = 0; i < 20; i++) await a.service.settle(`r${i}`, 500n, {});
  await a.service.flush();
  t.same(await wallet(a.store, 'w'), { balance: 10_000n, held: 0n });
  t.same(await a.store.wallets.verify(), { ok: true, problems: [] });
});

t.test('while a wallet is admitted per request, what returns to the node’s slice is admitted from it', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a', { fallbackHolds: 4 });
  await a.store.wallets.credit('w', 20_000n, 'seed');
  let admitted = 0;
  for (let i = 0; i < 25; i++) if ((await a.service.hold('w', `r${i}`, 1_000n)).ok) admitted++;
  t.equal(admitted, 20, 'the whole balance is reserved, by the slice and then per request');
  // The first requests were admitted from the slice; two settle at half their hold, giving 1,000
  // back to the slice. The database counts it as held (the slice), so a per-request statement would
  // refuse; the node admits it from its slice.
  await a.service.settle('r0', 500n, {});
  await a.service.settle('r1', 500n, {});
  const w = await wallet(a.store, 'w');
  t.equal(w.balance - w.held, 0n, 'the database has nothing available outside the slice');
  const r = a.service.hold('w', 'from-slice', 1_000n);
  t.notOk(r instanceof Promise, 'decided in memory');
  t.same(await r, { ok: true }, 'admitted from the slice');
  t.same(await a.service.hold('w', 'none-left', 1_000n), { ok: false, available: 0n }, 'and nothing beyond it');
  for (let i = 2; i < 20; i++) await a.service.settle(`r${i}`, 1_000n, {});
  await a.service.settle('from-slice', 1_000n, {});
  await a.service.flush();
  t.same(await wallet(a.store, 'w'), { balance: 0n, held: 0n });
  t.same(await a.store.wallets.verify(), { ok: true, problems: [] });
});

t.test(
  'while a wallet is admitted per request, a hold its slice’s free part and the database cover together is admitted',
  async (t) => {
    const clock = new ManualClock();
    const url = await database(clock);
    const a = await node(t, url, clock, 'a', { fallbackHolds: 4 });
    await a.store.wallets.credit('w', 20_000n, 'seed');
    let admitted = 0;
    for (let i = 0; i < 25; i++) if ((await a.service.hold('w', `r${i}`, 1_000n)).ok) admitted++;
    t.equal(admitted, 20, 'the whole balance is reserved, by the slice and then per request');
    const perRequest = new Set(
      (await a.store.pool.query<{ trace_id: string }>("SELECT trace_id FROM holds WHERE state = 'open'")).rows.map(
        (r) => r.trace_id,
      ),
    );
    const fromSlice = Array.from({ length: 20 }, (_, i) => `r${i}`).filter((id) => !perRequest.has(id));
    t.ok(perRequest.size > 0 && fromSlice.length > 0, 'both kinds of admission were used');
    // 500 comes back to the slice (in memory), 500 to the database (a per-request hold's close):
    // together they cover a 1,000 hold, each alone does not.
    const [sliceTrace] = fromSlice;
    const [holdTrace] = [...perRequest];
    await a.service.settle(sliceTrace as string, 500n, {});
    await a.service.settle(holdTrace as string, 500n, {});
    const w = await wallet(a.store, 'w');
    t.equal(w.balance - w.held, 500n, 'the database has 500 available outside the slice');
    t.same(
      await a.service.hold('w', 'both', 1_000n),
      { ok: true },
      'the node gives its slice’s free part back before the per-request statement',
    );
    for (let i = 0; i < 20; i++) {
      const id = `r${i}`;
      if (id !== sliceTrace && id !== holdTrace) await a.service.settle(id, 1_000n, {});
    }
    await a.service.settle('both', 1_000n, {});
    await a.service.flush();
    t.same(await wallet(a.store, 'w'), { balance: 0n, held: 0n });
    t.same(await a.store.wallets.verify(), { ok: true, problems: [] });
  },
);

t.test(
  'a slice opened while a renewal is in flight is kept: only the slices the renewal named can be found lapsed',
  async (t) => {
    const clock = new ManualClock();
    const url = await database(clock);
    const a = await node(t, url, clock, 'a', { fallbackHolds: 4, idleMs: 60_000 });
    await a.store.wallets.credit('w', 100_000n, 'seed');
    t.same(await a.service.hold('w', 't1', 1_000n), { ok: true });
    a.service.release('t1');
    const [first] = await slices(a.store);
    // The renewal's statement is slow (it waits for the gate): meanwhile the node gives its slice back
    // and, after the probe, opens another one.
    const renew = a.store.slices.renew.bind(a.store.slices);
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    a.store.slices.renew = async (...args) => {
      await gate;
      return renew(...args);
    };
    clock.advance(RENEW);
    const ticking = a.service.tick();
    t.same(await a.service.hold('w', 'big', 95_000n), { ok: true }, 'per request: the slice went back');
    t.equal((await slices(a.store)).find((s) => s.id === first?.id)?.state, 'returned');
    await a.service.release('big');
    clock.advance(1_000);
    t.same(await a.service.hold('w', 't3', 1_000n), { ok: true }, 'a new slice');
    open();
    await ticking;
    a.service.release('t3');
    await a.service.flush();
    t.same(
      await wallet(a.store, 'w'),
      { balance: 100_000n, held: 0n },
      'the new slice was given back, not left to lapse',
    );
    t.same(
      (await slices(a.store)).map((s) => s.state),
      ['returned', 'returned'],
    );
    t.same(await a.store.wallets.verify(), { ok: true, problems: [] });
  },
);

t.test('a request is refused only when the database’s available balance cannot cover it', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a', { fallbackHolds: 4, idleMs: 2_000 });
  const b = await node(t, url, clock, 'b', { fallbackHolds: 4 });
  await a.store.wallets.credit('w', 10_000n, 'seed');
  t.same(await a.service.hold('w', 'a0', 1_000n), { ok: true });
  a.service.release('a0'); // a's slice now sits idle with its free part
  const aSlice = (await slices(a.store))[0]?.amount ?? 0n;
  t.ok(aSlice > 0n);
  let bAdmitted = 0;
  for (let i = 0; i < 20; i++) {
    const r = await b.service.hold('w', `b${i}`, 1_000n);
    const w = await wallet(b.store, 'w');
    if (r.ok) bAdmitted++;
    else t.ok(w.balance - w.held < 1_000n, `b${i} refused only when the database had ${w.balance - w.held} available`);
  }
  t.equal(bAdmitted, Number((10_000n - aSlice) / 1_000n), 'b took all that a’s slice did not hold');
  clock.advance(2_000);
  await a.service.tick();
  t.same(await b.service.hold('w', 'late', 1_000n), { ok: true }, 'once a’s idle slice is returned, b is admitted');
});

t.test('property: two nodes on one wallet never overdraw, and the books stay exact', async (t) => {
  const clock = new ManualClock();
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.record({
          node: fc.nat(1),
          amount: fc.bigInt({ min: 0n, max: 3_000n }),
          cost: fc.nat(100),
          release: fc.boolean(),
        }),
        {
          minLength: 5,
          maxLength: 60,
        },
      ),
      fc.bigInt({ min: 1_000n, max: 40_000n }),
      fc.constantFrom<Partial<EscrowTuning>>({}, { fallbackHolds: 0, probeMs: 0 }, { fallbackHolds: 2 }),
      async (reqs, credit, tuning) => {
        const url = await database(clock);
        const nodes = [await node(t, url, clock, 'a', tuning), await node(t, url, clock, 'b', tuning)];
        const store = nodes[0]?.store as PgStore;
        await store.wallets.credit('w', credit, 'seed');
        // Every request at once, across both nodes: holds race, then each admitted one settles or releases.
        const outcomes = await Promise.all(
          reqs.map(async (q, i) => {
            const svc = (nodes[q.node] as { service: EscrowWalletService }).service;
            const h = await svc.hold('w', `t${i}`, q.amount);
            if (!h.ok) return 0n;
            if (q.release) {
              await svc.release(`t${i}`);
              return 0n;
            }
            const cost = (q.amount * BigInt(q.cost)) / 100n;
            return (await svc.settle(`t${i}`, cost, {})) ? cost : 0n;
          }),
        );
        for (const n of nodes) await n.service.flush();
        const charged = outcomes.reduce((a, b) => a + b, 0n);
        const w = await wallet(store, 'w');
        if (w.balance < 0n || w.balance !== credit - charged || w.held !== 0n)
          throw new Error(`wallet ${w.balance}/${w.held}, expected ${credit - charged}/0`);
        const v = await store.wallets.verify();
        if (!v.ok) throw new Error(v.problems.join('; '));
      },
    ),
    { numRuns: 15 },
  );
  t.pass('15 random races kept the wallet exact and never overdrawn');
});

t.test('a settlement statement retried after it committed is recognised and charges nothing more', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a');
  await a.store.wallets.credit('w', 10_000n, 'seed');
  const take = await a.store.slices.take(
    { workspace: 'w', sliceId: 's1', grow: false, want: 4_000n, need: 1_000n, floor: 0n, fraction: 1n },
    clock.now(),
    'a',
  );
  t.equal(take.granted, 4_000n);
  t.equal(take.available, 6_000n);
  const batch = [
    { traceId: 'x', sliceId: 's1', cost: 300n, details: {} },
    { traceId: 'y', sliceId: 's1', cost: 200n, details: {} },
  ];
  t.same([...(await a.store.slices.settleMany(batch, clock.now()))].sort(), ['x', 'y']);
  t.same([...(await a.store.slices.settleMany(batch, clock.now()))].sort(), ['x', 'y'], 'the retry finds both charged');
  t.same(await wallet(a.store, 'w'), { balance: 9_500n, held: 3_500n }, 'charged once');
  t.equal(await a.store.slices.close('s1', clock.now()), 3_500n, 'closing gives back the rest');
  t.same(
    [...(await a.store.slices.settleMany([{ traceId: 'z', sliceId: 's1', cost: 1n, details: {} }], clock.now()))],
    [],
    'a closed slice charges nothing',
  );
  t.same(await wallet(a.store, 'w'), { balance: 9_500n, held: 0n });
  t.same(await a.store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a settlement statement that timed out is retried and charged, not given up', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a');
  await a.store.wallets.credit('w', 1_000_000_000n, 'seed');
  for (let i = 0; i < 5; i++) t.match(await a.service.hold('w', `r${i}`, 1_000n), { ok: true });
  const settleMany = a.store.slices.settleMany.bind(a.store.slices);
  const failures = ['57014', '55P03'];
  a.store.slices.settleMany = (items, now) => {
    const code = failures.shift();
    if (code) return Promise.reject(Object.assign(new Error(`failed with ${code}`), { code }));
    return settleMany(items, now);
  };
  const charged = await Promise.all(Array.from({ length: 5 }, (_, i) => a.service.settle(`r${i}`, 7n, {})));
  t.same(charged, Array(5).fill(true), 'all five charged after a statement and a lock timeout');
  t.equal(await count(a.store, "SELECT COUNT(*) AS n FROM ledger WHERE kind = 'settle'"), 5);
  t.same(await a.store.wallets.verify(), { ok: true, problems: [] });
});

t.test('a slice statement that ran out of time is a 503 to retry; the node is not marked down', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a');
  await a.store.wallets.credit('w', 1_000_000_000n, 'seed');
  const take = a.store.slices.take.bind(a.store.slices);
  let failures = 1;
  a.store.slices.take = (...args: Parameters<typeof take>) =>
    failures-- > 0
      ? Promise.reject(Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' }))
      : take(...args);
  await t.rejects(Promise.resolve(a.service.hold('w', 'x', 1_000n)), { code: 'store_unavailable', status: 503 });
  t.match(await a.service.hold('w', 'y', 1_000n), { ok: true }, 'the next hold takes a slice');
  t.equal((await slices(a.store)).length, 1);
});

t.test('a slice grant is the need plus a share of what is left, and none below the floor', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a');
  await a.store.wallets.credit('w', 100_000n, 'seed');
  const take = (sliceId: string, want: bigint, need: bigint, floor: bigint) =>
    a.store.slices.take({ workspace: 'w', sliceId, grow: false, want, need, floor, fraction: 4n }, clock.now(), 'a');
  // 1,000 needed, up to 80,000 wanted: the need plus a quarter of the 99,000 beyond it.
  t.same(await take('s1', 80_000n, 1_000n, 0n), { granted: 25_750n, available: 74_250n, sliceOpen: true });
  t.same(
    await take('s2', 80_000n, 1_000n, 0n),
    { granted: 19_312n, available: 54_938n, sliceOpen: true },
    'smaller as the wallet empties',
  );
  t.same(
    await take('s3', 2_000n, 1_000n, 0n),
    { granted: 2_000n, available: 52_938n, sliceOpen: true },
    'never more than wanted',
  );
  t.same(
    await take('s4', 80_000n, 1_000n, 60_000n),
    { granted: 0n, available: 52_938n, sliceOpen: true },
    'below the floor: nothing',
  );
  t.same(
    await take('s5', 80_000n, 60_000n, 0n),
    { granted: 0n, available: 52_938n, sliceOpen: true },
    'beyond what is available: nothing',
  );
  t.equal(await count(a.store, 'SELECT COUNT(*) AS n FROM slices'), 3, 'a refused take writes no slice');
  t.same(await a.store.wallets.verify(), { ok: true, problems: [] });
});

t.test('PostgreSQL stopped: a node stops admitting from its slice (503), and resumes when it answers', async (t) => {
  const own = await startPrivatePg();
  t.teardown(() => own.destroy());
  const clock = new ManualClock();
  const url = await own.createDatabase();
  const m = await openPgStore(url, { clock, checkSchema: false, masterKey: masterKey(1) });
  await m.migrate();
  await m.wallets.credit('w', 1_000_000_000n, 'seed');
  await m.close();
  const a = await node(t, url, clock, 'a');
  t.same(await a.service.hold('w', 'before', 1_000n), { ok: true });
  t.equal(await a.service.settle('before', 10n, {}), true);
  const free = a.service.hold('w', 'probe', 1_000n);
  t.ok(!(free instanceof Promise), 'the slice admits in memory while PostgreSQL answers');
  a.service.release('probe');
  await own.stop();
  // The pooled connections PostgreSQL closed tell the node at once.
  await new Promise((resolve) => setImmediate(resolve));
  await t.rejects(async () => a.service.hold('w', 'during', 1_000n), { code: 'store_unavailable' }, 'fails closed');
  await own.start();
  t.same(await a.service.hold('w', 'after', 1_000n), { ok: true }, 'served again once PostgreSQL answers');
  // The slice may have lapsed and been released by another node meanwhile: the next hold waits for
  // its renewal before anything is admitted from it.
  const renewed = a.service.hold('w', 'after2', 1_000n);
  t.ok(renewed instanceof Promise, 'the slice is renewed before it admits again');
  t.same(await renewed, { ok: true });
  t.ok(!(a.service.hold('w', 'after3', 1_000n) instanceof Promise), 'and from the slice again');
  a.service.release('after');
  a.service.release('after2');
  a.service.release('after3');
});

t.test('a hold out of range is refused before anything is reserved', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a');
  await a.store.wallets.credit('w', 1_000_000n, 'seed');
  t.same(await a.service.hold('w', 'ok', 1_000n), { ok: true });
  t.throws(() => a.service.hold('w', 'neg', -5_000n), RangeError, 'a negative hold would add to the slice');
  t.throws(() => a.service.hold('w', 'big', 2n ** 63n), RangeError);
  t.throws(() => a.service.hold('', 'nows', 1n), RangeError);
  a.service.release('ok');
  await a.service.flush();
  t.same(await wallet(a.store, 'w'), { balance: 1_000_000n, held: 0n });
});

t.test('a hold near the largest amount is refused as any other; the wallet’s next holds go on', async (t) => {
  const clock = new ManualClock();
  const url = await database(clock);
  const a = await node(t, url, clock, 'a');
  await a.store.wallets.credit('w', 1_000_000n, 'seed');
  // Within what a hold may be, yet four of them (the threshold) pass what any wallet holds.
  t.match(await a.service.hold('w', 'huge', 2n ** 62n), { ok: false }, 'no wallet covers it: refused (402)');
  t.same(await a.service.hold('w', 'small', 1_000n), { ok: true }, 'the next request of the wallet is admitted');
  await a.service.release('small');
  await a.service.flush();
  t.same(await wallet(a.store, 'w'), { balance: 1_000_000n, held: 0n });
});
