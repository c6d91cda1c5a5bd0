// Property test of the path the gateway takes for money: random credits (the CLI), holds, settlements
// and releases (the wallet book), with group commits at random points, keep the book's memory and the
// ledger exact against a model, one hold per trace, every close idempotent, and `verify()` clean.
import fc from 'fast-check';
import t from 'tap';
import { WalletBook } from '../../src/admission/wallet-book.ts';
import { openStore, WalletError } from '../../src/store/sqlite/store.ts';

type Op =
  | { op: 'credit'; ws: number; amount: bigint }
  | { op: 'hold'; ws: number; trace: number; amount: bigint }
  | { op: 'settle'; trace: number; cost: bigint }
  | { op: 'release'; trace: number }
  | { op: 'flush' };

const amount = fc.bigInt({ min: 0n, max: 2_000n });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('credit' as const), ws: fc.nat(2), amount: fc.bigInt({ min: 1n, max: 5_000n }) }),
  fc.record({ op: fc.constant('hold' as const), ws: fc.nat(2), trace: fc.nat(12), amount }),
  fc.record({ op: fc.constant('settle' as const), trace: fc.nat(12), cost: fc.bigInt({ min: 0n, max: 4_000n }) }),
  fc.record({ op: fc.constant('release' as const), trace: fc.nat(12) }),
  fc.record({ op: fc.constant('flush' as const) }),
);

const json = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? String(x) : x));

t.test('property: random operation sequences keep the books exact', async (t) => {
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { maxLength: 80 }), async (ops) => {
      runs++;
      const s = openStore(':memory:');
      const errors: unknown[] = [];
      const book = new WalletBook(s, (e) => errors.push(e));
      const model = [0, 1, 2].map(() => ({ credits: 0n, settled: 0n }));
      const holds = new Map<string, { ws: number; amount: bigint; state: 'open' | 'closed' }>();
      const wsName = (i: number) => `ws${i}`;
      const heldOf = (ws: number) =>
        [...holds.values()].filter((h) => h.ws === ws && h.state === 'open').reduce((a, h) => a + h.amount, 0n);
      /** Settlements not yet committed, with the answer each must resolve to. */
      let pending: { p: Promise<boolean>; want: boolean; trace: string }[] = [];
      const commit = async () => {
        book.flush();
        for (const { p, want, trace } of pending)
          if ((await p) !== want) throw new Error(`settle ${trace} resolved ${!want}`);
        pending = [];
        if (errors.length > 0) throw new Error(`a batch failed: ${String(errors[0])}`);
        for (let ws = 0; ws < 3; ws++) {
          const v = s.wallets.show(wsName(ws), 0);
          const m = model[ws] as { credits: bigint; settled: bigint };
          if (v.balance !== m.credits - m.settled || v.held !== heldOf(ws))
            throw new Error(`ledger ws${ws}: ${json(v)}`);
        }
      };
      try {
        for (const o of ops) {
          if (o.op === 'credit') {
            s.wallets.credit(wsName(o.ws), o.amount, 'p');
            (model[o.ws] as { credits: bigint }).credits += o.amount;
            book.refresh(); // what StoreView.sync triggers when it notices the credit
          } else if (o.op === 'hold') {
            const trace = `t${o.trace}`;
            const h = holds.get(trace);
            if (h?.state === 'closed') continue; // a closed trace reused fails its batch: wallet-book.test.ts
            if (h) {
              let err: unknown;
              try {
                book.hold(wsName(o.ws), trace, o.amount);
              } catch (e) {
                err = e;
              }
              if (!(err instanceof WalletError)) throw new Error('duplicate hold was not refused');
              continue;
            }
            const m = model[o.ws] as { credits: bigint; settled: bigint };
            const available = m.credits - m.settled - heldOf(o.ws);
            const r = book.hold(wsName(o.ws), trace, o.amount);
            if (available >= o.amount) {
              if (!r.ok) throw new Error(`hold refused with ${available} available`);
              holds.set(trace, { ws: o.ws, amount: o.amount, state: 'open' });
            } else if (r.ok || r.available !== available) {
              throw new Error(`hold admitted or wrong available: ${json(r)}`);
            }
          } else if (o.op === 'settle') {
            const trace = `t${o.trace}`;
            const h = holds.get(trace);
            const open = h?.state === 'open';
            pending.push({ p: book.settle(trace, o.cost, { model: 'm/x', provider: 'p' }), want: open, trace });
            if (h && open) {
              (model[h.ws] as { settled: bigint }).settled += o.cost;
              h.state = 'closed';
            }
          } else if (o.op === 'release') {
            const h = holds.get(`t${o.trace}`);
            book.release(`t${o.trace}`);
            if (h) h.state = 'closed';
          } else {
            await commit();
          }
          for (let ws = 0; ws < 3; ws++) {
            const v = book.view(wsName(ws));
            const m = model[ws] as { credits: bigint; settled: bigint };
            if (v.balance !== m.credits - m.settled)
              throw new Error(`ws${ws} balance ${v.balance} != ${m.credits - m.settled}`);
            if (v.held !== heldOf(ws)) throw new Error(`ws${ws} held ${v.held} != ${heldOf(ws)}`);
            if (v.available !== v.balance - v.held) throw new Error('available != balance - held');
          }
        }
        await commit();
        const check = s.wallets.verify();
        if (!check.ok) throw new Error(check.problems.join('; '));
        // Replaying every close of a closed trace is a no-op.
        for (const [trace, h] of holds) {
          if (h.state !== 'closed') continue;
          const before = json([0, 1, 2].map((ws) => book.view(wsName(ws))));
          if (await book.settle(trace, 1n, {})) throw new Error(`closed trace ${trace} settled again`);
          book.release(trace);
          if (json([0, 1, 2].map((ws) => book.view(wsName(ws)))) !== before)
            throw new Error(`closed trace ${trace} closed again`);
        }
        await commit();
        if (!s.wallets.verify().ok) throw new Error('verify failed after replay');
      } finally {
        book.close();
        s.close();
      }
    }),
    { numRuns: 300 },
  );
  t.equal(runs >= 300, true, `ran ${runs} sequences`);
});
