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
import { HealthTracker } from './routing/health.ts';
import { SessionPins } from './routing/session-pins.ts';
import { createApp } from './server/app.ts';
import type { Store } from './store/store.ts';
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
}

export interface Gateway {
  port: number;
  url: string;
  ctx: GatewayContext;
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

  const index = new ConfigIndex(opts.config);
  const wallets = new WalletBook(opts.store, (err) => log('ledger_write_failed', { error: err instanceof Error ? err.message : String(err) }));
  const view = new StoreView(
    opts.store,
    // kept: the master key was rotated under this process; it serves the values it had opened
    // until it restarts with the new PI_MASTER_KEY.
    (name, _err, kept) => log(kept ? 'sealed_secret_kept_after_rotation' : 'sealed_secret_refused', { name }),
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
    log,
  };
  const server = createApp(ctx);
  const host = opts.host ?? '127.0.0.1';
  const port = await server.listen(host, opts.port ?? 0);
  return {
    port,
    url: `http://${host}:${port}`,
    ctx,
    async close() {
      server.close();
      await ctx.client.destroy();
      wallets.close();
      opts.store.requestLog.flush();
    },
  };
}
