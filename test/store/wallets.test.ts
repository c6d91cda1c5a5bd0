// Wallets and ledger: unit behaviour, append-only enforcement, verify, and a fast-check model test.
import fc from 'fast-check';
import t from 'tap';
import { ManualClock } from '../../src/clock.ts';
import { openDatabase } from '../../src/store/db.ts';
import { openStore, WalletError } from '../../src/store/store.ts';
import { tempDbFile } from './fixtures/temp-db.ts';

t.test('credit, hold, settle, release', async (t) => {
  const clock = new ManualClock('2026-01-15T23:59:00Z');
  const s = openStore(':memory:', { clock });
  const w = s.wallets;
  t.same(w.show('acme', clock.now()), { workspace: 'acme', balance: 0n, held: 0n, available: 0n, spendToday: 0n, openHolds: 0 });
  t.same(w.hold('acme', 'r0', 1n), { ok: false, available: 0n }, 'no wallet: nothing available');
  t.same(w.hold('acme', 'r0b', 0n), { ok: true }, 'a zero hold fits an empty wallet');

  const c = w.credit('acme', 1_000n, 'top-up');
  t.match(c.traceId, /^credit_[0-9a-f-]{36}$/);
  t.equal(c.balance, 1_000n);
  t.same(w.hold('acme', 'r1', 600n), { ok: true });
  t.same(w.hold('acme', 'r2', 401n), { ok: false, available: 400n });
  t.same(w.hold('acme', 'r2', 400n), { ok: true }, 'a refused trace may try again');
  t.throws(() => w.hold('acme', 'r1', 1n), WalletError, 'a trace holds once');
  t.same(w.show('acme', clock.now()), { workspace: 'acme', balance: 1_000n, held: 1_000n, available: 0n, spendToday: 0n, openHolds: 3 });

  t.same(w.settle('r1', 550n, { model: 'openai/gpt-4o', provider: 'openai', deployment: 'openai/gpt-4o', promptTokens: 10 }), { settled: true });
  t.same(w.settle('r1', 550n), { settled: false }, 'second settle is a no-op');
  t.same(w.release('r1'), { released: false }, 'release after settle is a no-op');
  t.same(w.release('r2'), { released: true });
  t.same(w.release('r2'), { released: false });
  t.same(w.settle('r2', 5n), { settled: false }, 'settle after release is a no-op');
  t.same(w.release('never-held'), { released: false });
  t.throws(() => w.settle('never-held', 5n), { name: 'WalletError', code: 'unknown_trace' });
  t.same(w.settle('r0b', 0n, { model: 'a/free', provider: 'p' }), { settled: true });

  clock.advance(60_000); // next UTC day
  t.same(w.hold('acme', 'r3', 100n), { ok: true });
  t.same(w.settle('r3', 200n, { model: 'openai/gpt-4o', provider: 'azure' }), { settled: true }, 'cost above the hold');
  const v = w.show('acme', clock.now());
  t.same(v, { workspace: 'acme', balance: 250n, held: 0n, available: 250n, spendToday: 200n, openHolds: 0 });
  t.equal(w.show('acme', clock.now() - 60_000).spendToday, 550n, 'spend is per UTC day');

  t.same(w.usage('acme'), [
    { model: 'openai/gpt-4o', provider: 'openai', requests: 1, costNano: 550n },
    { model: 'openai/gpt-4o', provider: 'azure', requests: 1, costNano: 200n },
    { model: 'a/free', provider: 'p', requests: 1, costNano: 0n },
  ]);
  t.same(w.usage('acme', clock.now()), [{ model: 'openai/gpt-4o', provider: 'azure', requests: 1, costNano: 200n }]);
  t.same(w.usage('other'), []);
  t.same(w.verify(), { ok: true, problems: [] });

  t.throws(() => w.credit('acme', 0n, 'x'), RangeError);
  t.throws(() => w.credit('acme', -1n, 'x'), RangeError);
  t.throws(() => w.credit('acme', 1 as unknown as bigint, 'x'), RangeError, 'numbers are refused');
  t.throws(() => w.hold('acme', 'r9', -1n), RangeError);
  t.throws(() => w.settle('r3', -1n), RangeError);
  t.same(w.workspaces(), ['acme']);
  s.close();
});

t.test('overdraft: holds refused while available is negative', async (t) => {
  const s = openStore(':memory:');
  s.wallets.credit('w', 100n, '');
  s.wallets.hold('w', 'a', 100n);
  s.wallets.settle('a', 250n);
  t.equal(s.wallets.show('w', 0).balance, -150n);
  t.same(s.wallets.hold('w', 'b', 0n), { ok: false, available: -150n });
  t.same(s.wallets.verify(), { ok: true, problems: [] });
  s.close();
});

t.test('the ledger is append-only and verify catches drift', async (t) => {
  const file = tempDbFile(t);
  const s = openStore(file);
  s.wallets.credit('w', 1_000n, 'seed');
  s.wallets.hold('w', 'h1', 300n);
  s.wallets.hold('w', 'h2', 200n);
  s.wallets.settle('h2', 150n);
  const raw = openDatabase(file);
  t.throws(() => raw.prepare('UPDATE ledger SET amount_nano = 1').run(), /append-only/);
  t.throws(() => raw.prepare('DELETE FROM ledger').run(), /append-only/);
  raw.prepare("UPDATE wallets SET balance_nano = balance_nano + 7, held_nano = held_nano - 1 WHERE workspace = 'w'").run();
  raw.prepare("UPDATE holds SET state = 'released' WHERE trace_id = 'h1'").run();
  raw.close();
  const v = s.wallets.verify();
  t.equal(v.ok, false);
  t.match(v.problems.join('\n'), /wallet w: balance 0.000000857 USD but the ledger gives 0.00000085 USD/);
  t.match(v.problems.join('\n'), /wallet w: held 0.000000299 USD but the ledger's open holds sum to 0.0000003 USD/);
  t.match(v.problems.join('\n'), /hold h1 is released but the ledger says open/);
  s.close();
});

t.test('orphaned holds are released at startup, live ones are kept', async (t) => {
  const file = tempDbFile(t);
  const clock = new ManualClock();
  const a = openStore(file, { clock });
  a.wallets.credit('w', 1_000n, '');
  a.wallets.hold('w', 'live', 100n);
  const b = openStore(file, { clock });
  t.equal(b.wallets.releaseOrphanedHolds(), 0, 'the owner is still open');
  b.wallets.hold('w', 'b-hold', 100n);
  b.close();
  t.equal(a.wallets.releaseOrphanedHolds(), 1, 'a closed owner in this process is gone');
  clock.advance(6 * 3_600_000 + 1);
  t.equal(a.wallets.releaseOrphanedHolds(), 1, 'a stale hold is released even with a live owner');
  t.same(a.wallets.settle('live', 100n), { settled: false }, 'a late settle charges nothing');
  const v = a.wallets.show('w', clock.now());
  t.same([v.balance, v.held, v.openHolds], [1_000n, 0n, 0]);
  t.same(a.wallets.verify(), { ok: true, problems: [] });
  a.close();
});

t.test('holds taken on another host are released only when stale', async (t) => {
  const file = tempDbFile(t);
  const clock = new ManualClock();
  const a = openStore(file, { clock });
  a.wallets.credit('w', 1_000n, '');
  a.wallets.hold('w', 'elsewhere', 100n);
  a.close();
  const raw = openDatabase(file);
  // As if a gateway in another container (its own pid 1) took it.
  raw.prepare("UPDATE holds SET owner_host = 'some-other-container', owner_pid = 1").run();
  raw.close();
  const b = openStore(file, { clock });
  t.equal(b.wallets.releaseOrphanedHolds(), 0, 'its pids cannot be checked from here');
  clock.advance(6 * 3_600_000 + 1);
  t.equal(b.wallets.releaseOrphanedHolds(), 1, 'stale');
  b.close();
});

// ---- property test -------------------------------------------------------------------------

type Op =
  | { op: 'credit'; ws: number; amount: bigint }
  | { op: 'hold'; ws: number; trace: number; amount: bigint }
  | { op: 'settle'; trace: number; cost: bigint }
  | { op: 'release'; trace: number };

const amount = fc.bigInt({ min: 0n, max: 2_000n });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('credit' as const), ws: fc.nat(2), amount: fc.bigInt({ min: 1n, max: 5_000n }) }),
  fc.record({ op: fc.constant('hold' as const), ws: fc.nat(2), trace: fc.nat(12), amount }),
  fc.record({ op: fc.constant('settle' as const), trace: fc.nat(12), cost: fc.bigInt({ min: 0n, max: 4_000n }) }),
  fc.record({ op: fc.constant('release' as const), trace: fc.nat(12) }),
);

t.test('property: random operation sequences keep the books exact', async (t) => {
  let runs = 0;
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
      runs++;
      const s = openStore(':memory:');
      const model = [0, 1, 2].map(() => ({ credits: 0n, settled: 0n }));
      const holds = new Map<string, { ws: number; amount: bigint; state: 'open' | 'closed' }>();
      const wsName = (i: number) => `ws${i}`;
      const heldOf = (ws: number) => [...holds.values()].filter((h) => h.ws === ws && h.state === 'open').reduce((a, h) => a + h.amount, 0n);
      try {
        for (const o of ops) {
          if (o.op === 'credit') {
            s.wallets.credit(wsName(o.ws), o.amount, 'p');
            (model[o.ws] as { credits: bigint }).credits += o.amount;
          } else if (o.op === 'hold') {
            const trace = `t${o.trace}`;
            if (holds.has(trace)) {
              let err: unknown;
              try {
                s.wallets.hold(wsName(o.ws), trace, o.amount);
              } catch (e) {
                err = e;
              }
              if (!(err instanceof WalletError)) throw new Error('duplicate hold was not refused');
              continue;
            }
            const m = model[o.ws] as { credits: bigint; settled: bigint };
            const available = m.credits - m.settled - heldOf(o.ws);
            const r = s.wallets.hold(wsName(o.ws), trace, o.amount);
            if (available >= o.amount) {
              if (!r.ok) throw new Error(`hold refused with ${available} available`);
              holds.set(trace, { ws: o.ws, amount: o.amount, state: 'open' });
            } else if (r.ok || r.available !== available) {
              throw new Error(`hold admitted or wrong available: ${JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`);
            }
          } else if (o.op === 'settle') {
            const trace = `t${o.trace}`;
            const h = holds.get(trace);
            if (!h) {
              let threw = false;
              try {
                s.wallets.settle(trace, o.cost);
              } catch (e) {
                threw = e instanceof WalletError;
              }
              if (!threw) throw new Error('settle of an unknown trace did not throw');
              continue;
            }
            const r = s.wallets.settle(trace, o.cost, { model: 'm/x', provider: 'p' });
            if (r.settled !== (h.state === 'open')) throw new Error('settle idempotency broken');
            if (r.settled) {
              (model[h.ws] as { settled: bigint }).settled += o.cost;
              h.state = 'closed';
            }
          } else {
            const trace = `t${o.trace}`;
            const h = holds.get(trace);
            const r = s.wallets.release(trace);
            if (r.released !== (h?.state === 'open')) throw new Error('release idempotency broken');
            if (h && r.released) h.state = 'closed';
          }
          for (let ws = 0; ws < 3; ws++) {
            const v = s.wallets.show(wsName(ws), 0);
            const m = model[ws] as { credits: bigint; settled: bigint };
            if (v.balance !== m.credits - m.settled) throw new Error(`ws${ws} balance ${v.balance} != ${m.credits - m.settled}`);
            if (v.held !== heldOf(ws)) throw new Error(`ws${ws} held ${v.held} != ${heldOf(ws)}`);
            if (v.available !== v.balance - v.held) throw new Error('available != balance - held');
          }
        }
        const check = s.wallets.verify();
        if (!check.ok) throw new Error(check.problems.join('; '));
        // Replaying every close is a no-op.
        for (const trace of holds.keys()) {
          if (s.wallets.settle(trace, 1n).settled || s.wallets.release(trace).released) {
            const h = holds.get(trace);
            if (h?.state === 'closed') throw new Error(`closed trace ${trace} closed again`);
          }
        }
        if (!s.wallets.verify().ok) throw new Error('verify failed after replay');
      } finally {
        s.close();
      }
    }),
    { numRuns: 300 },
  );
  t.equal(runs >= 300, true, `ran ${runs} sequences`);
});
