// One serving thread of `serve --workers N`: the whole request path of the single-process gateway
// (startGateway), listening beside the other threads on the same port, with the shared state behind
// the seams answered by the coordinator (src/workers/coordinator-client.ts, breaker-mirror.ts). Keys
// and sealed credentials are read on this thread's own read-only connection to the database file, or
// its own small pool on PostgreSQL (cached per thread, refreshed through the store's change counter
// like the single process, thread-view.ts); every write — holds, settlements, the request log — goes
// to the coordinator.
import { parentPort, workerData } from 'node:worker_threads';
import { systemClock } from '../clock.ts';
import { type Gateway, jsonLog, type SharedState, startGateway } from '../gateway.ts';
import { BufferedLines } from '../telemetry/line-sink.ts';
import { startTelemetry, type Telemetry } from '../telemetry/telemetry.ts';
import { metricsJSON } from '../telemetry/worker-metrics.ts';
import { BreakerMirror } from '../workers/breaker-mirror.ts';
import { CoordinatorClient } from '../workers/coordinator-client.ts';
import { LentRoomWallets } from '../workers/lent-room-client.ts';
import { SharedMemoryLimiter, SharedMemoryWallets } from '../workers/shared-client.ts';
import type { CoordinatorMessage, WorkerMessage, WorkerStart } from '../workers/protocol.ts';
import type { RateLimiter } from '../admission/rate-limit.ts';
import { threadRateLimiter } from './fleet-limits.ts';
import { ThreadRedisWords } from './thread-redis-words.ts';
import { openThreadView } from './thread-view.ts';

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * The thread's rate limiter: on a database file, the windows the threads share; on a fleet node,
 * Redis on the thread's own connection (falling back to the shared windows); else the coordinator's,
 * by message.
 */
async function rateLimiter(
  data: WorkerStart,
  client: CoordinatorClient,
): Promise<{ limiter: RateLimiter; close(): Promise<void> }> {
  if (data.shared) return { limiter: new SharedMemoryLimiter(client, data.shared.windows, systemClock), close: noop };
  const fleet = data.fleetLimits;
  if (!fleet) return { limiter: client, close: noop };
  const words = new ThreadRedisWords(fleet.threadRedis);
  // A thread restarted after one that ended while Redis was away: its connection starts afresh (the
  // first connect is not a transition its status is told of).
  words.status(data.worker, true);
  const local = new SharedMemoryLimiter(client, fleet.windows, systemClock);
  const { limiter, redis } = await threadRateLimiter(fleet.redis, local, systemClock, {
    fellBack: () => words.fellBack(),
    status: (up) => words.status(data.worker, up),
  });
  return {
    limiter,
    close: async () => {
      await redis?.close();
      // A thread that ended decides nothing: its connection no longer makes the node's Redis down.
      words.status(data.worker, true);
    },
  };
}

const noop = async (): Promise<void> => undefined;

async function start(port: NonNullable<typeof parentPort>, data: WorkerStart): Promise<void> {
  const post = (m: WorkerMessage) => port.postMessage(m);
  const client = new CoordinatorClient(port);
  const breakers = new BreakerMirror(data.worker, client, systemClock, data.breakers);
  const log = (event: string, fields: Record<string, unknown> = {}) =>
    jsonLog(event, { worker: data.worker, ...fields });
  let gateway: Gateway<SharedState> | null = null;
  let telemetry: Telemetry | null = null;
  let closeView: (() => Promise<void>) | null = null;
  port.on('message', (m: CoordinatorMessage) => {
    if (m.kind === 'replies') client.receive(m);
    else if (m.kind === 'breakers') breakers.update(m.states);
    else if (m.kind === 'metrics') void answerMetrics(m.id);
    else if (m.kind === 'reload' && gateway)
      post({ kind: 'reloaded', restartNeeded: gateway.reload(m.config).restartNeeded });
    else if (m.kind === 'drain') void drain(m.deadlineMs);
    else if (m.kind === 'stop-now') void stopNow();
  });
  // uWS must be closed before its thread ends (a thread ended with a listening app aborts the process).
  // A stop asked for while the thread is still starting is carried out once the start is done.
  let stopped = false;
  const stopNow = async () => {
    stopped = true;
    client.abandon();
    await gateway?.close();
    await closeView?.();
    port.close();
  };
  const answerMetrics = async (id: number) => {
    const metrics = telemetry?.metrics ?? null;
    post({ kind: 'metrics', id, json: metrics ? await metricsJSON(metrics) : null });
  };
  // A drain asked for while the thread is still starting runs as soon as it listens.
  let drainWanted: { deadlineMs: number | null } | null = null;
  const drain = async (deadlineMs: number | null) => {
    drainWanted = { deadlineMs };
    const g = gateway;
    if (!g) return;
    const report = await g.drain(deadlineMs ?? undefined);
    await closeView?.();
    post({ kind: 'drained', report });
    // Nothing of this thread is left to run: the port is the last handle.
    port.close();
  };

  try {
    // Holds and rate decisions in shared memory when the coordinator offers it (no message each); on
    // a fleet node, holds from the room its slices lend there.
    const wallets = data.shared
      ? new SharedMemoryWallets(client, data.shared, data.worker)
      : data.lentRoom
        ? new LentRoomWallets(client, data.lentRoom, data.worker)
        : client;
    const limits = await rateLimiter(data, client);
    const keys = await openThreadView(data.db, wallets, log).catch(async (err: unknown) => {
      await limits.close();
      throw err;
    });
    closeView = async () => {
      await keys.close();
      await limits.close();
    };
    const view = keys.view;
    // Stopped while opening: nothing listens yet, so close what is open without a moment on the port.
    if (stopped) {
      await closeView();
      port.close();
      return;
    }
    telemetry = await startTelemetry({
      metrics: data.metrics ? { processMetrics: false } : false,
      accessLog: data.accessLog ? new BufferedLines(process.stdout) : null,
      trustedProxies: data.trustedProxies,
      traces: data.traces,
      log,
    });
    gateway = await startGateway({
      config: data.config,
      shared: {
        wallets,
        view,
        limiter: limits.limiter,
        pins: client,
        health: breakers,
        behind: () => client.behind(),
      },
      records: {
        requestLog: { append: (row) => client.appendLog(row), flush: () => undefined },
        credentialNames: () => keys.credentialNames(),
      },
      host: data.host,
      port: data.port,
      sharePort: true,
      upstreamOverride: data.upstreamOverride,
      telemetry,
      log,
    });
    if (stopped) {
      await gateway.close();
      await closeView();
      port.close();
      return;
    }
    post({ kind: 'listening', port: gateway.port });
    const wanted = drainWanted as { deadlineMs: number | null } | null;
    if (wanted) void drain(wanted.deadlineMs);
  } catch (err) {
    await telemetry?.close();
    await closeView?.();
    post({ kind: 'start-failed', error: errorText(err) });
    port.close();
  }
}

if (parentPort) void start(parentPort, workerData as WorkerStart);
