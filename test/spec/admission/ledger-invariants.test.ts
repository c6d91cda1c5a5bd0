// The ledger invariants under a randomized concurrent workload over HTTP
// (test/helpers/ledger-invariants-contract.ts) on both stores: `serve` on a database file, read
// through a second connection, and a fleet node (`serve --db postgres://…`, run in process) on a
// private PostgreSQL, read in REPEATABLE READ transactions.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { runNode } from '../../../src/runtime/node-runtime.ts';
import { ManualClock } from '../../../src/clock.ts';
import { decimalToNano } from '../../../src/money.ts';
import { startSimulator } from '../../../src/simulator/server.ts';
import { openDatabase } from '../../../src/store/sqlite/db.ts';
import { inTransaction } from '../../../src/store/postgres/db.ts';
import { openPgStore } from '../../../src/store/postgres/store.ts';
import { fileStack, ledgerRows } from '../../helpers/admission.ts';
import { ledgerInvariantsContract, type Snapshot } from '../../helpers/ledger-invariants-contract.ts';
import { startPrivatePg, type PrivatePg } from '../../helpers/pg.ts';
import { DEFAULT_NOW, fixtureConfig } from '../../helpers/stack.ts';

const LIMITS = { firstByteTimeoutMs: 1000, streamIdleTimeoutMs: 1000 };

/** One consistent read of every wallet against its ledger and holds (a read transaction). */
function snapshot(file: string): Snapshot[] {
  const db = openDatabase(file, { readonly: true });
  try {
    const read = db.transaction(() => {
      const q = (sql: string) => db.prepare(sql).safeIntegers(true).all() as Record<string, unknown>[];
      const sums = new Map<string, Record<string, bigint>>();
      for (const r of q(
        "SELECT workspace, kind, SUM(amount_nano) AS total FROM ledger WHERE kind IN ('credit', 'settle') GROUP BY workspace, kind",
      )) {
        const m = sums.get(r['workspace'] as string) ?? {};
        m[r['kind'] as string] = r['total'] as bigint;
        sums.set(r['workspace'] as string, m);
      }
      const open = new Map(
        q("SELECT workspace, SUM(amount_nano) AS held FROM holds WHERE state = 'open' GROUP BY workspace").map((r) => [
          r['workspace'] as string,
          r['held'] as bigint,
        ]),
      );
      return q('SELECT workspace, balance_nano, held_nano FROM wallets').map((w) => {
        const ws = w['workspace'] as string;
        return {
          ws,
          credits: sums.get(ws)?.['credit'] ?? 0n,
          settles: sums.get(ws)?.['settle'] ?? 0n,
          openHolds: open.get(ws) ?? 0n,
          balance: w['balance_nano'] as bigint,
          held: w['held_nano'] as bigint,
        };
      });
    });
    return read();
  } finally {
    db.close();
  }
}

t.test('serve on a database file', async (t) => {
  ledgerInvariantsContract(t, async (t) => {
    const s = await fileStack(t, { limits: LIMITS });
    return {
      url: s.url,
      key: async (ws) => s.key(ws),
      credit: async (ws, usd) => s.credit(ws, usd),
      snapshot: async () => snapshot(s.file),
      ledgerRows: async () => ledgerRows(s.file),
      openHolds: async () =>
        s.store.wallets.workspaces().reduce((n, ws) => n + s.store.wallets.show(ws, s.clock.now()).openHolds, 0),
      verify: async () => s.store.wallets.verify(),
      logRows: async () => {
        s.store.requestLog.flush();
        return s.store.requestLog.query({ limit: 10_000 });
      },
    };
  });
});

/** The snapshot's reads in PostgreSQL's SQL: the same sums, SUM of bigint is numeric (a string). */
const PG_SNAPSHOT = {
  sums: "SELECT workspace, kind, SUM(amount_nano)::text AS total FROM ledger WHERE kind IN ('credit', 'settle') GROUP BY workspace, kind",
  // What is held: the open holds and, under escrow, the open slices (each counted in held_nano).
  open: `SELECT workspace, SUM(amount)::text AS held FROM (
           SELECT workspace, amount_nano AS amount FROM holds WHERE state = 'open'
           UNION ALL SELECT workspace, amount_nano FROM slices WHERE state = 'open') x GROUP BY workspace`,
  wallets: 'SELECT workspace, balance_nano::text AS balance, held_nano::text AS held FROM wallets',
};

for (const walletAdmission of ['escrow', 'per-request'] as const)
  t.test(`a fleet node on PostgreSQL (${walletAdmission})`, async (t) => {
    let pg: PrivatePg | null = null;
    const saved = process.env.PI_MASTER_KEY;
    t.before(async () => {
      pg = await startPrivatePg();
    });
    t.teardown(async () => {
      await pg?.destroy();
      if (saved === undefined) delete process.env.PI_MASTER_KEY;
      else process.env.PI_MASTER_KEY = saved;
    });
    ledgerInvariantsContract(t, async (t: Test) => {
      const sim = await startSimulator({});
      t.teardown(() => sim.close());
      const url = await (pg as PrivatePg).createDatabase();
      const masterKey = randomBytes(32).toString('base64');
      const m = await openPgStore(url, { checkSchema: false, masterKey });
      await m.migrate();
      const fixture = fixtureConfig('gateway');
      for (const r of fixture.resources)
        if (!r.credential.endsWith('-unsealed-key') && !(await m.secrets.list()).some((x) => x.name === r.credential))
          await m.secrets.set(r.credential, `upstream-secret-${r.credential}`);
      await m.close();
      process.env.PI_MASTER_KEY = masterKey;
      const config = {
        ...fixture,
        settings: { ...fixture.settings, limits: { ...fixture.settings.limits, ...LIMITS } },
      };
      const clock = new ManualClock(DEFAULT_NOW);
      const node = await runNode({
        config,
        db: url,
        redis: null,
        host: '127.0.0.1',
        port: 0,
        upstreamOverride: sim.url,
        clock,
        walletAdmission,
      });
      t.teardown(async () => {
        await node.gateway.close();
        await node.close();
      });
      const store = node.store;
      return {
        url: node.gateway.url,
        key: async (ws) => (await store.apiKeys.create({ workspace: ws })).key,
        credit: async (ws, usd) => void (await store.wallets.credit(ws, decimalToNano(usd), 'test credit')),
        snapshot: () =>
          inTransaction(
            store.pool,
            async (c) => {
              const sums = new Map<string, Record<string, bigint>>();
              for (const r of (await c.query<{ workspace: string; kind: string; total: string }>(PG_SNAPSHOT.sums))
                .rows) {
                const m = sums.get(r.workspace) ?? {};
                m[r.kind] = BigInt(r.total);
                sums.set(r.workspace, m);
              }
              const open = new Map(
                (await c.query<{ workspace: string; held: string }>(PG_SNAPSHOT.open)).rows.map((r) => [
                  r.workspace,
                  BigInt(r.held),
                ]),
              );
              const wallets = (await c.query<{ workspace: string; balance: string; held: string }>(PG_SNAPSHOT.wallets))
                .rows;
              return wallets.map(
                (w): Snapshot => ({
                  ws: w.workspace,
                  credits: sums.get(w.workspace)?.['credit'] ?? 0n,
                  settles: sums.get(w.workspace)?.['settle'] ?? 0n,
                  openHolds: open.get(w.workspace) ?? 0n,
                  balance: BigInt(w.balance),
                  held: BigInt(w.held),
                }),
              );
            },
            'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
          ),
        ledgerRows: async () =>
          (
            await store.pool.query<{ trace_id: string; kind: string; amount: string }>(
              'SELECT trace_id, kind, amount_nano::text AS amount FROM ledger ORDER BY id',
            )
          ).rows.map((r) => ({ trace_id: r.trace_id, kind: r.kind, amount_nano: BigInt(r.amount) })),
        openHolds: async () =>
          Number(
            (await store.pool.query<{ n: string }>("SELECT count(*)::text AS n FROM holds WHERE state = 'open'"))
              .rows[0]?.n,
          ),
        verify: () => store.wallets.verify(),
        logRows: async () => {
          await store.requestLog.flush();
          return store.requestLog.query({ limit: 10_000 });
        },
      };
    });
  });
