// The fleet's exactness drills at full size, over real processes: three compiled `pi-gateway serve`
// nodes (dist/) on one private PostgreSQL and one private Redis (lib/services.mjs), the compiled
// simulator upstream, the fixture config and workspaces of test/spec/fleet/drills.test.ts (the CI-sized
// version of these drills). Each drill counts what it claims and prints one table:
//   bursts    B bursts of C concurrent requests spread over three nodes on a wallet worth five
//             requests (topped up by two between bursts): admitted, refused, overdraft (must be 0),
//             every answered 200 settled exactly once, `pi-gateway ledger verify` on the URL
//   rpm       a key with `--rpm 50` hit by 150 requests from three nodes within one minute
//   sigkill   K rounds: a third node started, a burst (its share slow streams), the node SIGKILLed
//             300 ms in; then every answered 200 settled once, none twice, and the time from each
//             kill to the release of its orphaned holds by the surviving nodes' sweepers (lease 30 s)
//   restart   PostgreSQL stopped and started, then Redis, each in the middle of a burst of slow
//             streams: 503 store_unavailable while PostgreSQL is down, no overdraft, no ledger row
//             lost, and the time until every node answers 200 again by itself
//
// The nodes admit by escrow (the default, docs/fleet.md "Escrow"): the bursts also report what the
// nodes' slices held after the last burst and how long until the idle slices were back; the kills
// count each victim's orphaned slices with its holds and time their release the same way.
// `--per-request` runs the nodes with `--wallet-admission per-request` instead.
//
// The fleet mixes both kinds of node: its first node runs two serving threads (`--workers 2`, a
// coordinator holding the node's wallet service), the others one; every other SIGKILL victim runs
// `--workers 2` too.
//
//   node bench/run.js fleet-drills [--quick] [--per-request]      (--quick: 10 bursts of 60, 3 kills)
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, setGlobalDispatcher } from 'undici';
import { CORES, RESULTS_DIR, ROOT, TASKSET, TREE, ensureBuilt } from './lib/proc.mjs';
import { havePostgres, startPostgres, startRedis } from './lib/services.mjs';
import { CLI, startServeProcess } from './lib/serve.mjs';
import { startSimulator } from './lib/stack.mjs';
import { fmtInt, log, machineInfo, parseFlags } from './lib/stats.mjs';

const flags = parseFlags(process.argv.slice(2));
const PER_REQUEST = process.argv.includes('--per-request');
const P = flags.quick ? { bursts: 10, burst: 60, kills: 3 } : { bursts: 100, burst: 200, kills: 20 };
const CONFIG = join(ROOT, 'test', 'fixtures', 'config', 'gateway');
const HOLD_LEASE_MS = 30_000;

if (!havePostgres()) {
  log('fleet-drills: no PostgreSQL binaries or redis-server on this machine; nothing to run');
  process.exit(0);
}
ensureBuilt();
// bench/run.js pins this script to one core; the drills are about exactness, not CPU, so the nodes,
// PostgreSQL and Redis may use every core.
if (TASKSET && CORES >= 2)
  spawnSync('taskset', ['-p', '-c', `0-${CORES - 1}`, String(process.pid)], { stdio: 'ignore' });
setGlobalDispatcher(new Agent({ connections: 512, keepAliveTimeout: 10_000 }));

const dist = (p) => import(join(TREE, 'dist', 'src', p));
const { openPgStore } = await dist('store/postgres/store.js');
const { decimalToNano } = await dist('money.js');
const { loadConfig } = await dist('config/load-config.js');
const { ADAPTERS } = await dist('platforms/index.js');
const pgLib = (await import('pg')).default;

const wall0 = performance.now();
const masterKey = randomBytes(32).toString('base64');
const pgSrv = await startPostgres();
const redisSrv = await startRedis();
const sim = await startSimulator();
const admin = new pgLib.Client({ connectionString: pgSrv.url });
await admin.connect();
await admin.query('CREATE DATABASE drills');
await admin.end();
const url = pgSrv.url.replace(/\/postgres$/, '/drills');
const keys = {};
{
  const m = await openPgStore(url, { checkSchema: false, masterKey });
  await m.migrate();
  const cfg = loadConfig(CONFIG, { adapters: ADAPTERS });
  if (!cfg.ok) throw new Error('fixture config invalid');
  for (const r of cfg.config.resources)
    if (!(await m.secrets.list()).some((s) => s.name === r.credential))
      await m.secrets.set(r.credential, `upstream-${r.credential}`);
  for (const ws of ['open', 'cheap', 'pinned-order']) {
    const k = await m.apiKeys.create({ workspace: ws, name: 'drill', ...(ws === 'cheap' ? { rpm: 50 } : {}) });
    keys[ws] = k.key;
    if (ws !== 'open') await m.wallets.credit(ws, decimalToNano('1000'), 'drill');
  }
  await m.close();
}
let store = await openPgStore(url, { masterKey });
log(
  `fleet-drills: ${flags.quick ? 'quick' : 'full'} run; PostgreSQL + Redis + simulator up in ${fmtInt(performance.now() - wall0)} ms`,
);

const WORKERS = ['--workers', '2'];

/** One `serve` node (`extra`: more arguments, e.g. `--workers 2`); resolves once it logged `listening`. */
function startNode(extra = []) {
  return startServeProcess(
    [
      ...extra,
      '--config',
      CONFIG,
      '--db',
      url,
      '--redis',
      redisSrv.url,
      '--port',
      '0',
      '--upstream-override',
      sim.url,
      '--wallet-admission',
      PER_REQUEST ? 'per-request' : 'escrow',
    ],
    { PI_MASTER_KEY: masterKey },
  );
}

async function stopNode(n) {
  if (n.child.exitCode !== null || n.child.signalCode !== null) return;
  n.child.kill('SIGTERM');
  const t = setTimeout(() => n.child.kill('SIGKILL'), 10_000);
  await n.exited;
  clearTimeout(t);
}

async function chat(node, ws, extra = {}) {
  try {
    const res = await fetch(`${node.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys[ws]}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'acme/chat-small',
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: 20,
        ...extra,
      }),
    });
    const body = await res.text();
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      trace: res.headers.get('x-pi-trace-id'),
      body,
    };
  } catch (err) {
    return { status: 0, retryAfter: null, trace: null, body: String(err) };
  }
}

/** A 200 the client holds complete: JSON without an error, or a stream that reached [DONE]. */
const complete = (x) =>
  x.status === 200 &&
  x.trace !== null &&
  (x.body.startsWith('{') ? !x.body.includes('"error"') : x.body.includes('[DONE]'));

/** Settle rows per trace among `traces`. */
async function settleRows(traces) {
  const r = await store.pool.query(
    "SELECT trace_id, COUNT(*) AS n FROM ledger WHERE kind = 'settle' AND trace_id = ANY($1) GROUP BY trace_id",
    [traces],
  );
  return new Map(r.rows.map((x) => [x.trace_id, Number(x.n)]));
}

/** Every answered trace settled exactly once: { answered, settled, lost, doubled }. */
async function settlement(answers) {
  const traces = answers.filter(complete).map((x) => x.trace);
  const rows = await settleRows(traces);
  return {
    answered: traces.length,
    settled: rows.size,
    lost: traces.length - rows.size,
    doubled: [...rows.values()].filter((n) => n > 1).length,
  };
}

function ledgerVerify() {
  const r = spawnSync(process.execPath, [CLI, 'ledger', 'verify', '--db', url, '--json'], {
    cwd: TREE,
    encoding: 'utf8',
    env: { ...process.env, PI_MASTER_KEY: masterKey },
  });
  let json = null;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    // reported below as the raw output
  }
  return {
    exit: r.status,
    ok: r.status === 0 && json?.ok === true,
    problems: json?.problems?.length ?? null,
    raw: json ? undefined : `${r.stdout}${r.stderr}`.slice(0, 400),
  };
}

/** { "200": n, "503": m, … }; a 200 whose stream was cut counts as "200-cut". */
const statuses = (xs) =>
  xs.reduce((m, x) => {
    const k = x.status === 200 && !complete(x) ? '200-cut' : String(x.status);
    m[k] = (m[k] ?? 0) + 1;
    return m;
  }, {});
const count = (xs, s) => xs.filter((x) => x.status === s).length;
const results = { started: new Date().toISOString(), params: P, machine: machineInfo() };

// ---- bursts -------------------------------------------------------------------------------------
async function drillBursts(ns) {
  const t0 = performance.now();
  await store.wallets.credit('open', 1n, 'seed');
  const probe = await chat(ns[0], 'open');
  const hold = decimalToNano(/needs up to \$([0-9.]+) held/.exec(probe.body)?.[1] ?? '0');
  if (probe.status !== 402 || hold <= 0n) throw new Error(`probe: ${probe.status} ${probe.body}`);
  await store.wallets.credit('open', hold * 5n - 1n, 'worth five requests');
  const all = [];
  let minBalance = null;
  for (let b = 0; b < P.bursts; b++) {
    const answers = await Promise.all(Array.from({ length: P.burst }, (_, i) => chat(ns[i % 3], 'open')));
    all.push(...answers);
    // A settlement costs far less than its worst-case hold, so a burst admits more than five: the
    // wallet is the check (its balance never below zero, nothing held once the burst is answered).
    const w = await store.wallets.show('open', Date.now());
    minBalance = minBalance === null || w.balance < minBalance ? w.balance : minBalance;
    await store.wallets.credit('open', hold * 2n, 'top-up between bursts');
    if ((b + 1) % 10 === 0) log(`bursts: ${b + 1}/${P.bursts}, ${count(all, 200)} admitted so far`);
  }
  await sleep(500);
  const w = await store.wallets.show('open', Date.now());
  // Escrow: what the nodes' slices still hold comes back once they are idle.
  const since = Date.now();
  let held = w.held;
  while (held !== 0n && Date.now() - since < 10_000) {
    await sleep(50);
    held = (await store.wallets.show('open', Date.now())).held;
  }
  const slicesReturnedMs = held === 0n ? Date.now() - since + 500 : null;
  // Refused only when the database's available balance (every slice counted as held) could not
  // cover the hold: each 402 names what the wallet had available at its hold statement.
  const refusedWhileCovered = all.filter((x) => {
    if (x.status !== 402) return false;
    const m = /the wallet has \$([0-9.]+) available/.exec(x.body);
    return m === null || decimalToNano(m[1]) >= hold;
  }).length;
  const s = await settlement(all);
  return {
    requests: all.length,
    admitted: count(all, 200),
    refused402: count(all, 402),
    other: all.length - count(all, 200) - count(all, 402),
    minBalanceNano: String(minBalance),
    overdraft: minBalance < 0n || w.balance < 0n ? 1 : 0,
    heldAfter: String(w.held),
    openHoldsAfter: w.openHolds,
    refusedWhileCovered,
    slicesReturnedMs,
    ...s,
    ledgerVerify: ledgerVerify(),
    holdNano: String(hold),
    seconds: (performance.now() - t0) / 1000,
  };
}

// ---- rpm ----------------------------------------------------------------------------------------
async function drillRpm(ns) {
  const second = new Date().getUTCSeconds();
  if (second > 45) await sleep((61 - second) * 1000);
  const t0 = performance.now();
  const answers = await Promise.all(Array.from({ length: 150 }, (_, i) => chat(ns[i % 3], 'cheap')));
  const limited = answers.filter((x) => x.status === 429);
  return {
    requests: answers.length,
    answered: count(answers, 200),
    refused429: limited.length,
    withRetryAfter: limited.filter((x) => Number(x.retryAfter) >= 1 && Number(x.retryAfter) <= 60).length,
    other: answers.length - count(answers, 200) - limited.length,
    ms: performance.now() - t0,
  };
}

// ---- SIGKILL ------------------------------------------------------------------------------------
async function drillKill(a, b) {
  const t0 = performance.now();
  const rounds = [];
  const done = [];
  for (let r = 0; r < P.kills; r++) {
    const victim = await startNode(r % 2 === 0 ? WORKERS : []);
    await chat(victim, 'pinned-order'); // warm: its key cache and connections, so its share is admitted before the kill
    const slow = { stream: true, sim: { chunks: 20, chunkDelayMs: 50 } };
    const burst = Promise.all(
      Array.from({ length: 30 }, (_, i) => chat([a, b, victim][i % 3], 'pinned-order', i % 3 === 2 ? slow : {})),
    );
    await sleep(300);
    victim.child.kill('SIGKILL');
    const killedAt = Date.now();
    await victim.exited;
    const answers = await burst;
    done.push(...answers);
    const orphans = await store.pool.query("SELECT COUNT(*) AS n FROM holds WHERE state = 'open' AND node LIKE $1", [
      `%:${victim.pid}:%`,
    ]);
    const orphanSlices = await store.pool.query(
      "SELECT COUNT(*) AS n FROM slices WHERE state = 'open' AND node LIKE $1",
      [`%:${victim.pid}:%`],
    );
    rounds.push({
      pid: victim.pid,
      killedAt,
      orphans: Number(orphans.rows[0].n),
      orphanSlices: Number(orphanSlices.rows[0].n),
      answered: answers.filter(complete).length,
      cut: answers.filter((x) => !complete(x)).length,
    });
    log(
      `sigkill: round ${r + 1}/${P.kills}: ${rounds.at(-1).orphans} orphaned holds, ${rounds.at(-1).orphanSlices} orphaned slices, ${rounds.at(-1).cut} requests cut`,
    );
  }
  // The surviving nodes' sweepers (every 10 s) release each orphan once its 30 s lease lapsed.
  const deadline = Date.now() + HOLD_LEASE_MS + 30_000;
  let open = 1;
  while (Date.now() < deadline) {
    open = Number((await store.pool.query("SELECT COUNT(*) AS n FROM holds WHERE state = 'open'")).rows[0].n);
    for (const r of rounds)
      open += Number(
        (
          await store.pool.query("SELECT COUNT(*) AS n FROM slices WHERE state = 'open' AND node LIKE $1", [
            `%:${r.pid}:%`,
          ])
        ).rows[0].n,
      );
    if (open === 0) break;
    await sleep(500);
  }
  const releaseMs = [];
  const sliceReleaseMs = [];
  for (const r of rounds) {
    const q = await store.pool.query(
      "SELECT closed_at FROM holds WHERE node LIKE $1 AND state = 'released' AND closed_at >= $2",
      [`%:${r.pid}:%`, r.killedAt],
    );
    for (const row of q.rows) releaseMs.push(Number(row.closed_at) - r.killedAt);
    const sq = await store.pool.query(
      "SELECT closed_at FROM slices WHERE node LIKE $1 AND state = 'lapsed' AND closed_at >= $2",
      [`%:${r.pid}:%`, r.killedAt],
    );
    for (const row of sq.rows) sliceReleaseMs.push(Number(row.closed_at) - r.killedAt);
  }
  sliceReleaseMs.sort((x, y) => x - y);
  releaseMs.sort((x, y) => x - y);
  const lapsed = Number(
    (
      await store.pool.query(
        "SELECT COUNT(*) AS n FROM ledger WHERE kind = 'release' AND note LIKE 'hold lease lapsed%'",
      )
    ).rows[0].n,
  );
  const s = await settlement(done);
  return {
    kills: rounds.length,
    requests: done.length,
    cut: rounds.reduce((n, r) => n + r.cut, 0),
    orphanedHolds: rounds.reduce((n, r) => n + r.orphans, 0),
    releasedByLease: lapsed,
    stillOpen: open,
    releaseAfterKillMs: { min: releaseMs[0] ?? null, max: releaseMs.at(-1) ?? null, n: releaseMs.length },
    orphanedSlices: rounds.reduce((n, r) => n + r.orphanSlices, 0),
    sliceReleaseAfterKillMs: {
      min: sliceReleaseMs[0] ?? null,
      max: sliceReleaseMs.at(-1) ?? null,
      n: sliceReleaseMs.length,
    },
    ...s,
    ledgerVerify: ledgerVerify(),
    seconds: (performance.now() - t0) / 1000,
  };
}

// ---- PostgreSQL and Redis restarts --------------------------------------------------------------
/** Polls every node with a request until each answers 200; ms from `since` to the last one's 200. */
async function untilServed(ns, since, limitMs = 60_000) {
  const served = new Array(ns.length).fill(null);
  const answers = [];
  while (served.some((x) => x === null) && performance.now() - since < limitMs) {
    await Promise.all(
      ns.map(async (n, i) => {
        if (served[i] !== null) return;
        const x = await chat(n, 'pinned-order');
        answers.push(x);
        if (x.status === 200) served[i] = performance.now() - since;
      }),
    );
    if (served.some((x) => x === null)) await sleep(50);
  }
  return { ms: served.every((x) => x !== null) ? Math.max(...served) : null, answers };
}

async function drillRestart(ns) {
  const t0 = performance.now();
  const slow = { stream: true, sim: { chunks: 10, chunkDelayMs: 60 } };
  const rowsBefore = Number((await store.pool.query('SELECT COUNT(*) AS n FROM ledger')).rows[0].n);
  const idsBefore = (await store.pool.query('SELECT id FROM ledger ORDER BY id')).rows.map((r) => String(r.id));
  await store.close();
  // PostgreSQL.
  const burst1 = Promise.all(Array.from({ length: 60 }, (_, i) => chat(ns[i % 3], 'pinned-order', slow)));
  await sleep(200);
  const pgDown = performance.now();
  await pgSrv.halt();
  const during = await Promise.all(ns.flatMap((n) => [chat(n, 'pinned-order'), chat(n, 'pinned-order')]));
  await sleep(1000);
  const pgUpStart = performance.now();
  await pgSrv.resume();
  const pgBack = performance.now();
  const pgResume = await untilServed(ns, pgBack);
  const a1 = await burst1;
  // Redis.
  const burst2 = Promise.all(Array.from({ length: 60 }, (_, i) => chat(ns[i % 3], 'pinned-order', slow)));
  await sleep(200);
  const redisDown = performance.now();
  await redisSrv.halt();
  const redisDuring = await Promise.all(ns.map((n) => chat(n, 'pinned-order')));
  await sleep(1000);
  await redisSrv.resume();
  const redisBack = performance.now();
  const recovered = [];
  for (const n of ns) {
    const until = performance.now() + 30_000;
    let e;
    // A node's reconnection may beat resume()'s own PING loop: negative means before it returned.
    while (
      !(e = n.events.find((x) => x.event === 'redis_recovered' && x.at >= redisDown)) &&
      performance.now() < until
    ) {
      await chat(n, 'pinned-order');
      await sleep(100);
    }
    recovered.push(e ? e.at - redisBack : null);
  }
  const a2 = await burst2;
  store = await openPgStore(url, { masterKey });
  await sleep(500);
  const all = [...a1, ...during, ...pgResume.answers, ...a2, ...redisDuring];
  const s = await settlement(all);
  const idsAfter = new Set((await store.pool.query('SELECT id FROM ledger')).rows.map((r) => String(r.id)));
  const w = await store.wallets.show('pinned-order', Date.now());
  return {
    pg: {
      downMs: pgBack - pgDown,
      restartMs: pgBack - pgUpStart,
      duringStatuses: during.map((x) => x.status).join(','),
      duringStoreUnavailable: during.filter((x) => x.status === 503 && /store_unavailable/.test(x.body)).length,
      resumeAfterBackMs: pgResume.ms,
      burstAnswered: a1.filter(complete).length,
      burstStatuses: statuses(a1),
    },
    redis: {
      duringStatuses: redisDuring.map((x) => x.status).join(','),
      unreachableLogged: ns.filter((n) => n.events.some((e) => e.event === 'redis_unreachable')).length,
      recoveredAfterBackMs: recovered,
      events: ns.map((n) =>
        n.events
          .filter((e) => e.event.startsWith('redis_'))
          .map((e) => `${e.event}@${Math.round(e.at - redisBack)}`)
          .join(' '),
      ),
      burstAnswered: a2.filter(complete).length,
      burstStatuses: statuses(a2),
    },
    ledgerRowsBefore: rowsBefore,
    ledgerRowsAfter: idsAfter.size,
    ledgerRowsLost: idsBefore.filter((id) => !idsAfter.has(id)).length,
    balanceNano: String(w.balance),
    overdraft: w.balance < 0n ? 1 : 0,
    ...s,
    ledgerVerify: ledgerVerify(),
    seconds: (performance.now() - t0) / 1000,
  };
}

let failed = false;
try {
  let ns = await Promise.all([startNode(WORKERS), startNode(), startNode()]);
  log('bursts…');
  results.bursts = await drillBursts(ns);
  log(`bursts: ${JSON.stringify(results.bursts)}`);
  log('rpm…');
  results.rpm = await drillRpm(ns);
  log(`rpm: ${JSON.stringify(results.rpm)}`);
  await stopNode(ns[2]);
  log('sigkill…');
  results.sigkill = await drillKill(ns[0], ns[1]);
  log(`sigkill: ${JSON.stringify(results.sigkill)}`);
  ns = [ns[0], ns[1], await startNode()];
  log('restart…');
  results.restart = await drillRestart(ns);
  log(`restart: ${JSON.stringify(results.restart)}`);
  for (const n of ns) await stopNode(n);
} catch (err) {
  failed = true;
  log(`fleet-drills: ${err?.stack ?? err}`);
} finally {
  await store.close().catch(() => undefined);
  await sim.stop?.();
  await redisSrv.stop();
  await pgSrv.stop();
}
results.wallSeconds = (performance.now() - wall0) / 1000;
const checks = [];
if (results.bursts)
  checks.push(
    ['bursts: overdraft 0', results.bursts.overdraft === 0],
    ['bursts: none lost or doubled', results.bursts.lost === 0 && results.bursts.doubled === 0],
    ['bursts: ledger verify ok', results.bursts.ledgerVerify.ok],
    ['bursts: no 402 while the database covered the hold', results.bursts.refusedWhileCovered === 0],
    [
      'bursts: no hold open, idle slices back within 4 s',
      results.bursts.openHoldsAfter === 0 &&
        results.bursts.slicesReturnedMs !== null &&
        results.bursts.slicesReturnedMs <= 4_000,
    ],
  );
if (results.rpm)
  checks.push(
    ['rpm: exactly 50 answered', results.rpm.answered === 50],
    ['rpm: the rest 429 with Retry-After', results.rpm.withRetryAfter === results.rpm.requests - 50],
  );
if (results.sigkill)
  checks.push(
    ['sigkill: none lost or doubled', results.sigkill.lost === 0 && results.sigkill.doubled === 0],
    ['sigkill: no hold left open', results.sigkill.stillOpen === 0],
    [
      'sigkill: released within lease + sweep interval',
      (results.sigkill.releaseAfterKillMs.max ?? 0) <= HOLD_LEASE_MS + 10_000 + 1_000,
    ],
    [
      'sigkill: orphaned slices released within lease + sweep interval',
      (results.sigkill.sliceReleaseAfterKillMs.max ?? 0) <= HOLD_LEASE_MS + 10_000 + 1_000,
    ],
  );
if (results.restart)
  checks.push(
    ['restart: no overdraft', results.restart.overdraft === 0],
    ['restart: no ledger row lost', results.restart.ledgerRowsLost === 0],
    ['restart: none lost or doubled', results.restart.lost === 0 && results.restart.doubled === 0],
    ['restart: service resumed', results.restart.pg.resumeAfterBackMs !== null],
    ['restart: ledger verify ok', results.restart.ledgerVerify.ok],
  );
results.checks = Object.fromEntries(checks);
mkdirSync(RESULTS_DIR, { recursive: true });
const file = join(RESULTS_DIR, `fleet-drills-${results.started.slice(0, 10)}${flags.quick ? '-quick' : ''}.json`);
writeFileSync(file, JSON.stringify(results, null, 2));
process.stdout.write(
  `\n## fleet drills (${flags.quick ? 'quick' : 'full'}), ${fmtInt(results.wallSeconds)} s wall\n\n| check | result |\n|---|---|\n`,
);
for (const [name, ok] of checks) process.stdout.write(`| ${name} | ${ok ? 'ok' : 'FAILED'} |\n`);
process.stdout.write(`\n${file}\n`);
process.exit(failed || checks.some(([, ok]) => !ok) ? 1 : 0);
