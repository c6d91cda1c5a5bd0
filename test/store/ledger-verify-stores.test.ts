// The `ledger verify` contract (test/helpers/ledger-verify-contract.ts) on both stores: the embedded
// store (a database file, written as the wallet book writes it) and PostgreSQL (written as a fleet
// node's wallet service writes it, holds with a lease).
import t, { type Test } from 'tap';
import { ManualClock } from '../../src/clock.ts';
import { openDatabase } from '../../src/store/sqlite/db.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { ledgerVerifyContract } from '../helpers/ledger-verify-contract.ts';
import { startPrivatePg, type PrivatePg } from '../helpers/pg.ts';
import { hold, settle, write } from './sqlite/fixtures/ledger.ts';
import { masterKey, tempDbFile } from './sqlite/fixtures/temp-db.ts';

const NOW = Date.UTC(2026, 0, 1);

t.test('the embedded store', async (t) => {
  ledgerVerifyContract(t, async (t: Test) => {
    const file = tempDbFile(t);
    const s = openStore(file);
    t.teardown(() => s.close());
    const raw = openDatabase(file);
    t.teardown(() => raw.close());
    // pid 2147483646 is never a process of ours: as if the gateway that took the hold had died.
    const gonePid = 2147483646;
    return {
      credit: async (ws, nano) => void s.wallets.credit(ws, nano, 'seed'),
      hold: async (ws, trace, amount) => write(s, hold(ws, trace, amount)),
      settle: async (ws, trace, amount, cost) => write(s, settle(ws, trace, amount, cost)),
      sql: async (statement) => void raw.prepare(statement).run(),
      abandon: async (trace) =>
        void raw.prepare("UPDATE holds SET owner = 'gone', owner_pid = ? WHERE trace_id = ?").run(gonePid, trace),
      abandonedBecause: `the process that took it (pid ${gonePid}) is gone; the next start releases it`,
      appendLog: async (rows) => {
        for (const row of rows) s.requestLog.append(row);
        s.requestLog.flush();
      },
      verify: async () => s.wallets.verify(),
    };
  });
});

t.test('PostgreSQL', async (t) => {
  let server: PrivatePg | null = null;
  t.before(async () => {
    server = await startPrivatePg();
  });
  t.teardown(() => server?.destroy());
  ledgerVerifyContract(t, async (t: Test) => {
    const clock = new ManualClock(NOW);
    const url = await (server as PrivatePg).createDatabase();
    const m = await openPgStore(url, { clock, checkSchema: false, masterKey: masterKey(1) });
    await m.migrate();
    await m.close();
    const s = await openPgStore(url, { clock, masterKey: masterKey(1), requestLog: { flushIntervalMs: 5 } });
    t.teardown(() => s.close());
    return {
      credit: async (ws, nano) => void (await s.wallets.credit(ws, nano, 'seed')),
      hold: async (ws, trace, amount) => {
        const r = await s.holds.hold(ws, trace, amount, clock.now(), 'node-a');
        if (!r.ok) throw new Error(`hold ${trace} refused`);
      },
      settle: async (_ws, trace, _amount, cost) => {
        if (!(await s.holds.settle(trace, cost, {}, clock.now()))) throw new Error(`settle ${trace} did nothing`);
      },
      sql: async (statement) => void (await s.pool.query(statement)),
      // Its node stopped renewing it: the lease ran out a second ago.
      abandon: async (trace) =>
        void (await s.pool.query('UPDATE holds SET lease_until = $1 WHERE trace_id = $2', [clock.now() - 1000, trace])),
      abandonedBecause:
        "its lease lapsed 1000 ms ago (node node-a stopped renewing it); any node's sweeper releases it",
      appendLog: async (rows) => {
        for (const row of rows) s.requestLog.append(row);
        await s.requestLog.flush();
      },
      verify: () => s.wallets.verify(),
    };
  });
});
