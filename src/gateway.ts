// Composition root: a compiled config and a store in, a listening gateway out. The only place that
// wires every part together (server, handlers, routing state, upstream client, store). It also owns
// the process lifecycle the CLI drives: the graceful drain (SIGTERM) and the live config reload
// (SIGHUP), whose steps are in src/api/lifecycle.ts.
import type { OperatorView } from './admin/operator-view.ts';
import type { Clock } from './clock.ts';
import { systemClock } from './clock.ts';
import type { CompiledConfig, GatewaySettings } from './config/compiled.ts';
import { Admission } from './admission/admission.ts';
import { FixedWindowRateLimiter, type RateLimiter } from './admission/rate-limit.ts';
import { StoreView } from './admission/store-view.ts';
import { WalletBook } from './admission/wallet-book.ts';
import { type ConfigSnapshot, configSnapshot, restartNeeded } from './api/config-snapshot.ts';
import type { GatewayContext, SharedState } from './api/context.ts';
import { InFlight } from './api/in-flight.ts';
import { type DrainReport, drainGateway, type ReloadResult } from './api/lifecycle.ts';
import { adapterContext } from './proxy/adapter-context.ts';
import { StopSwitch } from './proxy/stop-switch.ts';
import { Lifecycle } from './observe/lifecycle.ts';
import { logLine } from './observe/log-line.ts';
import { combineObservers, type RequestObserver } from './observe/observer.ts';
import { protocolFor } from './protocols/index.ts';
import { HealthTracker } from './routing/health.ts';
import { SessionPins } from './routing/session-pins.ts';
import type { AdminListener } from './server/admin-app.ts';
import { createApp } from './server/app.ts';
import type { ConsoleStore } from './store/console-store-interface.ts';
import { sqliteConsole } from './store/sqlite/console-store.ts';
import { type RequestLogRow, type Store, ThreadWriter, WRITER_BATCH_WAIT_MS } from './store/sqlite/store.ts';
import { requestLogObserver } from './telemetry/request-log-observer.ts';
import type { Telemetry } from './telemetry/telemetry.ts';
import { walletSamples } from './telemetry/wallet-gauges.ts';
import { UpstreamClient } from './upstream/client.ts';

export type { DrainReport, ReloadResult } from './api/lifecycle.ts';
export type { SharedState } from './api/context.ts';

/** The single-process gateway's shared state: in-process books its tests and diagnostics may read. */
export interface LocalState extends SharedState {
  wallets: WalletBook;
  pins: SessionPins;
  health: HealthTracker;
  view: StoreView;
}

/** Shared state another owner serves (a --workers coordinator, a shared store): every seam plus
 *  the rate limiter behind admission. */
export interface SharedStateParts extends SharedState {
  limiter: RateLimiter;
  /** True while the owner's store writer is behind (new requests refused with 503); absent: never. */
  behind?(): boolean;
}

/**
 * What the composition root writes and reads beside the seams: the request log and the names of the
 * stored credentials (readiness). From `store` by default; a node on a shared store passes its own.
 */
export interface GatewayRecords {
  requestLog: { append(row: RequestLogRow): void; flush(): void | Promise<void> };
  /** Throws when the store does not answer (readiness reports it). */
  credentialNames(): ReadonlySet<string>;
  /** What the operator console reads and changes (request log, spend, wallets, keys); absent: the
   *  console answers 503 on this gateway. The embedded store's is built from `store`. */
  console?: ConsoleStore;
}

export interface GatewayOptions {
  config: CompiledConfig;
  /** The embedded store: the in-process books' database, and the records' unless `records` is given.
   *  Required unless `shared` and `records` are both given. */
  store?: Store;
  /** The request log and credential names when there is no embedded store (a node on PostgreSQL). */
  records?: GatewayRecords;
  host?: string;
  port?: number;
  clock?: Clock;
  random?: () => number;
  /** Send every upstream request to this origin instead (demo and tests: the simulator). */
  upstreamOverride?: string | null;
  /** Overrides of `gateway.yaml` limits (tests use short timeouts); kept across reloads. */
  limits?: Partial<GatewaySettings['limits']>;
  log?: (event: string, fields?: Record<string, unknown>) => void;
  /** Metrics, traces and the access log (src/telemetry/telemetry.ts startTelemetry); none when
   *  absent. Closed with the gateway. */
  telemetry?: Telemetry;
  /** An admin listener the caller started (src/server/admin-app.ts startAdminListener), possibly
   *  before this gateway, so readiness reports the start; attached once the gateway is built and
   *  closed with it. Its lifecycle is the gateway's. */
  admin?: AdminListener;
  /** Where the gateway is in its life, when there is no admin listener to take it from. */
  lifecycle?: Lifecycle;
  /** The shared state's seams, served by another owner; absent: the in-process books over `store`. */
  shared?: SharedStateParts;
  /**
   * Commit the ledger and the request log on a writer thread that owns the database's one write
   * connection (`serve` does, for a database file): nothing is written on the serving thread, a
   * settlement's log row is committed with it, and new requests are refused with 503 while more
   * than `capacity` items wait (default DEFAULT_WRITER_CAPACITY). Absent: this thread writes
   * (batched, as tests and benchmarks of the in-process API expect).
   */
  writerThread?: { file: string; capacity?: number };
  /** Listen beside this process's other serving threads on the same port (`serve --workers N`,
   *  whose coordinator checked the port is free first); default: exclusively. */
  sharePort?: boolean;
}

/** A running gateway; by default the single-process one, whose state is in-process books. */
export interface Gateway<S extends SharedState = LocalState> {
  port: number;
  url: string;
  ctx: GatewayContext<S>;
  /** True from the moment a drain began (`lifecycle.draining`; readiness reports not-ready). */
  readonly draining: boolean;
  /** sha256 of the config files the running config was compiled from. */
  readonly configHash: string;
  /** The last reload's result (null until the first SIGHUP / `pi-gateway reload`). */
  readonly lastReload: ReloadResult | null;
  /**
   * Swaps in a validated, compiled config: new requests use it, in-flight ones finish on theirs.
   * Wallets, rate-limit windows, session pins and breaker state are kept (new health and pin bounds
   * apply to them). Returns what only a restart would apply.
   */
  reload(config: CompiledConfig): { restartNeeded: string[] };
  /** Keeps a reload's result (`lastReload`) and logs it; every reload attempt ends here. */
  recordReload(result: ReloadResult): void;
  /**
   * Graceful drain: stop accepting connections, let in-flight requests finish for `deadlineMs`
   * (default `limits.drain_timeout_ms`), end the rest (`drained`), wait for their settlements and log
   * rows, then close. Idempotent: a second call returns the same drain.
   */
  drain(deadlineMs?: number): Promise<DrainReport>;
  /** starting → ready (listening) → draining (set by the shutdown path) → stopped (closed). */
  lifecycle: Lifecycle;
  /** The admin listener (health, readiness, metrics), when there is one. */
  admin: AdminListener | null;
  telemetry: Telemetry | null;
  /** Closes at once: connections dropped, pending ledger and log writes flushed. Idempotent. */
  close(): Promise<void>;
  /** Commits every pending ledger operation and log row before it returns (a second signal's exit). */
  flushNow(): void;
}

/** One JSON line per event on stderr (src/observe/log-line.ts: time, level, event, fields). Callers
 *  pass only non-secret fields, named in snake_case. */
export function jsonLog(event: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(logLine(event, fields));
}

/** The request-log writer first: it is the record of money and must not wait on the others. */
function requestObserver(
  opts: GatewayOptions,
  records: GatewayRecords,
  writer: ThreadWriter | null,
  log: (event: string, fields?: Record<string, unknown>) => void,
): RequestObserver {
  return combineObservers(
    [requestLogObserver(writer ?? records.requestLog), ...(opts.telemetry?.observers ?? [])],
    (err) => log('observer_failed', { error: err instanceof Error ? err.message : String(err) }),
  );
}

/** What metrics read from the running gateway at scrape time (wallets: from the console's store,
 *  which a serving thread of `serve --workers N` has not; its coordinator reports them). */
function telemetryView(
  ctx: GatewayContext,
  lifecycle: Lifecycle,
  store: ConsoleStore | undefined,
): Parameters<Telemetry['bind']>[0] {
  return {
    ...(store
      ? { wallets: () => walletSamples(ctx.index.config, (ws, now) => store.wallets.show(ws, now), ctx.clock.now()) }
      : {}),
    breakers: () =>
      ctx.index.config.deployments.map((d) => ({
        deployment: d.id,
        provider: d.platform,
        state: ctx.health.state(d.id).state,
      })),
    configHash: () => ctx.index.config.sourceHash,
    lifecycle,
    labels: () => metricLabels(ctx.index.config),
  };
}

/** The config and its inference endpoints (those with a protocol module, as the server routes
 *  them): the label values whose metric series start at zero. */
export function metricLabels(config: CompiledConfig): { config: CompiledConfig; endpoints: string[] } {
  return {
    config,
    endpoints: config.vocabularies.endpoints.filter((e) => protocolFor(e.id) !== undefined).map((e) => e.id),
  };
}

/** What the admin listener (readiness, the console) reads of this gateway. */
function operatorView(ctx: GatewayContext, records: GatewayRecords, store: ConsoleStore): OperatorView {
  return {
    index: () => ctx.index,
    credentialNames: () => records.credentialNames(),
    store,
    health: ctx.health,
    creds: ctx.view,
    now: () => ctx.clock.now(),
  };
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * The in-process books over the store: the single-process gateway's shared state. Orphaned holds
 * are released first, on this thread's connection, before any writer thread starts.
 */
async function localState(
  opts: GatewayOptions,
  store: Store,
  clock: Clock,
  log: (event: string, fields?: Record<string, unknown>) => void,
): Promise<LocalState & { limiter: RateLimiter; writer: ThreadWriter | null }> {
  // Refuse to start with sealed secrets we cannot open (missing or wrong master key).
  store.secrets.assertUsable();
  const released = store.wallets.releaseOrphanedHolds();
  if (released > 0) log('released_orphaned_holds', { count: released });
  const writer = opts.writerThread
    ? await ThreadWriter.start(opts.writerThread.file, {
        capacity: opts.writerThread.capacity,
        onError: (event, err) => log(event, { error: errorText(err) }),
      })
    : null;
  const wallets = new WalletBook(
    store,
    (err) => log('ledger_write_failed', { error: errorText(err) }),
    writer ?? undefined,
    writer ? WRITER_BATCH_WAIT_MS : 0,
  );
  const view = new StoreView(
    store,
    // kept: the master key was rotated under this process; it serves the values it had opened
    // until it restarts with the new PI_MASTER_KEY.
    (name, _err, kept) => log(kept ? 'sealed_secret_kept_after_rotation' : 'sealed_secret_refused', { name }),
    () => void wallets.refresh(),
    // With a writer thread this connection sees that thread's commits too: it checks the counter
    // only keys, secrets and credits move.
    writer ? () => store.cachedDataChangedSinceLastCheck() : undefined,
  );
  const settings = opts.config.settings;
  return {
    writer,
    wallets,
    view,
    limiter: new FixedWindowRateLimiter(clock),
    health: new HealthTracker(settings.health, clock),
    pins: new SessionPins({ clock, maxPins: settings.sessions.maxPins }),
  };
}

/** Listens, or stops the wallet book and the writer thread (which would keep the process alive)
 *  before passing the refusal on: nothing was admitted yet. */
async function listenOrStop(
  listen: () => Promise<number>,
  wallets: SharedStateParts['wallets'],
  writer: ThreadWriter | null,
): Promise<number> {
  try {
    return await listen();
  } catch (err) {
    await wallets.close();
    await writer?.close();
    throw err;
  }
}

/** What a request handler reaches: the config of the moment (`config()`: a reload replaces it in a
 *  single assignment) and every seam of the state this gateway serves with. */
function gatewayContext(
  config: () => ConfigSnapshot,
  parts: {
    opts: GatewayOptions;
    state: SharedStateParts;
    local: (LocalState & { writer: ThreadWriter | null }) | null;
    records: GatewayRecords;
    writer: ThreadWriter | null;
    client: UpstreamClient;
    upstreamOverride: URL | null;
    clock: Clock;
    log: (event: string, fields?: Record<string, unknown>) => void;
  },
): GatewayContext {
  const { opts, state, local, records, writer, client, upstreamOverride, clock, log } = parts;
  const { wallets, view } = state;
  const admission = new Admission({
    keys: view,
    // The current config: a workspace added by a reload admits its keys from then on.
    workspaceOf: (id) => config().index.workspaceById.get(id),
    limiter: state.limiter,
    wallets,
    onReleaseError: (traceId, err) =>
      log('release_failed', { trace_id: traceId, error: err instanceof Error ? err.message : String(err) }),
  });
  return {
    get current() {
      return config();
    },
    get index() {
      return config().index;
    },
    get settings() {
      return config().settings;
    },
    admission,
    wallets,
    view,
    clock,
    random: opts.random ?? Math.random,
    health: state.health,
    pins: state.pins,
    client,
    upstreamOverride,
    inFlight: new InFlight(),
    stop: new StopSwitch(),
    observer: requestObserver(opts, records, writer, log),
    storeBehind:
      writer && local
        ? () => writer.behind(local.wallets.pendingOps())
        : (opts.shared?.behind?.bind(opts.shared) ?? (() => false)),
    log,
  };
}

/** Everything a gateway opened, closed in order: no new answers, upstream connections, the wallet
 *  book and the writer (what is pending is committed), the request log, telemetry, the admin listener. */
async function closeGateway(parts: {
  lifecycle: Lifecycle;
  server: ReturnType<typeof createApp>;
  client: UpstreamClient;
  wallets: SharedStateParts['wallets'];
  writer: ThreadWriter | null;
  records: GatewayRecords;
  opts: GatewayOptions;
}): Promise<void> {
  const { lifecycle, server, client, wallets, writer, records, opts } = parts;
  lifecycle.markStopped();
  server.close();
  await client.destroy();
  await wallets.close();
  await writer?.close();
  await records.requestLog.flush();
  await opts.telemetry?.close();
  opts.admin?.close();
}

export async function startGateway(opts: GatewayOptions & { shared?: undefined }): Promise<Gateway<LocalState>>;
export async function startGateway(opts: GatewayOptions): Promise<Gateway<SharedState>>;
export async function startGateway(opts: GatewayOptions): Promise<Gateway<SharedState>> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? jsonLog;
  const store = opts.store;
  const records: GatewayRecords | null =
    opts.records ??
    (store
      ? { requestLog: store.requestLog, credentialNames: () => store.secrets.names(), console: sqliteConsole(store) }
      : null);
  const upstreamOverride = opts.upstreamOverride ? new URL(opts.upstreamOverride) : null; // before a writer thread could keep a refusal alive
  const local = opts.shared || !store ? null : await localState(opts, store, clock, log);
  const state: SharedStateParts | null = opts.shared ?? local;
  if (!records || !state) throw new Error('startGateway needs a store, or shared state and its records');
  const { wallets, view } = state;
  const writer = local?.writer ?? null;

  const lifecycle = opts.admin?.lifecycle ?? opts.lifecycle ?? new Lifecycle(clock);
  const client = new UpstreamClient();
  const sources = {
    limits: opts.limits,
    reveal: (credential: string) => view.reveal(credential),
    upstreamOverride: () => ctx.upstreamOverride,
    // One for the process (token caches outlive reloads); token requests get the current timeout.
    adapters: adapterContext({
      clock,
      postForm: client.postForm.bind(client),
      upstreamOverride: () => ctx.upstreamOverride,
      tokenTimeoutMs: () => snapshot.settings.limits.tokenTimeoutMs,
      log,
    }),
  };
  // The one mutable reference to the config: a reload replaces it in a single assignment.
  let snapshot: ConfigSnapshot = configSnapshot(opts.config, sources);
  const ctx = gatewayContext(() => snapshot, {
    opts,
    state,
    local,
    records,
    writer,
    client,
    upstreamOverride,
    clock,
    log,
  });
  opts.telemetry?.bind(telemetryView(ctx, lifecycle, records.console));
  const server = createApp(ctx);
  const host = opts.host ?? '127.0.0.1';
  const port = await listenOrStop(
    () => server.listen(host, opts.port ?? 0, { shared: opts.sharePort === true }),
    wallets,
    writer,
  );
  // The console reads the records' store: the embedded file, or PostgreSQL on a fleet node.
  opts.admin?.attach(
    { index: () => ctx.index, credentialNames: () => records.credentialNames() },
    records.console ? operatorView(ctx, records, records.console) : null,
  );
  lifecycle.markReady();

  let closed: Promise<void> | null = null;
  let drain: Promise<DrainReport> | null = null;
  let lastReload: ReloadResult | null = null;
  const close = (): Promise<void> =>
    (closed ??= closeGateway({ lifecycle, server, client: ctx.client, wallets, writer, records, opts }));

  return {
    port,
    url: `http://${host}:${port}`,
    ctx,
    lifecycle,
    admin: opts.admin ?? null,
    telemetry: opts.telemetry ?? null,
    get draining() {
      return lifecycle.draining;
    },
    get configHash() {
      return snapshot.hash;
    },
    get lastReload() {
      return lastReload;
    },
    reload(config) {
      const next = configSnapshot(config, sources);
      const needed = restartNeeded(snapshot, next);
      ctx.health.reconfigure(next.settings.health);
      ctx.pins.resize(next.settings.sessions.maxPins);
      snapshot = next;
      return { restartNeeded: needed };
    },
    recordReload(result) {
      lastReload = result;
      lifecycle.recordReload(result);
      log('config_reload', {
        ok: result.ok,
        hash: result.hash,
        problems: result.problems.length,
        restart_needed: result.restartNeeded,
      });
    },
    drain(deadlineMs) {
      lifecycle.draining = true;
      return (drain ??= drainGateway({
        ctx,
        stopAccepting: () => server.stopAccepting(),
        close,
        log,
        deadlineMs: deadlineMs ?? snapshot.settings.limits.drainTimeoutMs,
      }));
    },
    close,
    flushNow() {
      void wallets.close();
      writer?.flush();
      void records.requestLog.flush();
    },
  };
}
