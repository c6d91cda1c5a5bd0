// `pi-gateway serve`: run the gateway on a config directory and a database file.
import { availableParallelism } from 'node:os';
import { int, parse, PORT_RANGE, str, url, UsageError } from '../args.ts';
import { dbFromArgs } from '../store-command.ts';
import { workerCount } from '../worker-count.ts';
import type { Command } from '../command.ts';
import { jsonLog } from '../../gateway.ts';
import { claimDatabase, type Owner } from '../../runtime/owner-files.ts';
import { OBSERVABILITY_HELP, OBSERVABILITY_OPTIONS, observabilityOptions } from '../observability-options.ts';
import {
  configForServe,
  holdReloadsWhileStarting,
  reloadGateway,
  runGateway,
  type Running,
  untilStopped,
} from '../../runtime/runtime.ts';
import { systemClock } from '../../clock.ts';
import { surviveClosedOutput } from '../../runtime/last-resort.ts';
import { applyServingV8Flags, v8FlagsInEffect } from '../v8-flags.ts';
import { logCredentialWarnings } from '../credential-warnings.ts';
import { isPostgresUrl } from '../../store/admin-store-interface.ts';
import { redactUrl } from '../../store/redact-url.ts';
import type { CompiledConfig } from '../../config/compiled.ts';
import type { ObservabilityOptions } from '../observability-options.ts';
import { WALLET_ADMISSION_MODES, type WalletAdmissionMode } from '../../fleet/pg-fleet-wallets.ts';

const HELP = `Usage: pi-gateway serve [options]

Runs the gateway: validates and compiles the config directory, opens (and migrates) the SQLite
database, and listens for the API of docs/api.md.

One server per database file and per port: a second serve on the same database refuses to start,
naming the file and the pid that holds it (an OS lock on FILE.lock, dropped when the process dies);
a port already in use is refused. The pid is written to FILE.pid.

Signals:
  SIGTERM, SIGINT   graceful drain: stop accepting connections, let in-flight requests finish for
                    limits.drain_timeout_ms (config/gateway.yaml, default 30 s), end the rest with
                    the protocol's error event, settle, write the log, exit 0. A second signal
                    exits at once (exit 1).
  SIGHUP            reload the config directory (also: pi-gateway reload --db FILE, or
                    POST /admin/reload on the admin listener with PI_ADMIN_TOKEN, which
                    pi-gateway reload --admin URL sends); a config with problems is refused and
                    the running one kept.

Options:
  --config DIR              config directory (env PI_CONFIG, default config)
  --db FILE|URL             SQLite database file (env PI_DB, default pi-gateway.db), or a
                            postgres://… URL: this process is one node of a fleet sharing that
                            database (migrated first: pi-gateway migrate --db URL); see docs/fleet.md
  --redis URL               redis://… shared by the nodes for rate-limit windows and session pins
                            (env PI_REDIS_URL; with --db postgres://… only). Without it a node on
                            PostgreSQL keeps them per node. Redis unreachable: each node falls back
                            to its own limiter and pins and returns to Redis when it answers
  --wallet-admission MODE   with --db postgres://… only (env PI_WALLET_ADMISSION): escrow (default)
                            admits each wallet against this node's slice of it, in memory, and
                            writes settlements in batches; per-request takes one hold statement
                            per request (slower on one busy wallet; see docs/fleet.md, "Escrow")
  --workers N|auto          serving threads on the public port (env PI_WORKERS, default 1; auto:
                            one per core). With N > 1 this process's main thread coordinates: it
                            owns the database's writes, the wallet book, rate-limit windows,
                            session pins and breakers, and every thread shares them exactly (see
                            docs/operations.md, "All cores"); embedded database only. More
                            than the core count is logged as a warning (workers_above_cores);
                            more than 4 per core (at most 256) is refused
  --host HOST               address to bind (env PI_HOST, default 127.0.0.1)
  --port N                  port (env PI_PORT, default 8080; 0 picks a free one)
  --upstream-override URL   send every upstream request to this origin instead of the
                            resources' base URLs (env PI_UPSTREAM_OVERRIDE; for testing
                            against the simulator only)
  -h, --help                this text

${OBSERVABILITY_HELP}

Environment:
  PI_MASTER_KEY             32-byte key (base64 or hex) that unseals upstream credentials.
                            Required when the database holds sealed credentials.`;

/** What `serve` was asked to run. */
interface ServeOptions {
  configDir: string;
  db: string;
  host: string;
  port: number;
  override: string | null;
  redis: string | null;
  workers: number;
  workersWarning: string | null;
  observability: ObservabilityOptions;
  walletAdmission: WalletAdmissionMode | null;
}

/** Every option of `serve`, read and checked before anything starts (a bad value is a UsageError). */
function serveOptions(argv: string[]): ServeOptions {
  const p = parse(
    argv,
    {
      config: { type: 'string' },
      db: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'upstream-override': { type: 'string' },
      redis: { type: 'string' },
      workers: { type: 'string' },
      'wallet-admission': { type: 'string' },
      ...OBSERVABILITY_OPTIONS,
    },
    false,
  );
  const workers = workerCount(
    str(p, 'workers', 'PI_WORKERS'),
    p.values.workers === undefined && process.env.PI_WORKERS ? 'PI_WORKERS' : '--workers',
    availableParallelism(),
  );
  return {
    configDir: str(p, 'config', 'PI_CONFIG', 'config') as string,
    db: dbFromArgs(p),
    host: str(p, 'host', 'PI_HOST', '127.0.0.1') as string,
    port: int(p, 'port', 'PI_PORT', 8080, PORT_RANGE) as number,
    override: url(p, 'upstream-override', 'PI_UPSTREAM_OVERRIDE', ['http:', 'https:'], 'http://127.0.0.1:4010') ?? null,
    redis: url(p, 'redis', 'PI_REDIS_URL', ['redis:', 'rediss:'], 'redis://127.0.0.1:6379') ?? null,
    workers: workers.workers,
    workersWarning: workers.warning,
    observability: observabilityOptions(p),
    walletAdmission: walletAdmission(str(p, 'wallet-admission', 'PI_WALLET_ADMISSION')),
  };
}

function walletAdmission(v: string | undefined): WalletAdmissionMode | null {
  if (v === undefined) return null;
  const mode = WALLET_ADMISSION_MODES.find((m) => m === v);
  if (mode === undefined)
    throw new UsageError(`--wallet-admission must be ${WALLET_ADMISSION_MODES.join(' or ')}, not "${v}"`);
  return mode;
}

/** Option combinations serve refuses (a usage error), or null. */
function refusedCombination(o: ServeOptions): string | null {
  const { workers, db, redis } = o;
  if (workers > 1 && (db === ':memory:' || db.startsWith('file::memory:')))
    return `--workers ${workers} shares one database file between threads; give --db FILE`;
  if (o.walletAdmission !== null && !isPostgresUrl(db))
    return '--wallet-admission (PI_WALLET_ADMISSION) chooses how fleet nodes share wallets on PostgreSQL; give --db postgres://… too';
  if (redis !== null && !isPostgresUrl(db))
    return '--redis (PI_REDIS_URL) shares rate limits and pins between nodes on one PostgreSQL database; give --db postgres://… too';
  return null;
}

export const command: Command = {
  summary: 'run the gateway',
  help: HELP,
  async run(argv) {
    let o: ServeOptions;
    try {
      o = serveOptions(argv);
      const refused = refusedCombination(o);
      if (refused !== null) throw new UsageError(refused);
    } catch (err) {
      if (err instanceof UsageError) {
        process.stderr.write(`pi-gateway serve: ${err.message}\n`);
        return 2;
      }
      throw err;
    }
    const { configDir, db, host, port, override, redis, workers, observability } = o;
    const walletAdmission = o.walletAdmission ?? 'escrow';
    surviveClosedOutput();
    applyServingV8Flags();
    holdReloadsWhileStarting();
    const loaded = await configForServe(configDir);
    if (!loaded) return 1;
    const config = loaded.config;
    if (o.workersWarning !== null)
      jsonLog('workers_above_cores', {
        level: 'warn',
        workers,
        cores: availableParallelism(),
        message: o.workersWarning,
      });
    if (isPostgresUrl(db) && workers > 1) {
      const common = { config, configDir, source: loaded.source, db, host, port, override, observability };
      return serveWorkers({ ...common, redis, workers, owner: null, walletAdmission });
    }
    if (isPostgresUrl(db))
      return serveNode({
        config,
        configDir,
        source: loaded.source,
        db,
        redis,
        host,
        port,
        override,
        observability,
        walletAdmission,
      });
    let owner: Owner;
    let running: Running;
    try {
      // The database first: a second server must not even migrate or touch holds on it.
      owner = claimDatabase(db, { configDir });
    } catch (err) {
      process.stderr.write(`pi-gateway serve: ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
    if (workers > 1)
      return serveWorkers({
        config,
        configDir,
        source: loaded.source,
        db,
        host,
        port,
        override,
        observability,
        workers,
        redis: null,
        owner,
      });
    try {
      running = await runGateway({ config, db, host, port, upstreamOverride: override, observability });
    } catch (err) {
      owner.release();
      process.stderr.write(`pi-gateway serve: ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
    // Signals are handled before the announcement (untilStopped says why).
    const { gateway, store } = running;
    const stopped = untilStopped({
      async stop() {
        await gateway.drain();
        store.close();
        owner.release();
      },
      flushNow() {
        gateway.flushNow();
      },
      reload: () => reloadGateway(gateway, configDir, owner),
      admin: gateway.admin,
      metrics: gateway.telemetry?.metrics,
    });
    jsonLog('listening', {
      url: running.gateway.url,
      config: configDir,
      config_source: loaded.source,
      db,
      pid: process.pid,
      models: config.models.length,
      upstream_override: override,
      admin: running.gateway.admin?.url ?? null,
      metrics: (running.gateway.telemetry?.metrics ?? null) !== null,
      access_log: observability.accessLog,
      traces: observability.tracesUrl,
      v8_flags: v8FlagsInEffect(),
    });
    logCredentialWarnings(config, running.store.secrets.names(), systemClock.now(), jsonLog);
    return stopped;
  },
};

/** `serve --db postgres://…`: one node of a fleet (no owner lock: every node shares the database). */
async function serveNode(o: {
  config: CompiledConfig;
  configDir: string;
  source: string;
  db: string;
  redis: string | null;
  host: string;
  port: number;
  override: string | null;
  observability: ObservabilityOptions;
  walletAdmission: WalletAdmissionMode;
}): Promise<number> {
  const { runNode } = await import('../../runtime/node-runtime.ts');
  let running: Awaited<ReturnType<typeof runNode>>;
  try {
    running = await runNode({
      config: o.config,
      db: o.db,
      redis: o.redis,
      host: o.host,
      port: o.port,
      upstreamOverride: o.override,
      observability: o.observability,
      walletAdmission: o.walletAdmission,
    });
  } catch (err) {
    process.stderr.write(`pi-gateway serve: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  const { gateway } = running;
  // Signals are handled before the announcement (untilStopped says why).
  const stopped = untilStopped({
    async stop() {
      await gateway.drain();
      await running.close();
    },
    flushNow() {
      void running.store.requestLog.flush();
    },
    reload: () => reloadGateway(gateway, o.configDir, null),
    admin: gateway.admin,
    metrics: gateway.telemetry?.metrics,
  });
  jsonLog('listening', {
    url: gateway.url,
    config: o.configDir,
    config_source: o.source,
    db: running.store.location,
    redis: o.redis === null ? null : redactUrl(o.redis, 'redis'),
    pid: process.pid,
    models: o.config.models.length,
    upstream_override: o.override,
    admin: gateway.admin?.url ?? null,
    metrics: (gateway.telemetry?.metrics ?? null) !== null,
    access_log: o.observability.accessLog,
    traces: o.observability.tracesUrl,
    v8_flags: v8FlagsInEffect(),
    hold_lease_ms: 30_000,
    wallet_admission: o.walletAdmission,
  });
  // Warnings only: a store that cannot list the credentials now does not stop a gateway that serves.
  await running.store.secrets.list().then(
    (list) => logCredentialWarnings(o.config, new Set(list.map((s) => s.name)), systemClock.now(), jsonLog),
    (err: unknown) =>
      jsonLog('credential_check_failed', {
        level: 'warn',
        error: err instanceof Error ? err.message : String(err),
      }),
  );
  return stopped;
}

/** `serve --workers N` (N > 1): a coordinator and N serving threads, on a database file (its owner
 *  lock held) or on PostgreSQL (a fleet node, no lock: every node shares the database). */
async function serveWorkers(o: {
  config: CompiledConfig;
  configDir: string;
  source: string;
  db: string;
  host: string;
  port: number;
  override: string | null;
  observability: ObservabilityOptions;
  workers: number;
  redis: string | null;
  owner: Owner | null;
  walletAdmission?: WalletAdmissionMode;
}): Promise<number> {
  const { runWorkers } = await import('../../runtime/workers-runtime.ts');
  let running: Awaited<ReturnType<typeof runWorkers>>;
  try {
    running = await runWorkers({
      config: o.config,
      db: o.db,
      host: o.host,
      port: o.port,
      workers: o.workers,
      redis: o.redis,
      upstreamOverride: o.override,
      observability: o.observability,
      ...(o.walletAdmission === undefined ? {} : { walletAdmission: o.walletAdmission }),
    });
  } catch (err) {
    o.owner?.release();
    process.stderr.write(`pi-gateway serve: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  const r = running;
  // Signals are handled before the announcement (untilStopped says why).
  const stopped = untilStopped({
    async stop() {
      await r.drain();
      o.owner?.release();
    },
    stopNow: () => r.stopNow(),
    reload: () => reloadGateway(r, o.configDir, o.owner),
    admin: r.admin,
    metrics: r.telemetry.metrics,
  });
  jsonLog('listening', {
    url: r.url,
    config: o.configDir,
    config_source: o.source,
    db: r.location,
    ...(o.redis === null ? {} : { redis: redactUrl(o.redis, 'redis') }),
    pid: process.pid,
    workers: o.workers,
    models: o.config.models.length,
    upstream_override: o.override,
    admin: r.admin?.url ?? null,
    metrics: (r.telemetry.metrics ?? null) !== null,
    access_log: o.observability.accessLog,
    traces: o.observability.tracesUrl,
    v8_flags: v8FlagsInEffect(),
  });
  logCredentialWarnings(o.config, r.credentialNames(), systemClock.now(), jsonLog);
  return stopped;
}
