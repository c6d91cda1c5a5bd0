// What `ledger verify` proves on either store (src/store/ledger-invariants.ts, run by each store in
// one consistent read): the ledger is append-only; the wallets' balance and held amounts, and each
// hold's state, agree with the ledger; a hold nothing serves any more and an answered request
// without its settlement are named, one line each. One suite, run once per store
// (test/store/ledger-verify-stores.test.ts). The random sequences of holds, settlements and releases
// that keep `ledger verify` clean on both stores are the wallet-service contract's property test
// (test/helpers/wallet-service-contract.ts).
import type { Test } from 'tap';
import { logRow } from './log-rows.ts';
import { COUNT_TOKENS_ENDPOINT } from '../../src/observe/request-row.ts';
import type { RequestLogRow } from '../../src/store/types.ts';

/** One store, empty and migrated, written the way its gateway writes it. */
export interface LedgerRig {
  credit(workspace: string, nano: bigint): Promise<void>;
  /** A hold taken by a process (node) that is alive and serves it. */
  hold(workspace: string, traceId: string, amount: bigint): Promise<void>;
  settle(workspace: string, traceId: string, amount: bigint, cost: bigint): Promise<void>;
  /** One statement on another connection, as someone tampering with the database would run it. */
  sql(statement: string): Promise<void>;
  /** Leaves an open hold with nothing serving it, the way this store can tell (the owner process is
   *  gone; its lease lapsed). */
  abandon(traceId: string): Promise<void>;
  /** Why verify says an abandoned hold is served by nothing, after "is open but nothing serves it: ". */
  abandonedBecause: string;
  /** Rows straight into the request log; resolves once they are written. */
  appendLog(rows: RequestLogRow[]): Promise<void>;
  verify(): Promise<{ ok: boolean; problems: string[] }>;
}

type Make = (t: Test) => Promise<LedgerRig>;

const row = logRow;

export function ledgerVerifyContract(t: Test, make: Make): void {
  t.test('the ledger is append-only', async (t) => {
    const r = await make(t);
    await r.credit('w', 1_000n);
    await t.rejects(r.sql('UPDATE ledger SET amount_nano = 1'), /append-only/, 'no UPDATE');
    await t.rejects(r.sql('DELETE FROM ledger'), /append-only/, 'no DELETE');
    t.same(await r.verify(), { ok: true, problems: [] }, 'the ledger as it was');
  });

  t.test('verify catches wallets and holds that drift from the ledger', async (t) => {
    const r = await make(t);
    await r.credit('w', 1_000n);
    await r.hold('w', 'h1', 300n);
    await r.hold('w', 'h2', 200n);
    await r.settle('w', 'h2', 200n, 150n);
    t.same(await r.verify(), { ok: true, problems: [] }, 'clean before the tampering');
    await r.sql("UPDATE wallets SET balance_nano = balance_nano + 7, held_nano = held_nano - 1 WHERE workspace = 'w'");
    await r.sql("UPDATE holds SET state = 'released' WHERE trace_id = 'h1'");
    const v = await r.verify();
    t.equal(v.ok, false);
    t.match(v.problems.join('\n'), /wallet w: balance 0.000000857 USD but the ledger gives 0.00000085 USD/);
    t.match(v.problems.join('\n'), /wallet w: held 0.000000299 USD but the ledger's open holds sum to 0.0000003 USD/);
    t.match(v.problems.join('\n'), /hold h1 is released but the ledger says open/);
  });

  t.test('verify names a hold nothing serves and each answered request without its settlement', async (t) => {
    const r = await make(t);
    await r.credit('w', 1_000n);
    for (const trace of ['served', 'orphan', 'logged']) await r.hold('w', trace, 100n);
    await r.settle('w', 'logged', 100n, 40n);
    t.same(await r.verify(), { ok: true, problems: [] }, 'open holds a live process serves are fine');
    await r.abandon('orphan');
    await r.appendLog([
      row('logged', { cost_nano: 40n }),
      row('refused', { status: 429, error_code: 'rate_limited', model_served: null, ended: 'rejected' }),
      row('answered-unsettled', {}),
      // A token count is answered and never billed: no settlement by design.
      row('counted', { endpoint: COUNT_TOKENS_ENDPOINT, model_served: 'm' }),
      row('charge-unrecorded', { cost_nano: 75n }),
      row('served', { cost_nano: 99n }),
    ]);
    const v = await r.verify();
    t.equal(v.ok, false);
    t.same(
      v.problems,
      [
        `hold orphan of workspace w is open but nothing serves it: ${r.abandonedBecause}`,
        'request answered-unsettled answered 200 but has no settlement',
        'request charge-unrecorded logged a charge of 0.000000075 USD but has no settlement',
        'request served logged a charge of 0.000000099 USD but has no settlement',
      ],
      'one line each; the live hold, the settled request, the refused one and the token count are fine',
    );
  });
}
