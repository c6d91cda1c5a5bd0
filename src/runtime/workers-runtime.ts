// Start-up of `serve --workers N`: this (main) thread becomes the coordinator — the owner of the
// node's state (coordinator-state.ts: on the embedded store the database's write connection, the
// wallet book, the rate-limit windows and the session pins; on PostgreSQL the node's wallet service
// and Redis's limits, coordinator-fleet.ts) and of the breakers — and N serving threads answer the
// public port, each running the single-process request path against the coordinator's state (see
// src/workers/). The admin listener stays here and reports every worker; drain and reload go to all.
import { type DrainReport, drainedFields, type ReloadResult } from '../api/lifecycle.ts';
import { type Clock, systemClock } from '../clock.ts';
import type { CompiledConfig } from '../config/compiled.ts';
import { ConfigIndex } from '../config/index.ts';
import { jsonLog, metricLabels } from '../gateway.ts';
import { Lifecycle } from '../observe/lifecycle.ts';
import type { AdminListener } from '../server/admin-app.ts';
import type { Telemetry } from '../telemetry/telemetry.ts';
import { walletSamples } from '../telemetry/wallet-gauges.ts';
import { workerMetrics } from '../telemetry/worker-metrics.ts';
import { BreakerGrants } from '../workers/breaker-grants.ts';
import { Coordinator, type SharedAdmission } from '../workers/coordinator.ts';
import type { WorkerStart } from '../workers/protocol.ts';
import { LentRoomOwner } from '../workers/lent-room-owner.ts';
import { SharedAdmissionOwner } from '../workers/shared-owner.ts';
import { SharedWindows, SharedWindowsOwner } from '../workers/shared-windows.ts';
import type { ObservabilityOptions } from './observability.ts';
import { startObservability } from './runtime.ts';
import { holdPort } from './port-hold.ts';
import { ServingThreads } from './serving-threads.ts';
import { isPostgresUrl } from '../store/admin-store-interface.ts';
import { fleetCoordinatorState } from './coordinator-fleet.ts';
import type { WalletAdmissionMode } from '../fleet/pg-fleet-wallets.ts';
import { type CoordinatorState, embeddedCoordinatorState } from './coordinator-state.ts';

export interface WorkersOptions {
  config: CompiledConfig;
  db: string;
  host: string;
  port: number;
  workers: number;
  /** Redis for rate limits and pins, on PostgreSQL only. */
  redis?: string | null;
  /** Wallet admission on PostgreSQL (default escrow). */
  walletAdmission?: WalletAdmissionMode;
  upstreamOverride?: string | null;
  observability?: ObservabilityOptions;
  clock?: Clock;
  /** false: every hold and rate decision goes to the coordinator by message, no shared memory (the
   *  baseline `bench/run.js workers` measures shared memory against). Default true. */
  sharedAdmission?: boolean;
}

export interface RunningWorkers {
  url: string;
  port: number;
  admin: AdminListener | null;
  telemetry: Telemetry;
  /** The stored credentials' names (start-up warnings). */
  credentialNames(): ReadonlySet<string>;
  /** Where the state lives (the file, or the PostgreSQL URL with its password masked). */
  location: string;
  threads: ServingThreads;
  lifecycle: Lifecycle;
  reload(config: CompiledConfig): Promise<{ restartNeeded: string[] }>;
  recordReload(result: ReloadResult): void;
  /** Drains every worker, then writes what is pending and closes the store. */
  drain(deadlineMs?: number): Promise<DrainReport>;
  /** A second signal: stop the workers, commit what is pending. */
  stopNow(): Promise<void>;
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** The coordinator's state on the store `db` names (a file, or PostgreSQL with `redis`). */
function coordinatorState(o: WorkersOptions, clock: Clock, telemetry: Telemetry) {
  return isPostgresUrl(o.db)
    ? fleetCoordinatorState(o.db, o.redis ?? null, o.config, clock, telemetry, o.walletAdmission, o.workers)
    : embeddedCoordinatorState(o.db, o.config, clock);
}

/** What each serving thread starts with: the config of the moment (a thread restarted after a reload
 *  starts on the new one), the shared listener and the node's telemetry settings. */
function threadStart(
  o: WorkersOptions,
  config: () => CompiledConfig,
  port: number,
  metrics: boolean,
  coordinator: Coordinator,
  memory: SharedMemoryStart,
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
    ...memory,
  });
}

type SharedMemoryStart = Pick<WorkerStart, 'shared' | 'lentRoom' | 'fleetLimits'>;

/**
 * The admission memory the serving threads share: on a database file, the wallets' `available`
 * words and the rate windows; on a fleet node with escrow, the room its slices lend and the rate
 * windows the threads fall back to while Redis does not answer (the threads ask Redis themselves).
 */
function sharedAdmission(
  st: CoordinatorState,
  workers: number,
): { owner: SharedAdmission | null; memory: SharedMemoryStart } {
  if (st.sharedBook) {
    const owner = new SharedAdmissionOwner(st.sharedBook, workers);
    return { owner, memory: { shared: owner.memory, lentRoom: null, fleetLimits: null } };
  }
  if (st.lending && st.threadLimits) {
    const windows = SharedWindows.create();
    const owner = new LentRoomOwner(st.lending, workers, new SharedWindowsOwner(windows));
    const fleetLimits = { ...st.threadLimits, windows };
    return { owner, memory: { shared: null, lentRoom: owner.memory, fleetLimits } };
  }
  return NO_SHARED_MEMORY;
}

/** The node's gauges: breakers, config hash, lifecycle and wallets, read from the config of the moment. */
function bindTelemetry(
  telemetry: Telemetry,
  config: () => CompiledConfig,
  st: CoordinatorState,
  lifecycle: Lifecycle,
  clock: Clock,
): void {
  telemetry.bind({
    breakers: () =>
      config().deployments.map((d) => ({
        deployment: d.id,
        provider: d.platform,
        state: st.health.state(d.id).state,
      })),
    configHash: () => config().sourceHash,
    lifecycle,
    labels: () => metricLabels(config()),
    wallets: () => walletSamples(config(), (ws, now) => st.console.wallets.show(ws, now), clock.now()),
  });
}

const NO_SHARED_MEMORY = { owner: null, memory: { shared: null, lentRoom: null, fleetLimits: null } } as const;

export async function runWorkers(o: WorkersOptions): Promise<RunningWorkers> {
  const clock = o.clock ?? systemClock;
  let index = new ConfigIndex(o.config);
  let threads: ServingThreads | null = null;
  let holds: Coordinator['holds'] = { sharedMemory: 0, message: 0 };
  const { telemetry, admin } = await startObservability(o.observability, {
    metricsSource: (own) =>
      workerMetrics(
        own,
        () => threads?.samples() ?? [],
        () => threads?.collectMetrics() ?? Promise.resolve([]),
        () => holds,
      ),
  });
  const lifecycle = admin?.lifecycle ?? new Lifecycle(clock);
  let state: CoordinatorState | null = null;
  try {
    state = await coordinatorState(o, clock, telemetry);
    const st = state;
    const { wallets, health, pins } = st;
    const shared = o.sharedAdmission === false ? NO_SHARED_MEMORY : sharedAdmission(st, o.workers);
    const coordinator: Coordinator = new Coordinator({
      ...(shared.owner ? { shared: shared.owner } : {}),
      wallets,
      limiter: st.limiter,
      pins,
      breakers: new BreakerGrants(
        health,
        clock,
        (id) => index.deploymentById.get(id),
        () => threads?.readyWorkers() ?? [],
        (states) => coordinator.broadcast({ kind: 'breakers', states }),
      ),
      appendLog: (row) => st.appendLog(row),
      behind: () => st.behind(),
      onError: (event, err) => jsonLog(event, { error: errorText(err) }),
    });
    holds = coordinator.holds;
    const hold = await holdPort(o.host, o.port);
    const port = hold.port;
    const pool = new ServingThreads(
      coordinator,
      threadStart(o, () => index.config, port, telemetry.metrics !== null, coordinator, shared.memory),
      jsonLog,
    );
    threads = pool;
    try {
      await pool.start(o.workers);
    } finally {
      await hold.release();
    }
    bindTelemetry(telemetry, () => index.config, st, lifecycle, clock);
    const serving = { index: () => index, credentialNames: () => st.credentialNames(), workers: () => pool.samples() };
    admin?.attach(serving, {
      ...serving,
      store: st.console,
      health,
      creds: { has: (name: string) => st.credentialNames().has(name) },
      now: () => clock.now(),
    });
    lifecycle.markReady();
    let drained: Promise<DrainReport> | null = null;
    return {
      url: `http://${o.host}:${port}`,
      port,
      admin,
      telemetry,
      credentialNames: () => st.credentialNames(),
      location: 'location' in st ? String(st.location) : o.db,
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
          await st.close();
          await telemetry.close();
          admin?.close();
          return report;
        })());
      },
      async stopNow() {
        await pool.stopNow();
        st.stopNow();
      },
    };
  } catch (err) {
    admin?.close();
    await telemetry.close();
    await state?.close();
    throw err;
  }
}
