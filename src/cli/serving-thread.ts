// One serving thread of `serve --workers N`: the whole request path of the single-process gateway
// (startGateway), listening beside the other threads on the same port, with the shared state behind
// the seams answered by the coordinator (src/workers/coordinator-client.ts, breaker-mirror.ts). Keys
// and sealed credentials are read on this thread's own read-only connection to the database (cached
// per thread, refreshed through the store's change counter like the single process); every write —
// holds, settlements, the request log — goes to the coordinator and its writer thread.
import { parentPort, workerData } from 'node:worker_threads';
import { StoreView } from '../admission/store-view.ts';
import { systemClock } from '../clock.ts';
import { type Gateway, jsonLog, type SharedState, startGateway } from '../gateway.ts';
import { openStore, type Store } from '../store/store.ts';
import { BufferedLines } from '../telemetry/line-sink.ts';
import { startTelemetry, type Telemetry } from '../telemetry/telemetry.ts';
import { metricsJSON } from '../telemetry/worker-metrics.ts';
import { BreakerMirror } from '../workers/breaker-mirror.ts';
import { CoordinatorClient } from '../workers/coordinator-client.ts';
import type { CoordinatorMessage, WorkerMessage, WorkerStart } from '../workers/protocol.ts';

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

async function start(port: NonNullable<typeof parentPort>, data: WorkerStart): Promise<void> {
  const post = (m: WorkerMessage) => port.postMessage(m);
  const client = new CoordinatorClient(port);
  const breakers = new BreakerMirror(data.worker, client, systemClock, data.breakers);
  const log = (event: string, fields: Record<string, unknown> = {}) =>
    jsonLog(event, { worker: data.worker, ...fields });
  let gateway: Gateway<SharedState> | null = null;
  let telemetry: Telemetry | null = null;
  let store: Store | null = null;
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
  const stopNow = async () => {
    client.abandon();
    await gateway?.close();
    store?.close();
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
    store?.close();
    post({ kind: 'drained', report });
    // Nothing of this thread is left to run: the port is the last handle.
    port.close();
  };

  try {
    // Read-only: this thread never writes the database (the coordinator's writer thread does).
    store = openStore(data.db, { readonly: true });
    store.secrets.assertUsable();
    const s = store;
    const view = new StoreView(
      s,
      (name, _err, kept) => log(kept ? 'sealed_secret_kept_after_rotation' : 'sealed_secret_refused', { name }),
      () => client.refresh(),
      // The writer thread commits all the time; only keys, secrets and credits move this counter.
      () => s.cachedDataChangedSinceLastCheck(),
    );
    telemetry = await startTelemetry({
      metrics: data.metrics ? { processMetrics: false } : false,
      accessLog: data.accessLog ? new BufferedLines(process.stdout) : null,
      trustedProxies: data.trustedProxies,
      traces: data.traces,
      log,
    });
    gateway = await startGateway({
      config: data.config,
      shared: { wallets: client, view, limiter: client, pins: client, health: breakers, behind: () => client.behind() },
      records: {
        requestLog: { append: (row) => client.appendLog(row), flush: () => undefined },
        credentialNames: () => s.secrets.names(),
      },
      host: data.host,
      port: data.port,
      sharePort: true,
      upstreamOverride: data.upstreamOverride,
      telemetry,
      log,
    });
    post({ kind: 'listening', port: gateway.port });
    const wanted = drainWanted as { deadlineMs: number | null } | null;
    if (wanted) void drain(wanted.deadlineMs);
  } catch (err) {
    await telemetry?.close();
    store?.close();
    post({ kind: 'start-failed', error: errorText(err) });
    port.close();
  }
}

if (parentPort) void start(parentPort, workerData as WorkerStart);
