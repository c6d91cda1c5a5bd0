// What limits one hot wallet's admissions per second on PostgreSQL: N concurrent clients
// each loop hold → settle (the compiled PostgreSQL store functions a fleet node calls, src/store/postgres/holds.ts)
// on ONE wallet, against the same on N wallets (one per client) as the control. Every hold and every
// settlement updates the wallet row, so on one wallet they serialise on that row's lock; on N
// wallets only the server's CPU and the ledger's inserts are shared. Private PostgreSQL 15
// (lib/services.mjs: fsync off by default; `--fsync` keeps durable commits, so each statement holds
// the wallet row's lock until its WAL flush). A third run goes through the node's wallet service
// (src/fleet/pg-wallet-service.ts), which sends the settlements of one event-loop turn as one
// statement: on one wallet, the row is then updated once per turn for all of that turn's settlements.
//
//   node bench/run.js hot-wallet [--quick] [--fsync]
import { join } from 'node:path';
import { TREE, ensureBuilt } from './lib/proc.mjs';
import { havePostgres, startPostgres } from './lib/services.mjs';
import { fmt, fmtInt, log, machineInfo, parseFlags, saveResult, table } from './lib/stats.mjs';

const flags = parseFlags(process.argv.slice(2));
const DURATION_MS = flags.quick ? 2000 : 5000;
const FSYNC = process.argv.includes('--fsync');
const CLIENTS = flags.quick ? [1, 8, 32] : [1, 4, 16, 64];
if (!havePostgres()) {
  log('hot-wallet: no PostgreSQL binaries on this machine; nothing to run');
  process.exit(0);
}
ensureBuilt();
const { openPgStore } = await import(join(TREE, 'dist', 'src', 'store', 'postgres', 'store.js'));
const { PgWalletService } = await import(join(TREE, 'dist', 'src', 'admission', 'pg-wallet-service.js'));
const { systemClock } = await import(join(TREE, 'dist', 'src', 'clock.js'));
const pgSrv = await startPostgres({ fsync: FSYNC });
const HOLD = 130_000n;
const COST = 20_000n;
let seq = 0;

/** Hold → settle straight through the store's statements, one each. */
function direct(store) {
  return {
    hold: (ws, trace) => store.holds.hold(ws, trace, HOLD, Date.now(), 'bench'),
    settle: (trace) => store.holds.settle(trace, COST, { model: 'bench' }, Date.now()),
  };
}

/** Hold → settle through a node's wallet service (settlements of a turn batched). */
function viaService(service) {
  return {
    hold: (ws, trace) => service.hold(ws, trace, HOLD),
    settle: (trace) => service.settle(trace, COST, { model: 'bench' }),
  };
}

/** N clients for `DURATION_MS`, each on wallet `walletOf(i)`; returns admissions/s and lock waits seen. */
async function run(path, n, walletOf) {
  let done = 0;
  let lockWaitSamples = 0;
  let samples = 0;
  const end = performance.now() + DURATION_MS;
  const sampler = (async () => {
    const c = await openPgStore(pgSrv.url, { poolMax: 1 });
    while (performance.now() < end) {
      const r = await c.pool.query(
        "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
      );
      lockWaitSamples += Number(r.rows[0].n);
      samples++;
      await new Promise((res) => setTimeout(res, 20));
    }
    await c.close();
  })();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const ws = walletOf(i);
      while (performance.now() < end) {
        const trace = `t${++seq}`;
        const h = await path.hold(ws, trace);
        if (!h.ok) throw new Error(`hold refused on ${ws}`);
        await path.settle(trace);
        done++;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  await sampler;
  return { perSec: done / secs, meanLockWaiters: samples ? lockWaitSamples / samples : 0 };
}

const rows = [];
const out = { machine: machineInfo(), durationMs: DURATION_MS, fsync: FSYNC, runs: [] };
try {
  const setup = await openPgStore(pgSrv.url, { checkSchema: false });
  await setup.migrate();
  const max = Math.max(...CLIENTS);
  for (let i = 0; i < max; i++) await setup.wallets.credit(`w${i}`, 10n ** 15n, 'bench');
  await setup.wallets.credit('hot', 10n ** 15n, 'bench');
  await setup.close();
  for (const n of CLIENTS) {
    const store = await openPgStore(pgSrv.url, { poolMax: n });
    const service = new PgWalletService(store, { clock: systemClock, node: 'bench', timer: false });
    await run(direct(store), n, () => 'hot'); // warm
    const hot = await run(direct(store), n, () => 'hot');
    const batched = await run(viaService(service), n, () => 'hot');
    const spread = await run(direct(store), n, (i) => `w${i}`);
    await service.close();
    await store.close();
    out.runs.push({ clients: n, hot, batched, spread });
    rows.push([
      String(n),
      fmtInt(hot.perSec),
      fmt(hot.meanLockWaiters, 1),
      fmtInt(batched.perSec),
      fmt(batched.meanLockWaiters, 1),
      fmtInt(spread.perSec),
      fmt(spread.meanLockWaiters, 1),
    ]);
    log(
      `clients ${n}: one wallet ${fmtInt(hot.perSec)}/s (lock waiters ${fmt(hot.meanLockWaiters, 1)}), through the wallet service ${fmtInt(batched.perSec)}/s, ${n} wallets ${fmtInt(spread.perSec)}/s`,
    );
  }
} finally {
  await pgSrv.stop();
}
saveResult(FSYNC ? 'hot-wallet-fsync' : 'hot-wallet', out);
process.stdout.write(
  `\n## hot wallet on PostgreSQL (fsync ${FSYNC ? 'on' : 'off'}): hold + settle per second\n\n${table(['clients', 'one wallet /s', 'lock waiters (mean)', 'one wallet, wallet service /s', 'lock waiters (mean)', 'N wallets /s', 'lock waiters (mean)'], rows)}\n`,
);
