// The exactness drills of `serve --workers 2` at full size, over one real process: the compiled
// `pi-gateway serve --workers 2` (dist/) on an embedded SQLite database, the compiled simulator
// upstream, the fixture config of test/spec/operations/workers.test.ts (the CI-sized version of these
// drills). Each request goes on a fresh connection, so the kernel spreads them over both serving
// threads; /metrics on the admin listener counts what each thread answered. Each drill counts what
// it claims and prints one table:
//   bursts    B bursts of C concurrent requests on a wallet worth five requests (topped up by two
//             between bursts, from this process through the store): admitted, refused, overdraft
//             (a negative balance after any burst, or anywhere in the ledger's running balance: must
//             be 0), every answered 200 settled exactly once, no hold left, `pi-gateway ledger
//             verify --db FILE` exit 0, and both workers answered
//   rpm       a key with rpm 50 hit by 150 requests within one minute: exactly 50 answered, the rest
//             429 with Retry-After
//   sigkill   K rounds: `serve --workers 2` started, a burst of 40 (half slow streams), SIGKILL
//             ~300 ms in; then one more start: every complete answer settled exactly once, none
//             twice, the orphaned holds left by each kill released (and logged) by the next start,
//             no hold left, ledger verify clean, every settlement with its request-log row
//
//   node bench/run.js workers-drills [--quick]      (--quick: 10 bursts of 60, 3 kills)
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { Agent, setGlobalDispatcher } from 'undici';
import { CORES, RESULTS_DIR, ROOT, TASKSET, TREE, ensureBuilt } from './lib/proc.mjs';
import { CLI, killAll, startServeProcess } from './lib/serve.mjs';
import { startSimulator } from './lib/stack.mjs';
import { fmtInt, log, machineInfo, parseFlags, table } from './lib/stats.mjs';

const flags = parseFlags(process.argv.slice(2));
const P = flags.quick ? { bursts: 10, burst: 60, kills: 3 } : { bursts: 100, burst: 200, kills: 20 };
const CONFIG = join(ROOT, 'test', 'fixtures', 'config', 'gateway');
const KILL_BURST = 40;
const SLOW = { stream: true, sim: { chunks: 20, chunkDelayMs: 30 } };

ensureBuilt();
// bench/run.js pins this script to one core; the drills are about exactness, not CPU, so the
// gateway's threads and this load may use every core.
if (TASKSET && CORES >= 2)
  spawnSync('taskset', ['-p', '-c', `0-${CORES - 1}`, String(process.pid)], { stdio: 'ignore' });
setGlobalDispatcher(new Agent({ connections: 1024, keepAliveTimeout: 1_000 }));

const dist = (p) => import(join(TREE, 'dist', 'src', p));
const { openStore } = await dist('store/sqlite/store.js');
const { decimalToNano } = await dist('money.js');
const { loadConfig } = await dist('config/load-config.js');
const { ADAPTERS } = await dist('platforms/index.js');

const wall0 = performance.now();
const masterKey = randomBytes(32).toString('base64');
const dir = mkdtempSync(join(tmpdir(), 'pi-workers-drills-'));
const file = join(dir, 'gateway.db');
const sim = await startSimulator('workers-drills-simulator');

/** `fn` on a read-write store opened for the call (as the test's withStore: the gateway notices). */
function withStore(fn) {
  const store = openStore(file, { masterKey });
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

/** `fn` on a read-only connection of the file, integers as bigint. */
function withSql(fn) {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  db.defaultSafeIntegers(true);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

// The database: every resource credential sealed; a key per drill and their credits.
const keys = withStore((store) => {
  const cfg = loadConfig(CONFIG, { adapters: ADAPTERS });
  if (!cfg.ok) throw new Error('fixture config invalid');
  for (const r of cfg.config.resources)
    if (!store.secrets.names().has(r.credential)) store.secrets.set(r.credential, `upstream-${r.credential}`);
  const k = {
    bursts: store.apiKeys.create({ workspace: 'cheap', name: 'bursts' }).key,
    rpm: store.apiKeys.create({ workspace: 'open', name: 'rpm', rpm: 50 }).key,
    sigkill: store.apiKeys.create({ workspace: 'pinned-order', name: 'sigkill' }).key,
  };
  store.wallets.credit('open', decimalToNano('100'), 'drill');
  store.wallets.credit('pinned-order', decimalToNano('1000'), 'drill');
  return k;
});
log(
  `workers-drills: ${flags.quick ? 'quick' : 'full'} run; database ${file}, simulator up in ${fmtInt(performance.now() - wall0)} ms`,
);

/** `serve --workers 2` on the file; resolves once it logged `listening` (its public and admin URLs). */
function startServe() {
  return startServeProcess(
    [
      '--config',
      CONFIG,
      '--db',
      file,
      '--port',
      '0',
      '--upstream-override',
      sim.url,
      '--workers',
      '2',
      '--admin-port',
      '0',
      '--access-log',
      'off',
    ],
    { PI_MASTER_KEY: masterKey },
  );
}

async function stopServe(s) {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  s.child.kill('SIGTERM');
  const t = setTimeout(() => s.child.kill('SIGKILL'), 15_000);
  await s.exited;
  clearTimeout(t);
}

async function chat(s, key, extra = {}) {
  let res = null;
  try {
    res = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      // A fresh connection each time: the kernel picks the serving thread per connection.
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({
        model: 'acme/chat-small',
        messages: [{ role: 'user', content: 'hello' }],
        max_tokens: 20,
        ...extra,
      }),
    });
    const body = await res.text();
    let code = null;
    if (res.status !== 200) {
      try {
        code = JSON.parse(body).error?.code ?? null;
      } catch {
        // not JSON
      }
    }
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      trace: res.headers.get('x-pi-trace-id'),
      code,
      body,
    };
  } catch (err) {
    // Status 0: no answer; an answer whose body was cut keeps its status (and is not complete).
    return {
      status: res?.status ?? 0,
      retryAfter: null,
      trace: res?.headers.get('x-pi-trace-id') ?? null,
      code: null,
      body: `cut: ${err}`,
    };
  }
}

/** A 200 the client holds complete: JSON without an error, or a stream that reached [DONE]. */
const complete = (x) =>
  x.status === 200 &&
  x.trace !== null &&
  (x.body.startsWith('{') ? !x.body.includes('"error"') : x.body.trimEnd().endsWith('data: [DONE]'));
const count = (xs, s) => xs.filter((x) => x.status === s).length;
/** { "200": n, "402": m, … }; a 200 whose stream was cut counts as "200-cut", a dropped connection as "0". */
const statuses = (xs) =>
  xs.reduce((m, x) => {
    const k = x.status === 200 && !complete(x) ? '200-cut' : String(x.status);
    m[k] = (m[k] ?? 0) + 1;
    return m;
  }, {});

/** Every complete answer settled exactly once: { answered, settled, lost, doubled }. */
function settlement(answers) {
  const traces = answers.filter(complete).map((x) => x.trace);
  const rows = withSql((db) => {
    const q = db.prepare("SELECT COUNT(*) AS n FROM ledger WHERE kind = 'settle' AND trace_id = ?");
    return traces.map((t) => Number(q.get(t).n));
  });
  return {
    answered: traces.length,
    settled: rows.filter((n) => n >= 1).length,
    lost: rows.filter((n) => n === 0).length,
    doubled: rows.filter((n) => n > 1).length,
  };
}

function ledgerVerify() {
  const r = spawnSync(process.execPath, [CLI, 'ledger', 'verify', '--db', file, '--json'], {
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

/** Requests each serving thread answered, from the admin /metrics. */
async function perWorker(s) {
  const text = await (await fetch(`${s.admin}/metrics`)).text();
  return [1, 2].map((w) =>
    Number(new RegExp(`^pi_gateway_worker_requests_total\\{worker="${w}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 'NaN'),
  );
}

/** The lowest running balance (credits − settlements) of `workspace` right after any of its
 *  settlements, replaying its ledger in commit order: negative would be an overdraft at that row. */
function lowestLedgerBalance(workspace) {
  return withSql((db) => {
    let balance = 0n;
    let lowest = null;
    for (const r of db
      .prepare(
        "SELECT kind, amount_nano AS a FROM ledger WHERE workspace = ? AND kind IN ('credit', 'settle') ORDER BY id",
      )
      .iterate(workspace)) {
      balance += r.kind === 'credit' ? r.a : -r.a;
      if (r.kind === 'settle' && (lowest === null || balance < lowest)) lowest = balance;
    }
    return lowest;
  });
}

const openHolds = (workspace) =>
  withSql((db) =>
    Number(db.prepare("SELECT COUNT(*) AS n FROM holds WHERE state = 'open' AND workspace = ?").get(workspace).n),
  );
const results = { started: new Date().toISOString(), params: P, machine: machineInfo() };

// ---- bursts -------------------------------------------------------------------------------------
async function drillBursts(s) {
  const t0 = performance.now();
  // A wallet of one nano-USD: the 402 names what one request holds.
  withStore((store) => store.wallets.credit('cheap', 1n, 'seed'));
  const probe = await chat(s, keys.bursts);
  const hold = decimalToNano(/needs up to \$([0-9.]+) held/.exec(probe.body)?.[1] ?? '0');
  if (probe.status !== 402 || hold <= 0n) throw new Error(`probe: ${probe.status} ${probe.body}`);
  const before = await perWorker(s);
  const all = [];
  let minBalance = null;
  for (let b = 0; b < P.bursts; b++) {
    // The first burst's wallet is worth five requests (less a nano-USD); each later one gets two more.
    withStore((store) =>
      store.wallets.credit(
        'cheap',
        b === 0 ? hold * 5n - 2n : hold * 2n,
        b === 0 ? 'worth five requests' : 'top-up between bursts',
      ),
    );
    const answers = await Promise.all(Array.from({ length: P.burst }, () => chat(s, keys.bursts)));
    all.push(...answers);
    // A settlement costs far less than its worst-case hold, so a burst admits more than five: the
    // wallet is the check (its balance never below zero, nothing held once the burst is answered).
    const w = withStore((store) => store.wallets.show('cheap', Date.now()));
    if (minBalance === null || w.balance < minBalance) minBalance = w.balance;
    if ((b + 1) % 10 === 0) log(`bursts: ${b + 1}/${P.bursts}, ${count(all, 200)} admitted so far`);
  }
  const after = await perWorker(s);
  const w = withStore((store) => store.wallets.show('cheap', Date.now()));
  if (w.balance < minBalance) minBalance = w.balance;
  const lowestLedger = lowestLedgerBalance('cheap');
  // A refused request holds nothing: no ledger row carries its trace.
  const refusedTraces = all.filter((x) => x.status === 402 && x.trace).map((x) => x.trace);
  const refusedWithRows = withSql((db) => {
    const q = db.prepare('SELECT COUNT(*) AS n FROM ledger WHERE trace_id = ?');
    return refusedTraces.filter((t) => Number(q.get(t).n) > 0).length;
  });
  const perWorkerAnswered = after.map((n, i) => n - before[i]);
  return {
    requests: all.length,
    admitted: count(all, 200),
    refused402: count(all, 402),
    refused402Insufficient: all.filter((x) => x.status === 402 && x.code === 'insufficient_balance').length,
    other: all.length - count(all, 200) - count(all, 402),
    statuses: statuses(all),
    minBalanceNano: String(minBalance),
    lowestLedgerBalanceNano: String(lowestLedger),
    overdraft: minBalance < 0n || (lowestLedger ?? 0n) < 0n ? 1 : 0,
    finalBalanceNano: String(w.balance),
    heldAfter: String(w.held),
    openHoldsAfter: openHolds('cheap'),
    refusedWithLedgerRows: refusedWithRows,
    ...settlement(all),
    ledgerVerify: ledgerVerify(),
    perWorker: perWorkerAnswered,
    holdNano: String(hold),
    seconds: (performance.now() - t0) / 1000,
  };
}

// ---- rpm ----------------------------------------------------------------------------------------
async function drillRpm(s) {
  // A burst takes well under a second; start it away from a minute boundary.
  const second = new Date().getUTCSeconds();
  if (second > 45) await sleep((61 - second) * 1000);
  const before = await perWorker(s);
  const t0 = performance.now();
  const startedAt = new Date().toISOString();
  const answers = await Promise.all(Array.from({ length: 150 }, () => chat(s, keys.rpm)));
  const ms = performance.now() - t0;
  const after = await perWorker(s);
  const limited = answers.filter((x) => x.status === 429);
  return {
    requests: answers.length,
    startedAt,
    answered: count(answers, 200),
    refused429: limited.length,
    withRetryAfter: limited.filter(
      (x) => x.code === 'rate_limited' && Number(x.retryAfter) >= 1 && Number(x.retryAfter) <= 60,
    ).length,
    other: answers.length - count(answers, 200) - limited.length,
    perWorker: after.map((n, i) => n - before[i]),
    ms,
  };
}

// ---- SIGKILL ------------------------------------------------------------------------------------
async function drillKill() {
  const t0 = performance.now();
  const rounds = [];
  const done = [];
  const starts = [];
  for (let r = 0; r < P.kills; r++) {
    const s = await startServe();
    starts.push(s);
    const burst = Promise.all(
      Array.from({ length: KILL_BURST }, (_, i) => chat(s, keys.sigkill, i % 2 === 0 ? SLOW : {})),
    );
    await sleep(300);
    s.child.kill('SIGKILL');
    await s.exited;
    const answers = await burst;
    done.push(...answers);
    const orphans = openHolds('pinned-order');
    rounds.push({
      pid: s.pid,
      orphans,
      complete: answers.filter(complete).length,
      cut: answers.filter((x) => !complete(x)).length,
      statuses: statuses(answers),
    });
    log(
      `sigkill: round ${r + 1}/${P.kills}: ${orphans} orphaned holds, ${rounds.at(-1).complete} complete, ${rounds.at(-1).cut} cut`,
    );
  }
  // One more start releases what the last kill left open.
  const last = await startServe();
  starts.push(last);
  await stopServe(last);
  const releasedLogged = starts
    .flatMap((s) => s.events.filter((e) => e.event === 'released_orphaned_holds'))
    .reduce((n, e) => n + Number(e.count), 0);
  const held = withStore((store) => store.wallets.show('pinned-order', Date.now()).held);
  const logged = withSql((db) => {
    const settles = db
      .prepare("SELECT trace_id FROM ledger WHERE workspace = 'pinned-order' AND kind = 'settle'")
      .all();
    const q = db.prepare('SELECT COUNT(*) AS n FROM request_log WHERE trace_id = ?');
    return {
      settlements: settles.length,
      withoutLogRow: settles.filter((r) => Number(q.get(r.trace_id).n) === 0).length,
    };
  });
  const releasesWithoutLogRow = withSql((db) =>
    Number(
      db
        .prepare(
          "SELECT COUNT(*) AS n FROM ledger l WHERE l.workspace = 'pinned-order' AND l.kind = 'release' AND NOT EXISTS (SELECT 1 FROM request_log r WHERE r.trace_id = l.trace_id)",
        )
        .get().n,
    ),
  );
  return {
    kills: rounds.length,
    requests: done.length,
    statuses: statuses(done),
    cut: rounds.reduce((n, r) => n + r.cut, 0),
    orphanedHolds: rounds.reduce((n, r) => n + r.orphans, 0),
    releasedLogged,
    releasedEvents: starts.map((s) => s.events.find((e) => e.event === 'released_orphaned_holds')?.count ?? 0),
    stillOpen: openHolds('pinned-order'),
    heldAfter: String(held),
    ...settlement(done),
    settlementsInLedger: logged.settlements,
    settlementsWithoutLogRow: logged.withoutLogRow,
    releasesWithoutLogRow,
    ledgerVerify: ledgerVerify(),
    seconds: (performance.now() - t0) / 1000,
  };
}

let failed = false;
try {
  const s = await startServe();
  log('bursts…');
  results.bursts = await drillBursts(s);
  log(`bursts: ${JSON.stringify(results.bursts)}`);
  log('rpm…');
  results.rpm = await drillRpm(s);
  log(`rpm: ${JSON.stringify(results.rpm)}`);
  await stopServe(s);
  log('sigkill…');
  results.sigkill = await drillKill();
  log(`sigkill: ${JSON.stringify(results.sigkill)}`);
} catch (err) {
  failed = true;
  log(`workers-drills: ${err?.stack ?? err}`);
} finally {
  killAll();
  await sim.stop?.();
}
results.wallSeconds = (performance.now() - wall0) / 1000;
const b = results.bursts;
const r = results.rpm;
const k = results.sigkill;
const checks = [];
if (b)
  checks.push(
    ['bursts: overdraft 0', b.overdraft === 0],
    ['bursts: every answer a 200 or a 402', b.other === 0],
    ['bursts: every 200 settled exactly once', b.lost === 0 && b.doubled === 0 && b.answered === b.admitted],
    ['bursts: no hold left', b.heldAfter === '0' && b.openHoldsAfter === 0],
    ['bursts: ledger verify exit 0', b.ledgerVerify.ok],
    ['bursts: both workers answered', b.perWorker.every((n) => n > 0)],
  );
if (r)
  checks.push(
    ['rpm: exactly 50 answered', r.answered === 50],
    ['rpm: 100 × 429 with Retry-After', r.refused429 === 100 && r.withRetryAfter === 100],
  );
if (k)
  checks.push(
    ['sigkill: every complete answer settled once, none twice', k.lost === 0 && k.doubled === 0],
    ['sigkill: orphaned holds released by the restarts (logged)', k.releasedLogged === k.orphanedHolds],
    ['sigkill: no hold left', k.stillOpen === 0 && k.heldAfter === '0'],
    ['sigkill: ledger verify exit 0', k.ledgerVerify.ok],
    ['sigkill: every settlement has its request-log row', k.settlementsWithoutLogRow === 0],
  );
results.checks = Object.fromEntries(checks);
mkdirSync(RESULTS_DIR, { recursive: true });
const out = join(RESULTS_DIR, `workers-drills-${results.started.slice(0, 10)}${flags.quick ? '-quick' : ''}.json`);
writeFileSync(out, JSON.stringify(results, null, 2));
rmSync(dir, { recursive: true, force: true });
const figures = [];
if (b)
  figures.push([
    `bursts: ${P.bursts} × ${P.burst} concurrent, wallet worth five (+2 between bursts)`,
    `${fmtInt(b.requests)} requests: ${fmtInt(b.admitted)} admitted, ${fmtInt(b.refused402)} 402, ${b.other} other; lowest balance ${b.minBalanceNano} nano-USD (${b.lowestLedgerBalanceNano} replaying the ledger); ${b.answered} answers = ${b.settled} settled, ${b.doubled} twice; held after ${b.heldAfter}; ledger verify exit ${b.ledgerVerify.exit}; per worker ${b.perWorker.join(' + ')}; ${b.seconds.toFixed(1)} s`,
  ]);
if (r)
  figures.push([
    'rpm: 150 requests, key rpm 50',
    `${r.answered} answered, ${r.refused429} 429 (${r.withRetryAfter} with Retry-After), ${r.other} other; per worker ${r.perWorker.join(' + ')}; ${fmtInt(r.ms)} ms`,
  ]);
if (k)
  figures.push([
    `sigkill: ${k.kills} rounds of ${KILL_BURST} (half slow streams), SIGKILL at ~300 ms`,
    `${k.answered} complete = ${k.settled} settled, ${k.lost} lost, ${k.doubled} twice; ${k.cut} cut; ${k.orphanedHolds} orphaned holds, ${k.releasedLogged} released (logged) at the restarts; ${k.stillOpen} open after; ledger verify exit ${k.ledgerVerify.exit}; ${k.settlementsInLedger} settlements, ${k.settlementsWithoutLogRow} without a request-log row (the ${k.releasesWithoutLogRow} orphan releases have none: their requests died with the process); ${k.seconds.toFixed(1)} s`,
  ]);
process.stdout.write(
  `\n## serve --workers 2 drills (${flags.quick ? 'quick' : 'full'}), ${fmtInt(results.wallSeconds)} s wall\n\n`,
);
process.stdout.write(`${table(['drill', 'figures'], figures)}\n\n| check | result |\n|---|---|\n`);
for (const [name, ok] of checks) process.stdout.write(`| ${name} | ${ok ? 'ok' : 'FAILED'} |\n`);
process.stdout.write(`\n${out}\n`);
process.exit(failed || checks.some(([, ok]) => !ok) ? 1 : 0);
