// What every wallet service promises the admission path, whichever way the gateway runs: the
// wallet book on this thread's connection, the book behind the writer thread (`serve`), a serving
// thread's coordinator client (`serve --workers N`) and the PostgreSQL service of a fleet node. One
// suite, run once per implementation (test/admission/wallet-services.test.ts), so a rule is written
// once and no implementation can drift from it.
import fc from 'fast-check';
import type { Test } from 'tap';
import type { WalletService } from '../../src/admission/admission.ts';

/** One implementation, ready to use, with the store behind it. */
export interface WalletRig {
  service: WalletService;
  /** Credits the workspace through the store (as `pi-gateway wallet credit` does) and tells the
   *  service, as the gateway's change watch would. */
  credit(workspace: string, nano: bigint): Promise<void>;
  /** The wallet as the store's ledger has it, once everything the service decided is written. */
  ledger(workspace: string): Promise<{ balance: bigint; held: bigint }>;
  /** The store's `ledger verify`. */
  verify(): Promise<{ ok: boolean; problems: string[] }>;
}

export interface ContractOptions {
  /** Random operation sequences in the property test (each is a fresh rig). */
  propertyRuns: number;
}

type Make = (t: Test) => Promise<WalletRig>;

const hold = async (s: WalletService, ws: string, trace: string, amount: bigint) => await s.hold(ws, trace, amount);

export function walletServiceContract(t: Test, make: Make, opts: ContractOptions): void {
  t.test('admits within the balance, refuses beyond it with what is available', async (t) => {
    const r = await make(t);
    t.same(await hold(r.service, 'w', 'empty', 1n), { ok: false, available: 0n }, 'no wallet: nothing available');
    await r.credit('w', 1_000n);
    t.same(await hold(r.service, 'w', 'a', 600n), { ok: true });
    t.same(await hold(r.service, 'w', 'b', 401n), { ok: false, available: 400n }, 'one nano-dollar short');
    t.same(await hold(r.service, 'w', 'b', 400n), { ok: true }, 'a refused trace may try again');
    t.same(await hold(r.service, 'w', 'c', 1n), { ok: false, available: 0n });
    t.same(await r.ledger('w'), { balance: 1_000n, held: 1_000n });
    t.same(await r.verify(), { ok: true, problems: [] });
  });

  t.test('a trace holds once while its hold is open', async (t) => {
    const r = await make(t);
    await r.credit('w', 1_000n);
    t.same(await hold(r.service, 'w', 'a', 100n), { ok: true });
    await t.rejects(hold(r.service, 'w', 'a', 1n), { code: 'duplicate_trace' });
    t.same(await r.ledger('w'), { balance: 1_000n, held: 100n }, 'the second hold took nothing');
  });

  t.test('wallets are apart: one workspace never spends another one’s balance', async (t) => {
    const r = await make(t);
    await r.credit('a', 500n);
    await r.credit('b', 100n);
    t.same(await hold(r.service, 'a', 'a1', 500n), { ok: true });
    t.same(await hold(r.service, 'b', 'b1', 101n), { ok: false, available: 100n });
    t.same(await r.ledger('b'), { balance: 100n, held: 0n });
  });

  t.test('settle charges once; again, or for a trace never held, it is a no-op', async (t) => {
    const r = await make(t);
    await r.credit('w', 1_000n);
    await hold(r.service, 'w', 'a', 600n);
    t.equal(await r.service.settle('a', 250n, { model: 'v/m', provider: 'p' }), true);
    t.equal(await r.service.settle('a', 250n, {}), false, 'a second settlement charges nothing');
    t.equal(await r.service.settle('never', 5n, {}), false, 'an unknown trace charges nothing');
    t.same(await r.ledger('w'), { balance: 750n, held: 0n });
    t.same(await hold(r.service, 'w', 'b', 750n), { ok: true }, 'the rest of the hold is available again');
    t.same(await r.verify(), { ok: true, problems: [] });
  });

  t.test('release frees the hold at no cost; a settlement after it charges nothing', async (t) => {
    const r = await make(t);
    await r.credit('w', 1_000n);
    await hold(r.service, 'w', 'a', 900n);
    await r.service.release('a');
    await r.service.release('a');
    await r.service.release('never');
    t.equal(await r.service.settle('a', 900n, {}), false);
    t.same(await r.ledger('w'), { balance: 1_000n, held: 0n });
    t.same(await r.verify(), { ok: true, problems: [] });
  });

  t.test('a zero hold fits an empty wallet (a request that cannot cost anything)', async (t) => {
    const r = await make(t);
    t.same(await hold(r.service, 'nobody', 'z', 0n), { ok: true });
    t.equal(await r.service.settle('z', 0n, {}), true);
    t.same(await r.ledger('nobody'), { balance: 0n, held: 0n });
  });

  t.test('concurrent holds on a wallet worth five requests admit exactly five', async (t) => {
    const r = await make(t);
    await r.credit('w', 500n);
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => hold(r.service, 'w', `c${i}`, 100n)));
    t.equal(results.filter((x) => x.ok).length, 5);
    t.same(await r.ledger('w'), { balance: 500n, held: 500n });
    const settled = await Promise.all(results.flatMap((x, i) => (x.ok ? [r.service.settle(`c${i}`, 100n, {})] : [])));
    t.ok(
      settled.every((x) => x),
      'each admitted hold settles',
    );
    t.same(await r.ledger('w'), { balance: 0n, held: 0n }, 'never overdrawn');
    t.same(await r.verify(), { ok: true, problems: [] });
  });

  t.test('property: random credits, holds, settlements and releases keep the ledger exact', async (t) => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40 }), async (ops) => {
        const r = await make(t);
        await runAgainstModel(r, ops);
      }),
      { numRuns: opts.propertyRuns },
    );
    t.pass(`${opts.propertyRuns} sequences kept the ledger equal to the model`);
  });
}

type Op =
  | { op: 'credit'; ws: number; amount: bigint }
  | { op: 'hold'; ws: number; trace: number; amount: bigint }
  | { op: 'settle'; trace: number; cost: bigint }
  | { op: 'release'; trace: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('credit' as const), ws: fc.nat(1), amount: fc.bigInt({ min: 1n, max: 3_000n }) }),
  fc.record({
    op: fc.constant('hold' as const),
    ws: fc.nat(1),
    trace: fc.nat(9),
    amount: fc.bigInt({ min: 0n, max: 2_000n }),
  }),
  fc.record({ op: fc.constant('settle' as const), trace: fc.nat(9), cost: fc.bigInt({ min: 0n, max: 2_000n }) }),
  fc.record({ op: fc.constant('release' as const), trace: fc.nat(9) }),
);

/** Plays the operations on the rig and on a model of the rules, failing at the first difference. */
async function runAgainstModel(r: WalletRig, ops: Op[]): Promise<void> {
  const wallets = [0, 1].map(() => ({ balance: 0n, held: 0n }));
  /** trace → its hold: open, or closed (a closed trace is never reused, as the gateway mints one per request). */
  const holds = new Map<number, { ws: number; amount: bigint; open: boolean }>();
  const name = (ws: number) => `ws${ws}`;
  for (const o of ops) {
    if (o.op === 'credit') {
      await r.credit(name(o.ws), o.amount);
      (wallets[o.ws] as { balance: bigint }).balance += o.amount;
    } else if (o.op === 'hold') {
      if (holds.has(o.trace)) continue;
      const w = wallets[o.ws] as { balance: bigint; held: bigint };
      const got = await r.service.hold(name(o.ws), `t${o.trace}`, o.amount);
      const fits = w.balance - w.held >= o.amount;
      if (got.ok !== fits) throw new Error(`hold t${o.trace} of ${o.amount}: got ${got.ok}, the model says ${fits}`);
      if (!got.ok && got.available !== w.balance - w.held)
        throw new Error(`hold t${o.trace}: available ${got.available}, the model says ${w.balance - w.held}`);
      if (got.ok) {
        w.held += o.amount;
        holds.set(o.trace, { ws: o.ws, amount: o.amount, open: true });
      }
    } else {
      const h = holds.get(o.trace);
      // A settlement never exceeds its hold: the admission path caps every cost at what it held.
      const cost = o.op === 'settle' && h ? minBig(o.cost, h.amount) : 0n;
      let done: boolean;
      if (o.op === 'settle') done = await r.service.settle(`t${o.trace}`, cost, {});
      else {
        await r.service.release(`t${o.trace}`);
        done = h?.open === true;
      }
      if (done !== (h?.open === true)) throw new Error(`${o.op} t${o.trace}: got ${done}, the model says ${!done}`);
      if (h?.open) {
        const w = wallets[h.ws] as { balance: bigint; held: bigint };
        w.held -= h.amount;
        w.balance -= cost;
        h.open = false;
      }
    }
  }
  for (const ws of [0, 1]) {
    const got = await r.ledger(name(ws));
    const want = wallets[ws] as { balance: bigint; held: bigint };
    if (got.balance !== want.balance || got.held !== want.held)
      throw new Error(`${name(ws)}: the ledger has ${got.balance}/${got.held}, the model ${want.balance}/${want.held}`);
  }
  const v = await r.verify();
  if (!v.ok) throw new Error(`ledger verify: ${v.problems.join('; ')}`);
}

const minBig = (a: bigint, b: bigint): bigint => (a < b ? a : b);
