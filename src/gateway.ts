// Composition root: a compiled config and a store in, a listening gateway out. The only place that
// wires every part together (server, handlers, routing state, upstream client, store).
import type { Clock } from './clock.ts';
import { systemClock } from './clock.ts';
import type { CompiledConfig, GatewaySettings } from './config/compiled.ts';
import { ConfigIndex } from './config/index.ts';
import { Admission } from './admission/admission.ts';
import { FixedWindowRateLimiter } from './admission/rate-limit.ts';
import { StoreView } from './admission/store-view.ts';
import { WalletBook } from './admission/wallet-book.ts';
import type { GatewayContext } from './api/context.ts';
import { Lifecycle } from './observe/lifecycle.ts';
import { combineObservers } from './observe/observer.ts';
import { HealthTracker } from './routing/health.ts';
import { SessionPins } from './routing/session-pins.ts';
import type { AdminListener } from './server/admin-app.ts';
import { createApp } from './server/app.ts';
import type { Store } from './store/store.ts';
import { requestLogObserver } from './telemetry/request-log-observer.ts';
import type { Telemetry } from './telemetry/telemetry.ts';
import { UpstreamClient } from './upstream/client.ts';

export interface GatewayOptions {
  config: CompiledConfig;
  store: Store;
  host?: string;
  port?: number;
  clock?: Clock;
  random?: () => number;
  /** Send every upstream request to this origin instead (demo and tests: the simulator). */
  upstreamOverride?: string | null;
  /** Overrides of `gateway.yaml` limits (tests use short timeouts). */
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
}

export interface Gateway {
  port: number;
  url: string;
  ctx: GatewayContext;
  /** starting → ready (listening) → draining (set by the shutdown path) → stopped (closed). */
  lifecycle: Lifecycle;
  /** The admin listener (health, readiness, metrics), when there is one. */
  admin: AdminListener | null;
  telemetry: Telemetry | null;
  close(): Promise<void>;
}

/** One JSON line per event on stderr. Callers pass only non-secret fields. */
export function jsonLog(event: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(JSON.stringify({ t: new Date().toISOString(), event, ...fields }) + '\n');
}

export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? jsonLog;
  const settings: GatewaySettings = { ...opts.config.settings, limits: { ...opts.config.settings.limits, ...opts.limits } };

  // Refuse to start with sealed secrets we cannot open (missing or wrong master key).
  opts.store.secrets.assertUsable();
  const released = opts.store.wallets.releaseOrphanedHolds();
  if (released > 0) log('released_orphaned_holds', { count: released });

  const lifecycle = opts.admin?.lifecycle ?? opts.lifecycle ?? new Lifecycle(clock);
  const index = new ConfigIndex(opts.config);
  const wallets = new WalletBook(opts.store, (err) => log('ledger_write_failed', { error: err instanceof Error ? err.message : String(err) }));
  const view = new StoreView(
    opts.store,
    (name) => log('sealed_secret_refused', { name }),
    () => wallets.refresh(),
  );
  const admission = new Admission({
    keys: view,
    workspaceOf: (id) => index.workspaceById.get(id),
    limiter: new FixedWindowRateLimiter(clock),
    wallets,
  });
  const ctx: GatewayContext = {
    index,
    settings,
    store: opts.store,
    admission,
    wallets,
    view,
    clock,
    random: opts.random ?? Math.random,
    health: new HealthTracker(settings.health, clock),
    pins: new SessionPins({ clock, maxPins: settings.sessions.maxPins }),
    client: new UpstreamClient(),
    upstreamOverride: opts.upstreamOverride ? new URL(opts.upstreamOverride) : null,
    // The request-log writer first: it is the record of money and must not wait on the others.
    observer: combineObservers([requestLogObserver(opts.store.requestLog), ...(opts.telemetry?.observers ?? [])], (err) =>
      log('observer_failed', { error: err instanceof Error ? err.message : String(err) }),
    ),
    log,
  };
  opts.telemetry?.bind({
    breakers: () => ctx.index.config.deployments.map((d) => ({ deployment: d.id, provider: d.platform, state: ctx.health.state(d.id).state })),
    configHash: () => ctx.index.config.sourceHash,
    lifecycle,
  });
  const server = createApp(ctx);
  const host = opts.host ?? '127.0.0.1';
  const port = await server.listen(host, opts.port ?? 0);
  opts.admin?.attach({ index: () => ctx.index, credentialNames: () => opts.store.secrets.names() });
  lifecycle.markReady();
  return {
    port,
    url: `http://${host}:${port}`,
    ctx,
    lifecycle,
    admin: opts.admin ?? null,
    telemetry: opts.telemetry ?? null,
    async close() {
      lifecycle.markStopped();
      server.close();
      await ctx.client.destroy();
      wallets.close();
      opts.store.requestLog.flush();
      await opts.telemetry?.close();
      opts.admin?.close();
    },
  };
}
