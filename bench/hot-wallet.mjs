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
//
// `--escrow` measures instead what a fleet runs by default: three nodes (three escrow wallet
// services, src/fleet/pg-escrow.ts, each on its own pool) on ONE wallet, clients spread over
// them, each looping hold → settle. A node admits against its slice in memory and writes its
// settlements in batches (one statement in flight per node), so the wallet row is locked once per
// batch. After each run: no overdraft (the balance is the credit minus exactly what was charged, and
// nothing stays held once the services closed) and `ledger verify` clean. `--rounds N` (default 3):
// the medians of N runs per client count. As a node does, each settlement carries its request's log
// row (committed in the settlement's statement) and the request's final row follows in the request
// log's batch, replacing it; after each run, every settlement has its one row. `--no-log-rows`
// settles without them (the work of the wallet alone).
//
//   node bench/run.js hot-wallet [--quick] [--fsync] [--escrow [--rounds N] [--no-log-rows]]
import { join } from 'node:path';
import { TREE, ensureBuilt } from './lib/proc.mjs';
import { havePostgres, startPostgres } from './lib/services.mjs';
import { fmt, fmtInt, log, machineInfo, parseFlags, saveResult, table } from './lib/stats.mjs';

const flags = parseFlags(process.argv.slice(2));
const DURATION_MS = flags.quick ? 2000 : 5000;
const FSYNC = process.argv.includes('--fsync');
const CLIENTS = flags.quick ? [1, 8, 32] : [1, 4, 16, 64];
const ESCROW = process.argv.includes('--escrow');
const ESCROW_CLIENTS = flags.quick ? [96, 192] : [48, 96, 192, 384];
const ROUNDS = flags.rounds ?? 3;
const NODES = 3;
const LOG_ROWS = !process.argv.includes('--no-log-rows');
/** `--final-rows-only`: the log rows in the request log's batch only, none with the settlement. */
const FINAL_ONLY = process.argv.includes('--final-rows-only');
if (!havePostgres()) {
  log('hot-wallet: no PostgreSQL binaries on this machine; nothing to run');
  process.exit(0);
}
ensureBuilt();
const { openPgStore } = await import(join(TREE, 'dist', 'src', 'store', 'postgres', 'store.js'));
const { PgWalletService } = await import(join(TREE, 'dist', 'src', 'fleet', 'pg-wallet-service.js'));
const { systemClock } = await import(join(TREE, 'dist', 'src', 'clock.js'));
const { EscrowWalletService } = await import(join(TREE, 'dist', 'src', 'fleet', 'pg-escrow.js'));
const pgSrv = await startPostgres({ fsync: FSYNC });
const HOLD = 130_000n;
const COST = 20_000n;
let seq = 0;

/** A request's log row as a node writes it: at settlement, then final (`latencyMs` later). */
function logRow(trace, ws, latencyMs) {
  return {
    trace_id: trace,
    ts: Date.now(),
    workspace: ws,
    key_id: 'key_bench',
    endpoint: 'chat_completions',
    model_requested: 'acme/chat-small',
    model_served: 'acme/chat-small',
    provider: 'alpha',
    deployment: 'alpha/chat-small',
    attempts: 1,
    attempts_json: [
      {
        provider: 'alpha',
        model: 'acme/chat-small',
        deployment: 'alpha/chat-small',
        outcome: 'ok',
        status: 200,
        ms: 3,
      },
    ],
    stream: false,
    status: 200,
    error_code: null,
    latency_ms: latencyMs,
    ttfb_ms: 2,
    prompt_tokens: 12,
    completion_tokens: 30,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: COST,
    app_title: null,
    app_origin: null,
    session_id: null,
    ended: 'completed',
  };
}

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

/** One escrow round: `n` clients over NODES nodes on the wallet `ws` (credited `credit`). */
async function escrowRound(n, ws, credit) {
  const nodes = [];
  for (let i = 0; i < NODES; i++) {
    const store = await openPgStore(pgSrv.url, { poolMax: 4 });
    nodes.push({ store, service: new EscrowWalletService(store, { clock: systemClock, node: `bench-${i}` }) });
  }
  let done = 0;
  let refused = 0;
  let charged = 0n;
  const end = performance.now() + DURATION_MS;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const { service, store } = nodes[i % NODES];
      while (performance.now() < end) {
        const trace = `e${++seq}`;
        const h = await service.hold(ws, trace, HOLD);
        if (!h.ok) {
          refused++;
          continue;
        }
        if (!LOG_ROWS) {
          if (await service.settle(trace, COST, { model: 'bench' })) charged += COST;
        } else {
          const row = FINAL_ONLY ? undefined : logRow(trace, ws, 3);
          if (await service.settle(trace, COST, { model: 'bench' }, row)) charged += COST;
          store.requestLog.append(logRow(trace, ws, 4));
        }
        done++;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const batches = nodes.reduce((a, x) => a + x.service.batchStats.batches, 0);
  const settlements = nodes.reduce((a, x) => a + x.service.batchStats.settlements, 0);
  for (const x of nodes) await x.service.close();
  for (const x of nodes) await x.store.requestLog.flush();
  const w = await nodes[0].store.wallets.show(ws, Date.now());
  const count = await nodes[0].store.pool.query(
    'SELECT count(*) AS rows, count(DISTINCT trace_id) AS traces FROM request_log WHERE workspace = $1',
    [ws],
  );
  const logged = count.rows[0];
  const verify = await nodes[0].store.wallets.verify();
  for (const x of nodes) await x.store.close();
  const overdraft = w.balance < 0n || w.balance !== credit - charged || w.held !== 0n;
  // One row per settled request, none twice.
  const rowsOk = !LOG_ROWS || (Number(logged.rows) === done && Number(logged.traces) === done);
  return {
    rowsOk,
    perSec: done / secs,
    refused,
    meanBatch: batches ? settlements / batches : 0,
    overdraft,
    verify: verify.ok,
    problems: verify.problems.slice(0, 3),
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

if (ESCROW) {
  const rows = [];
  const out = {
    machine: machineInfo(),
    durationMs: DURATION_MS,
    fsync: FSYNC,
    nodes: NODES,
    rounds: ROUNDS,
    logRows: LOG_ROWS,
    runs: [],
  };
  const CREDIT = 10n ** 15n;
  try {
    const setup = await openPgStore(pgSrv.url, { checkSchema: false });
    await setup.migrate();
    const wallets = ESCROW_CLIENTS.length * ROUNDS + 1;
    for (let i = 0; i < wallets; i++) await setup.wallets.credit(`hot${i}`, CREDIT, 'bench');
    await setup.close();
    await escrowRound(ESCROW_CLIENTS[0], 'hot0', CREDIT); // warm
    let w = 1;
    for (const n of ESCROW_CLIENTS) {
      const rounds = [];
      for (let r = 0; r < ROUNDS; r++) rounds.push(await escrowRound(n, `hot${w++}`, CREDIT));
      const ok = rounds.every((x) => !x.overdraft && x.verify && x.refused === 0 && x.rowsOk);
      out.runs.push({ clients: n, rounds });
      rows.push([
        String(n),
        rounds.map((x) => fmtInt(x.perSec)).join(' / '),
        fmtInt(median(rounds.map((x) => x.perSec))),
        fmt(median(rounds.map((x) => x.meanBatch)), 1),
        ok
          ? 'none, verify ok'
          : JSON.stringify(
              rounds.map((x) => ({ o: x.overdraft, v: x.verify, r: x.refused, l: x.rowsOk, p: x.problems })),
            ),
      ]);
      log(
        `escrow, ${n} clients over ${NODES} nodes: ${rounds.map((x) => fmtInt(x.perSec)).join(' / ')} /s (mean batch ${fmt(median(rounds.map((x) => x.meanBatch)), 1)})${ok ? '' : ' PROBLEM'}`,
      );
    }
  } finally {
    await pgSrv.stop();
  }
  saveResult(FSYNC ? 'hot-wallet-escrow-fsync' : 'hot-wallet-escrow', out);
  process.stdout.write(
    `\n## hot wallet, escrow, ${NODES} nodes on one wallet (fsync ${FSYNC ? 'on' : 'off'}, log rows ${LOG_ROWS ? 'on' : 'off'}): hold + settle per second\n\n${table(['clients', `rounds (${ROUNDS})`, 'median /s', 'settlements per statement (median)', 'overdraft, refusals, ledger verify'], rows)}\n`,
  );
  process.exit(0);
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
