// Benchmark launcher for the compiled gateway (dist/): loads and compiles a config directory, opens
// a file-backed store (WAL) in a fresh temp directory, seals the chosen upstream credentials, creates
// an API key with a very high rpm and credits the workspace wallet, then starts the gateway with
// every upstream redirected to the simulator. Prints one JSON line {"ready":true,url,key,...}.
// SIGTERM/SIGINT close everything and exit 0, so `--cpu-prof` writes its profile.
//
//   node bench/servers/gateway.mjs --upstream http://127.0.0.1:PORT [--config DIR]
//        [--seal local-sim,openai-prod | --seal all | --seal none] [--store wal|stub] [--workspace acme]
//        [--metrics on|off] [--access-log on|off] [--traces URL] [--writer-thread on|off] [--eld on|off]
//        [--db postgres://… [--redis redis://…]] [--workers N] [--alloc-prof FILE [--alloc-survivors on]]
//
// --shared-admission off (with --workers): every hold and rate decision by message to the coordinator.
// --workers N (N > 1) runs `serve --workers N` (src/runtime/workers-runtime.ts runWorkers): this process's
// main thread coordinates (wallet book, rate limits, pins, breakers, the writer thread — or, with
// --db, the fleet node's escrow and Redis) and N serving threads share the port; /proc CPU of this
// process sums every thread.
//
// --writer-thread on commits the ledger and the request log on the SQLite writer thread, as `serve`
// does for a database file (GatewayOptions.writerThread; off by default: the in-process store path,
// this thread writing in batches). --db postgres://URL runs the fleet node instead (src/runtime/node-runtime.ts
// runNode, as `serve --db postgres://… --redis …` does): the database is migrated and seeded first.
// --eld on records the event loop's delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution) between
// two SIGUSR2: the first starts the window (prints {"eld":{"started":true}}), the second prints one
// JSON line {"eld":{"p50","p99","max","mean","count","gc"}} (ms) on stdout and stops sampling; `gc`
// counts this (the main) thread's collections in the window (perf_hooks 'gc' entries: scavenges and
// their pause ms, full collections and theirs).
//
// --metrics on starts the admin listener (its URL is in the ready line) with Prometheus metrics;
// --access-log on writes one JSON line per request to access.log in the temp directory, through
// the same batching as stdout in `serve` (synchronous writes, as to a pipe or file stdout, of
// 100 ms or 64 KiB of lines at a time); --traces URL exports OTLP/HTTP spans to URL/v1/traces. All off by
// default, which is the gateway the other benchmarks measure.
//
// --alloc-prof FILE samples where this (the serving) thread allocates, between two SIGUSR2 (the same
// window as --eld; V8's sampling heap profiler through the inspector, every 1 KiB on average, objects
// collected since counted too, so the profile is what was allocated, not what survived) and writes
// the profile to FILE at the second one, then prints {"allocProf":{"written":FILE}}. With
// --alloc-survivors on, objects a scavenge collected are left out: what is left survived one.
//
// --store stub keeps the same code path but replaces the store calls of the request path (wallet
// hold/settle/release, request-log append, the data_version check) with no-ops: the admission
// benchmark compares it with the real store to isolate what the store costs per request.
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { PerformanceObserver, constants as perfConstants, monitorEventLoopDelay } from 'node:perf_hooks';

const ROOT = process.env.PI_BENCH_TREE || fileURLToPath(new URL('../..', import.meta.url));
const dist = (p) => import(join(ROOT, 'dist', 'src', p));

const { values } = parseArgs({
  options: {
    upstream: { type: 'string' },
    config: { type: 'string', default: join(ROOT, 'config') },
    seal: { type: 'string', default: 'local-sim' },
    store: { type: 'string', default: 'wal' },
    workspace: { type: 'string', default: 'acme' },
    port: { type: 'string', default: '0' },
    metrics: { type: 'string', default: 'off' },
    'access-log': { type: 'string', default: 'off' },
    traces: { type: 'string' },
    'writer-thread': { type: 'string', default: 'off' },
    eld: { type: 'string', default: 'off' },
    db: { type: 'string' },
    redis: { type: 'string' },
    workers: { type: 'string', default: '1' },
    'shared-admission': { type: 'string', default: 'on' },
    'alloc-prof': { type: 'string' },
    'alloc-survivors': { type: 'string', default: 'off' },
  },
});

const { configForServe } = await dist('runtime/runtime.js');
// The V8 settings `serve` applies to itself (src/cli/v8-flags.ts; a build from before it has none):
// pretenuring off unless PI_V8_PRETENURING=on, the memory reducer off for the threads started after
// unless PI_V8_MEMORY_REDUCER=on.
await dist('cli/v8-flags.js').then(
  (m) => m.applyServingV8Flags(),
  () => undefined,
);
const { openStore } = await dist('store/sqlite/store.js');
const { startGateway } = await dist('gateway.js');
const { startTelemetry, tracesUrl } = await dist('telemetry/telemetry.js');
const { BufferedLines } = await dist('telemetry/line-sink.js');
const { startAdminListener } = await dist('server/admin-app.js');
const { Lifecycle } = await dist('observe/lifecycle.js');

// The same start-up as `pi-gateway serve`: the generated tables when the config dir hashes to them
// (the YAML compiler is then never loaded), else the directory compiled in memory.
const loaded = await configForServe(values.config);
if (!loaded) process.exit(1);
const config = loaded.config;

for (const opt of ['metrics', 'access-log', 'writer-thread', 'eld']) {
  if (values[opt] !== 'on' && values[opt] !== 'off') {
    process.stderr.write(`--${opt} must be on or off\n`);
    process.exit(2);
  }
}
if (values.store !== 'stub' && values.store !== 'wal') {
  process.stderr.write(`unknown --store ${values.store}\n`);
  process.exit(2);
}
const pgMode = values.db !== undefined;
if (
  pgMode &&
  (!/^postgres(ql)?:\/\//.test(values.db) ||
    values.store !== 'wal' ||
    values.metrics === 'on' ||
    values['access-log'] === 'on' ||
    values['writer-thread'] === 'on')
) {
  process.stderr.write(
    '--db takes a postgres:// URL, and goes without --store stub, --metrics, --access-log and --writer-thread\n',
  );
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), 'pi-bench-gw-'));
const dbFile = join(dir, 'bench.db');
const masterKey = randomBytes(32).toString('base64');
const wanted =
  values.seal === 'all'
    ? new Set(config.resources.map((x) => x.credential))
    : values.seal === 'none'
      ? new Set()
      : new Set(values.seal.split(','));
// $1,000,000 in nano-USD: holds are released/settled at once, so this never runs out.
const CREDIT = 1_000_000n * 1_000_000_000n;

/** PostgreSQL: the database migrated and seeded; the bench key. */
async function seedPg() {
  process.env.PI_MASTER_KEY = masterKey;
  const { openPgStore } = await dist('store/postgres/store.js');
  const seed = await openPgStore(values.db, { checkSchema: false, masterKey, requestLog: config.settings.requestLog });
  let created;
  try {
    await seed.migrate();
    for (const name of new Set(config.resources.map((x) => x.credential)))
      if (wanted.has(name)) await seed.secrets.set(name, `sim-${name}`);
    created = await seed.apiKeys.create({ workspace: values.workspace, name: 'bench', rpm: 1_000_000_000 });
    await seed.wallets.credit(values.workspace, CREDIT, 'bench credit');
  } finally {
    await seed.close();
  }
  return created;
}

/** PostgreSQL (+ Redis): migrate and seed the database, then start a fleet node as `serve` does. */
async function startPgNode() {
  const created = await seedPg();
  const { runNode } = await dist('runtime/node-runtime.js');
  const node = await runNode({
    config,
    db: values.db,
    redis: values.redis ?? null,
    host: '127.0.0.1',
    port: Number(values.port),
    upstreamOverride: values.upstream ?? null,
  });
  return { node, key: created };
}

const workers = Number(values.workers);
if (!Number.isSafeInteger(workers) || workers < 1 || (workers > 1 && values.store !== 'wal')) {
  process.stderr.write('--workers takes a whole number ≥ 1; above 1 not with --store stub\n');
  process.exit(2);
}

/** `serve --workers N`: the store seeded here and closed, then the coordinator and its threads (on
 *  PostgreSQL with --db: a fleet node's coordinator, its escrow lending the threads room). */
async function startWorkers() {
  process.env.PI_MASTER_KEY = masterKey;
  const created = pgMode ? await seedPg() : seedFile();
  const { runWorkers } = await dist('runtime/workers-runtime.js');
  const observability = {
    admin: values.metrics === 'on' ? { host: '127.0.0.1', port: 0 } : null,
    metrics: values.metrics === 'on',
    accessLog: false,
    tracesUrl: null,
    serviceName: 'pi-gateway',
  };
  const running = await runWorkers({
    config,
    db: pgMode ? values.db : dbFile,
    ...(pgMode ? { redis: values.redis ?? null } : {}),
    host: '127.0.0.1',
    port: Number(values.port),
    workers,
    upstreamOverride: values.upstream ?? null,
    observability,
    sharedAdmission: values['shared-admission'] !== 'off',
  });
  return { running, key: created };
}

/** The database file seeded (credentials, the bench key, a credit); the key. */
function seedFile() {
  const seed = openStore(dbFile, { masterKey, requestLog: config.settings.requestLog });
  let created;
  try {
    for (const res of config.resources)
      if (wanted.has(res.credential) && !seed.secrets.names().has(res.credential))
        seed.secrets.set(res.credential, `sim-${res.credential}`);
    created = seed.apiKeys.create({ workspace: values.workspace, name: 'bench', rpm: 1_000_000_000 });
    seed.wallets.credit(values.workspace, CREDIT, 'bench credit');
  } finally {
    seed.close();
  }
  return created;
}

let store = null;
let pgNode = null;
let workersRun = null;
let key;
let gw;
let accessFd = null;
let admin = null;
const events = [];
if (pgMode && workers === 1) {
  ({ node: pgNode, key } = await startPgNode());
  gw = pgNode.gateway;
} else if (workers > 1) {
  ({ running: workersRun, key } = await startWorkers());
  gw = workersRun;
  admin = workersRun.admin;
} else {
  store = openStore(dbFile, { masterKey, requestLog: config.settings.requestLog });
  for (const res of config.resources)
    if (wanted.has(res.credential) && !store.secrets.names().has(res.credential))
      store.secrets.set(res.credential, `sim-${res.credential}`);
  key = store.apiKeys.create({ workspace: values.workspace, name: 'bench', rpm: 1_000_000_000 });
  store.wallets.credit(values.workspace, CREDIT, 'bench credit');

  accessFd = values['access-log'] === 'on' ? openSync(join(dir, 'access.log'), 'a') : null;
  const telemetry = await startTelemetry({
    metrics: values.metrics === 'on',
    accessLog: accessFd === null ? null : new BufferedLines({ write: (text) => writeSync(accessFd, text) }),
    traces: values.traces ? { url: tracesUrl(values.traces) } : null,
  });
  admin =
    values.metrics === 'on'
      ? await startAdminListener({ host: '127.0.0.1', port: 0, lifecycle: new Lifecycle(), metrics: telemetry.metrics })
      : null;

  gw = await startGateway({
    config,
    store,
    host: '127.0.0.1',
    port: Number(values.port),
    upstreamOverride: values.upstream ?? null,
    telemetry,
    ...(admin ? { admin } : {}),
    // What `serve` does for a database file (src/runtime/runtime.ts): the SQLite writer thread.
    ...(values['writer-thread'] === 'on' ? { writerThread: { file: dbFile } } : {}),
    log: (event, fields) => {
      if (events.length < 50) events.push(event);
      process.stderr.write(JSON.stringify({ event, ...fields }) + '\n');
    },
  });
}

if (values.eld === 'on') {
  // The loop's delay in ns, sampled only between two SIGUSR2: the first starts a window, the second
  // reports it (ms) and stops sampling. A 1-ms sampling timer left on in every idle gateway of a
  // benchmark woke each of them a thousand times a second on the core the measured one runs on.
  const h = monitorEventLoopDelay({ resolution: 1 });
  let gc = null;
  const countGc = (list) => {
    for (const e of list.getEntries()) {
      const minor = (e.detail?.kind ?? 0) & perfConstants.NODE_PERFORMANCE_GC_MINOR;
      if (minor) {
        gc.scavenges++;
        gc.scavengeMs += e.duration;
      } else {
        gc.full++;
        gc.fullMs += e.duration;
      }
    }
  };
  const gcObserver = new PerformanceObserver(countGc);
  let on = false;
  process.on('SIGUSR2', () => {
    if (!on) {
      h.reset();
      h.enable();
      gc = { scavenges: 0, scavengeMs: 0, full: 0, fullMs: 0 };
      gcObserver.observe({ entryTypes: ['gc'] });
      on = true;
      process.stdout.write(JSON.stringify({ eld: { started: true } }) + '\n');
      return;
    }
    h.disable();
    countGc({ getEntries: () => gcObserver.takeRecords() });
    gcObserver.disconnect();
    on = false;
    const ms = (ns) => ns / 1e6;
    process.stdout.write(
      JSON.stringify({
        eld: {
          p50: ms(h.percentile(50)),
          p99: ms(h.percentile(99)),
          max: ms(h.max),
          mean: ms(h.mean),
          count: h.count,
          gc,
        },
      }) + '\n',
    );
  });
}

if (values['alloc-prof']) {
  const file = values['alloc-prof'];
  const { Session } = await import('node:inspector');
  const { writeFileSync } = await import('node:fs');
  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) => session.post(method, params, (err, r) => (err ? reject(err) : resolve(r))));
  let sampling = false;
  process.on('SIGUSR2', () => {
    sampling = !sampling;
    if (sampling) {
      void post('HeapProfiler.startSampling', {
        samplingInterval: 1024,
        includeObjectsCollectedByMajorGC: true,
        // --alloc-survivors on: objects a scavenge collected are left out, so what remains is what
        // survived one (promoted, or alive at the end): the allocations old space pays for.
        includeObjectsCollectedByMinorGC: values['alloc-survivors'] !== 'on',
      });
      return;
    }
    void post('HeapProfiler.stopSampling').then(({ profile }) => {
      writeFileSync(file, JSON.stringify(profile));
      process.stdout.write(JSON.stringify({ allocProf: { written: file } }) + '\n');
    });
  });
}

if (values.store === 'stub') {
  // The per-request money and log path replaced by no-ops: the wallet book (admission, settlement,
  // group commit), the request log, and the cross-process change check.
  const book = gw.ctx.wallets;
  book.hold = () => ({ ok: true });
  book.settle = () => Promise.resolve(true);
  book.release = () => undefined;
  store.requestLog.append = () => undefined;
  store.changedSinceLastCheck = () => false;
}

process.stdout.write(
  JSON.stringify({
    ready: true,
    url: gw.url,
    port: gw.port,
    key: key.key,
    workspace: values.workspace,
    store: pgMode ? 'postgres' : values.store,
    db: pgMode ? values.db.replace(/:[^:@/]*@/, '@') : dbFile,
    redis: values.redis ?? null,
    writerThread: values['writer-thread'] === 'on' || workers > 1,
    workers,
    eld: values.eld === 'on',
    models: config.models.length,
    admin: admin?.url ?? null,
    accessLog: accessFd === null ? null : join(dir, 'access.log'),
    traces: values.traces ?? null,
  }) + '\n',
);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  try {
    if (workersRun) {
      await workersRun.drain(1000);
      workersRun.store?.close();
    } else await gw.close();
    await pgNode?.close();
    store?.close();
    if (accessFd !== null) closeSync(accessFd);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
