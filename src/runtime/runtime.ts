// Shared start-up for `serve` and `demo`: load and validate the config (a bad config never starts a
// server), open the store, start the gateway, and run it until a signal: SIGTERM/SIGINT drain it
// (a second one exits at once), SIGHUP reloads the config directory. While it runs, an exception
// nothing caught is logged and counted, and the process keeps serving (./last-resort.ts).
import { sourceHashOf } from '../config/config-files.ts';
import type { CompiledConfig } from '../config/compiled.ts';
import { startGateway, type Gateway, type GatewayOptions, jsonLog, type ReloadResult } from '../gateway.ts';
import { Lifecycle } from '../observe/lifecycle.ts';
import { ADAPTERS } from '../platforms/index.ts';
import { type AdminListener, startAdminListener } from '../server/admin-app.ts';
import { DEFAULT_WRITER_CAPACITY, openStore, type Store } from '../store/sqlite/store.ts';
import { configDirProblem } from './config-dir-check.ts';
import { installLastResort } from './last-resort.ts';
import type { Owner } from './owner-files.ts';
import { BufferedLines } from '../telemetry/line-sink.ts';
import { startTelemetry, type Telemetry } from '../telemetry/telemetry.ts';
import type { GatewayMetrics } from '../telemetry/metrics.ts';
import type { MetricsSource } from '../admin/routes.ts';
import { tokenStrengthProblem } from '../admin/token-strength.ts';
import type { ObservabilityOptions } from './observability.ts';

export type LoadedConfig =
  | { ok: true; config: CompiledConfig; source: 'generated tables' | 'compiled' }
  /** `dirProblem`: the directory itself is missing (or not one); then it is the only problem. */
  | { ok: false; hash: string | null; problems: string[]; dirProblem?: string };

/**
 * The config in `dir`: the generated tables (src/generated/tables.ts, built and reviewed from the same
 * YAML) when the directory's files hash to the tables' `sourceHash`, so the server parses no YAML;
 * otherwise the directory compiled in memory by the same pipeline codegen uses (the compiler — ajv,
 * yaml — is loaded only then). Problems come as `file:line:col path: message`.
 */
export async function loadConfigDir(dir: string): Promise<LoadedConfig> {
  // Said as it is, not as an issue at a made-up position inside it.
  const missing = configDirProblem(dir);
  if (missing !== null) return { ok: false, hash: null, problems: [missing], dirProblem: missing };
  const hash = sourceHashOf(dir);
  if (hash !== null) {
    try {
      const { tables } = await import('../generated/tables.ts');
      if (tables.sourceHash === hash) return { ok: true, config: tables, source: 'generated tables' };
    } catch {
      // No generated tables in this build: compile.
    }
  }
  const { loadConfig, formatIssue } = await import('../config/load-config.ts');
  const r = loadConfig(dir, { adapters: ADAPTERS });
  if (r.ok) return { ok: true, config: r.config, source: 'compiled' };
  return { ok: false, hash, problems: r.issues.map(formatIssue) };
}

/** The config to serve (see loadConfigDir), or null after printing every problem. */
export async function configForServe(
  dir: string,
): Promise<{ config: CompiledConfig; source: 'generated tables' | 'compiled' } | null> {
  const r = await loadConfigDir(dir);
  if (r.ok) return { config: r.config, source: r.source };
  if (r.dirProblem !== undefined) {
    process.stderr.write(`pi-gateway: ${r.dirProblem}; not starting\n`);
    return null;
  }
  for (const p of r.problems) process.stderr.write(p + '\n');
  process.stderr.write(
    `pi-gateway: the config in ${dir} has ${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}; not starting\n`,
  );
  return null;
}

export interface Running {
  gateway: Gateway;
  store: Store;
}

export async function runGateway(opts: {
  config: CompiledConfig;
  db: string;
  host: string;
  port: number;
  upstreamOverride?: string | null;
  store?: Store;
  observability?: ObservabilityOptions;
}): Promise<Running> {
  // The admin listener comes up first, so readiness answers "starting" while the store opens.
  const { telemetry, admin } = await startObservability(opts.observability);
  let store: Store | undefined = opts.store;
  let gateway: Gateway;
  try {
    store ??= openStore(opts.db, { requestLog: opts.config.settings.requestLog });
    const gwOpts: GatewayOptions & { shared?: undefined } = {
      config: opts.config,
      store,
      host: opts.host,
      port: opts.port,
      upstreamOverride: opts.upstreamOverride ?? null,
      telemetry,
    };
    if (admin) gwOpts.admin = admin;
    // A database file gets its writer thread (an in-memory one cannot be shared with a thread).
    if (opts.db !== '' && opts.db !== ':memory:' && !opts.db.startsWith('file::memory:'))
      gwOpts.writerThread = { file: opts.db, capacity: writerCapacity() };
    gateway = await startGateway(gwOpts);
  } catch (err) {
    admin?.close();
    await telemetry.close();
    store?.close();
    throw err;
  }
  return { gateway, store };
}

/** The writer thread's queue bound: PI_WRITER_QUEUE (ledger operations and log rows), else the default. */
export function writerCapacity(): number {
  const raw = process.env.PI_WRITER_QUEUE;
  if (raw === undefined || raw === '') return DEFAULT_WRITER_CAPACITY;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`PI_WRITER_QUEUE must be a whole number of at least 1, not ${JSON.stringify(raw)}`);
  return n;
}

/** Telemetry and the admin listener as the options say (nothing on without them). */
export async function startObservability(
  o: ObservabilityOptions | undefined,
  /** The coordinator of `serve --workers N`: its serving threads run the access log and traces, and
   *  /metrics merges theirs (`metricsSource`); this process keeps only its own gauges. */
  coordinator?: { metricsSource(own: GatewayMetrics): MetricsSource },
): Promise<{ telemetry: Telemetry; admin: AdminListener | null }> {
  // Refused before anything starts: a guessable operator token opens the console to anyone who can reach it.
  const token = process.env.PI_ADMIN_TOKEN || null;
  const weak = token === null ? null : tokenStrengthProblem(token);
  if (weak !== null) throw new Error(weak);
  const telemetry = await startTelemetry({
    metrics: o?.admin !== null && o?.admin !== undefined && o.metrics,
    accessLog: o?.accessLog && !coordinator ? new BufferedLines(process.stdout) : null,
    trustedProxies: o?.trustedProxies ?? [],
    traces: o?.tracesUrl && !coordinator ? { url: o.tracesUrl, serviceName: o.serviceName } : null,
    log: jsonLog,
  });
  const metrics = telemetry.metrics && coordinator ? coordinator.metricsSource(telemetry.metrics) : telemetry.metrics;
  if (!o?.admin) {
    if (token)
      jsonLog('admin_token_unused', {
        reason: 'PI_ADMIN_TOKEN is set but there is no admin listener (--admin-port): the console is off',
      });
    return { telemetry, admin: null };
  }
  try {
    const admin = await startAdminListener({
      ...o.admin,
      lifecycle: new Lifecycle(),
      metrics,
      token,
      log: jsonLog,
      onUnexpectedError: (err) => jsonLog('admin_error', { error: err instanceof Error ? err.message : String(err) }),
    });
    return { telemetry, admin };
  } catch (err) {
    await telemetry.close();
    throw new Error(`admin listener: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * Re-reads, validates and compiles `dir` and swaps it in (Gateway.reload); a config with problems is
 * refused, the running one stays, and every problem is logged as `file:line:col path: message`. The
 * result is kept on the gateway (`lastReload`) and, when the process owns a database, written for
 * `pi-gateway reload`.
 */
export interface Reloadable {
  reload(config: CompiledConfig): { restartNeeded: string[] } | Promise<{ restartNeeded: string[] }>;
  recordReload(result: ReloadResult): void;
}

export async function reloadGateway(gateway: Reloadable, dir: string, owner: Owner | null): Promise<ReloadResult> {
  const r = await loadConfigDir(dir);
  let result: ReloadResult;
  if (r.ok) {
    const { restartNeeded } = await gateway.reload(r.config);
    result = { ok: true, hash: r.config.sourceHash, problems: [], restartNeeded, at: Date.now() };
  } else {
    for (const problem of r.problems) jsonLog('reload_problem', { problem });
    result = { ok: false, hash: r.hash, problems: r.problems, restartNeeded: [], at: Date.now() };
  }
  gateway.recordReload(result);
  owner?.recordReload(result);
  return result;
}

export interface Supervised {
  /** First SIGTERM/SIGINT: drain and close everything. */
  stop(): Promise<void>;
  /** Second SIGTERM/SIGINT, before exiting at once: write what is pending, synchronously. */
  flushNow?(): void;
  /** Second SIGTERM/SIGINT when stopping takes other threads down first (bounded to 5 s). */
  stopNow?(): Promise<void>;
  /** SIGHUP, and POST /admin/reload on `admin`. */
  reload?(): Promise<ReloadResult>;
  /** The admin listener: with an operator token, POST /admin/reload runs `reload` there too (the
   *  reload of a process no local signal reaches, such as each node of a fleet). */
  admin?: AdminListener | null;
  /** Where `pi_gateway_uncaught_errors_total` reads the last-resort handler's count (metrics on). */
  metrics?: Pick<GatewayMetrics, 'countUncaughtErrors'> | null;
}

// A SIGHUP that came while the process was starting (see holdReloadsWhileStarting).
let startingHup: (() => void) | null = null;
let hupWhileStarting = false;

/**
 * From here until `untilStopped`, a SIGHUP is kept instead of ending the process (its default):
 * `pi-gateway reload` finds a server by its pid file, written before it migrates and binds, and a
 * supervisor may reload at any time. The kept reload runs once the gateway serves, since the config
 * directory may have changed after it was read. Call it before the database is claimed.
 */
export function holdReloadsWhileStarting(): void {
  if (startingHup) return;
  startingHup = () => {
    hupWhileStarting = true;
  };
  process.on('SIGHUP', startingHup);
}

/**
 * Resolves to the exit code once the process stopped: 0 after a drain (streams ended at the drain
 * deadline included: they were ended properly), 1 when stopping failed. A second SIGTERM/SIGINT
 * during the drain exits at once with 1 (holds still open are released at the next start). SIGHUP
 * reloads, and so does POST /admin/reload on `s.admin`, one reload at a time. Until then an uncaught exception or
 * unhandled rejection is logged (`uncaught_error`) and the process keeps serving.
 *
 * The handlers are in place when this returns, so call it before announcing that the gateway
 * listens: whoever reads the announcement (a supervisor, a script, a test) may send SIGHUP or SIGTERM
 * at once, and SIGHUP without a handler ends the process. A SIGHUP kept while starting
 * (holdReloadsWhileStarting) reloads now.
 */
export function untilStopped(s: Supervised): Promise<number> {
  return new Promise((resolve) => {
    const lastResort = installLastResort(jsonLog);
    s.metrics?.countUncaughtErrors(() => lastResort.count);
    let stopping = false;
    let reloading: Promise<unknown> = Promise.resolve();
    // One reload at a time, whoever asked (a signal or the admin listener): each waits for the last.
    const reloadNext = (reload: () => Promise<ReloadResult>): Promise<ReloadResult> => {
      const next = reloading.then(reload, reload);
      reloading = next.catch((err: unknown) =>
        jsonLog('reload_failed', { error: err instanceof Error ? err.message : String(err) }),
      );
      return next;
    };
    const onHup = () => {
      if (stopping || !s.reload) return;
      void reloadNext(s.reload).catch(() => undefined);
    };
    const reload = s.reload;
    if (reload) s.admin?.setReloader(() => reloadNext(reload));
    const stop = (signal: string) => {
      if (stopping) {
        jsonLog('stopping_now', { signal });
        if (s.stopNow) {
          const exit = () => process.exit(1);
          // Not unref'd: the exit code is 1 even if the threads end and leave nothing to run.
          setTimeout(exit, 5_000);
          s.stopNow().then(exit, exit);
          return;
        }
        try {
          s.flushNow?.();
        } finally {
          process.exit(1);
        }
      }
      stopping = true;
      s.admin?.setReloader(null);
      jsonLog('stopping', { signal });
      s.stop().then(
        () => finish(0),
        (err: unknown) => {
          jsonLog('stop_failed', { error: err instanceof Error ? err.message : String(err) });
          finish(1);
        },
      );
    };
    const onInt = () => stop('SIGINT');
    const onTerm = () => stop('SIGTERM');
    const finish = (code: number) => {
      lastResort.uninstall();
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      process.off('SIGHUP', onHup);
      resolve(code);
    };
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    process.on('SIGHUP', onHup);
    if (startingHup) {
      process.off('SIGHUP', startingHup);
      startingHup = null;
      if (hupWhileStarting) {
        hupWhileStarting = false;
        onHup();
      }
    }
  });
}
