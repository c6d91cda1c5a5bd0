// Start-up of `serve --workers N` on the embedded store: this (main) thread becomes the coordinator —
// the only owner of the database's write connection (its writer thread), the wallet book, the
// rate-limit windows, the session pins and the breakers — and N serving threads answer the public
// port, each running the single-process request path against the coordinator's state (see
// src/workers/). The admin listener stays here and reports every worker; drain and reload go to all.
import { createServer } from 'node:net';
import { FixedWindowRateLimiter } from '../admission/rate-limit.ts';
import { WalletBook } from '../admission/wallet-book.ts';
import { type DrainReport, drainedFields, type ReloadResult } from '../api/lifecycle.ts';
import { type Clock, systemClock } from '../clock.ts';
import type { CompiledConfig } from '../config/compiled.ts';
import { ConfigIndex } from '../config/index.ts';
import { jsonLog, metricLabels } from '../gateway.ts';
import { Lifecycle } from '../observe/lifecycle.ts';
import { HealthTracker } from '../routing/health.ts';
import { SessionPins } from '../routing/session-pins.ts';
import type { AdminListener } from '../server/admin-app.ts';
import { sqliteConsole } from '../store/console-store.ts';
import { openStore, type Store, ThreadWriter, WRITER_BATCH_WAIT_MS } from '../store/store.ts';
import type { Telemetry } from '../telemetry/telemetry.ts';
import { walletSamples } from '../telemetry/wallet-gauges.ts';
import { workerMetrics } from '../telemetry/worker-metrics.ts';
import { BreakerGrants } from '../workers/breaker-grants.ts';
import { Coordinator } from '../workers/coordinator.ts';
import type { ObservabilityOptions } from './observability-options.ts';
import { startObservability, writerCapacity } from './runtime.ts';
import { ServingThreads } from './serving-threads.ts';

export interface WorkersOptions {
  config: CompiledConfig;
  db: string;
  host: string;
  port: number;
  workers: number;
  upstreamOverride?: string | null;
  observability?: ObservabilityOptions;
  clock?: Clock;
}

export interface RunningWorkers {
  url: string;
  port: number;
  admin: AdminListener | null;
  telemetry: Telemetry;
  store: Store;
  wallets: WalletBook;
  threads: ServingThreads;
  lifecycle: Lifecycle;
  reload(config: CompiledConfig): Promise<{ restartNeeded: string[] }>;
  recordReload(result: ReloadResult): void;
  /** Drains every worker, then writes what is pending and closes the store's writer (not the store). */
  drain(deadlineMs?: number): Promise<DrainReport>;
  /** A second signal: stop the workers, commit what is pending. */
  stopNow(): Promise<void>;
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Checks that `port` is free with an exclusive bind (a busy port fails here, not shared by the
 *  workers' SO_REUSEPORT bind) and returns it (port 0: the free port picked). */
function claimPort(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err) =>
      reject(
        new Error(
          `cannot listen on ${host}:${port}: ${errorText(err)} (the port is in use, or the address is not available)`,
        ),
      ),
    );
    probe.listen({ host, port, exclusive: true }, () => {
      const address = probe.address();
      const picked = typeof address === 'object' && address ? address.port : port;
      probe.close(() => resolve(picked));
    });
  });
}

/** The coordinator's state: opened, orphaned holds of a previous process released, writer started. */
async function coordinatorState(o: WorkersOptions, clock: Clock) {
  const store = openStore(o.db, { requestLog: o.config.settings.requestLog });
  try {
    store.secrets.assertUsable();
    const released = store.wallets.releaseOrphanedHolds();
    if (released > 0) jsonLog('released_orphaned_holds', { count: released });
    const writer = await ThreadWriter.start(o.db, {
      capacity: writerCapacity(),
      onError: (event, err) => jsonLog(event, { error: errorText(err) }),
    });
    const wallets = new WalletBook(
      store,
      (err) => jsonLog('ledger_write_failed', { error: errorText(err) }),
      writer,
      WRITER_BATCH_WAIT_MS,
    );
    const settings = o.config.settings;
    return {
      store,
      writer,
      wallets,
      health: new HealthTracker(settings.health, clock),
      pins: new SessionPins({ clock, maxPins: settings.sessions.maxPins }),
    };
  } catch (err) {
    store.close();
    throw err;
  }
}

/** What each serving thread starts with: the config of the moment (a thread restarted after a reload
 *  starts on the new one), the shared listener and the node's telemetry settings. */
function threadStart(
  o: WorkersOptions,
  config: () => CompiledConfig,
  port: number,
  metrics: boolean,
  coordinator: Coordinator,
) {
  const obs = o.observability;
  return (worker: number) => ({
    worker,
    config: config(),
    db: o.db,
    host: o.host,
    port,
    upstreamOverride: o.upstreamOverride ?? null,
    metrics,
    accessLog: obs?.accessLog ?? false,
    trustedProxies: obs?.trustedProxies ?? [],
    traces: obs?.tracesUrl ? { url: obs.tracesUrl, serviceName: obs.serviceName } : null,
    breakers: coordinator.breakerStates(),
  });
}

export async function runWorkers(o: WorkersOptions): Promise<RunningWorkers> {
  const clock = o.clock ?? systemClock;
  let index = new ConfigIndex(o.config);
  let threads: ServingThreads | null = null;
  const { telemetry, admin } = await startObservability(o.observability, {
    metricsSource: (own) =>
      workerMetrics(
        own,
        () => threads?.samples() ?? [],
        () => threads?.collectMetrics() ?? Promise.resolve([]),
      ),
  });
  const lifecycle = admin?.lifecycle ?? new Lifecycle(clock);
  let state: Awaited<ReturnType<typeof coordinatorState>> | null = null;
  try {
    state = await coordinatorState(o, clock);
    const { store, writer, wallets, health, pins } = state;
    const coordinator: Coordinator = new Coordinator({
      wallets,
      limiter: new FixedWindowRateLimiter(clock),
      pins,
      breakers: new BreakerGrants(
        health,
        clock,
        (id) => index.deploymentById.get(id),
        () => threads?.readyWorkers() ?? [],
        (states) => coordinator.broadcast({ kind: 'breakers', states }),
      ),
      appendLog: (row) => writer.append(row),
      behind: () => writer.behind(wallets.pendingOps()),
      onError: (event, err) => jsonLog(event, { error: errorText(err) }),
    });
    const port = await claimPort(o.host, o.port);
    const pool = new ServingThreads(
      coordinator,
      threadStart(o, () => index.config, port, telemetry.metrics !== null, coordinator),
      jsonLog,
    );
    threads = pool;
    await pool.start(o.workers);
    telemetry.bind({
      breakers: () =>
        index.config.deployments.map((d) => ({
          deployment: d.id,
          provider: d.platform,
          state: health.state(d.id).state,
        })),
      configHash: () => index.config.sourceHash,
      lifecycle,
      labels: () => metricLabels(index.config),
      wallets: () =>
        walletSamples(index.config, (ws, now) => Promise.resolve(store.wallets.show(ws, now)), clock.now()),
    });
    const serving = { index: () => index, credentialNames: () => store.secrets.names(), workers: () => pool.samples() };
    admin?.attach(serving, {
      ...serving,
      store: sqliteConsole(store),
      health,
      creds: { has: (name: string) => store.secrets.names().has(name) },
      now: () => clock.now(),
    });
    lifecycle.markReady();
    let drained: Promise<DrainReport> | null = null;
    return {
      url: `http://${o.host}:${port}`,
      port,
      admin,
      telemetry,
      store,
      wallets,
      threads: pool,
      lifecycle,
      async reload(config) {
        // The coordinator first: a thread (re)started from now on starts on the new config.
        index = new ConfigIndex(config);
        health.reconfigure(config.settings.health);
        pins.resize(config.settings.sessions.maxPins);
        return { restartNeeded: await pool.reload(config) };
      },
      recordReload(result) {
        lifecycle.recordReload(result);
        jsonLog('config_reload', {
          ok: result.ok,
          hash: result.hash,
          problems: result.problems.length,
          restart_needed: result.restartNeeded,
          workers: o.workers,
        });
      },
      drain(deadlineMs) {
        lifecycle.draining = true;
        return (drained ??= (async () => {
          const report = await pool.drain(deadlineMs ?? index.config.settings.limits.drainTimeoutMs);
          jsonLog('drained', { ...drainedFields(report), workers: o.workers });
          lifecycle.markStopped();
          wallets.close();
          await writer.close();
          await telemetry.close();
          admin?.close();
          return report;
        })());
      },
      async stopNow() {
        await pool.stopNow();
        wallets.close();
        writer.flush();
      },
    };
  } catch (err) {
    admin?.close();
    await telemetry.close();
    if (state) {
      state.wallets.close();
      await state.writer.close();
      state.store.close();
    }
    throw err;
  }
}
