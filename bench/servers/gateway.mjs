// Benchmark launcher for the compiled gateway (dist/): loads and compiles a config directory, opens
// a file-backed store (WAL) in a fresh temp directory, seals the chosen upstream credentials, creates
// an API key with a very high rpm and credits the workspace wallet, then starts the gateway with
// every upstream redirected to the simulator. Prints one JSON line {"ready":true,url,key,...}.
// SIGTERM/SIGINT close everything and exit 0, so `--cpu-prof` writes its profile.
//
//   node bench/servers/gateway.mjs --upstream http://127.0.0.1:PORT [--config DIR]
//        [--seal local-sim,openai-prod | --seal all | --seal none] [--store wal|stub] [--workspace acme]
//        [--metrics on|off] [--access-log on|off] [--traces URL]
//
// --metrics on starts the admin listener (its URL is in the ready line) with Prometheus metrics;
// --access-log on writes one JSON line per request to access.log in the temp directory, through
// the same batching as stdout in `serve` (synchronous writes, as to a pipe or file stdout, of
// 100 ms or 64 KiB of lines at a time); --traces URL exports OTLP/HTTP spans to URL/v1/traces. All off by
// default, which is the gateway the other benchmarks measure.
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
  },
});

const { configForServe } = await dist('cli/runtime.js');
const { openStore } = await dist('store/store.js');
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

const dir = mkdtempSync(join(tmpdir(), 'pi-bench-gw-'));
const masterKey = randomBytes(32).toString('base64');
const store = openStore(join(dir, 'bench.db'), { masterKey, requestLog: config.settings.requestLog });
const wanted =
  values.seal === 'all' ? new Set(config.resources.map((x) => x.credential)) : values.seal === 'none' ? new Set() : new Set(values.seal.split(','));
for (const res of config.resources) if (wanted.has(res.credential) && !store.secrets.names().has(res.credential)) store.secrets.set(res.credential, `sim-${res.credential}`);
const key = store.apiKeys.create({ workspace: values.workspace, name: 'bench', rpm: 1_000_000_000 });
// $1,000,000 in nano-USD: holds are released/settled at once, so this never runs out.
store.wallets.credit(values.workspace, 1_000_000n * 1_000_000_000n, 'bench credit');

if (values.store !== 'stub' && values.store !== 'wal') {
  process.stderr.write(`unknown --store ${values.store}\n`);
  process.exit(2);
}

for (const opt of ['metrics', 'access-log']) {
  if (values[opt] !== 'on' && values[opt] !== 'off') {
    process.stderr.write(`--${opt} must be on or off\n`);
    process.exit(2);
  }
}
const accessFd = values['access-log'] === 'on' ? openSync(join(dir, 'access.log'), 'a') : null;
const telemetry = await startTelemetry({
  metrics: values.metrics === 'on',
  accessLog: accessFd === null ? null : new BufferedLines({ write: (text) => writeSync(accessFd, text) }),
  traces: values.traces ? { url: tracesUrl(values.traces) } : null,
});
const admin = values.metrics === 'on' ? await startAdminListener({ host: '127.0.0.1', port: 0, lifecycle: new Lifecycle(), metrics: telemetry.metrics }) : null;

const events = [];
const gw = await startGateway({
  config,
  store,
  host: '127.0.0.1',
  port: Number(values.port),
  upstreamOverride: values.upstream ?? null,
  telemetry,
  ...(admin ? { admin } : {}),
  log: (event, fields) => {
    if (events.length < 50) events.push(event);
    process.stderr.write(JSON.stringify({ event, ...fields }) + '\n');
  },
});

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
    store: values.store,
    db: join(dir, 'bench.db'),
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
    await gw.close();
    store.close();
    if (accessFd !== null) closeSync(accessFd);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
