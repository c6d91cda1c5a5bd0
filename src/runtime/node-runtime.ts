// Start-up of a fleet node: `serve --db postgres://… [--redis redis://…]`. Keys, sealed secrets,
// wallets, the ledger and the request log live in PostgreSQL (the schema must be migrated: `serve`
// checks, never migrates); rate-limit windows and session pins in Redis when given (else per node,
// with a warning); breaker state stays per node. The state goes behind the seams of src/gateway.ts
// (`shared`), so the request path is the single-process one. The admin listener's console reads and
// changes the same database (request log, spend, wallets, keys): any node shows the fleet's records.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { PgStoreView } from '../fleet/pg-store-view.ts';
import type { WalletService } from '../admission/admission.ts';
import { fleetWalletService, type WalletAdmissionMode } from '../fleet/pg-fleet-wallets.ts';
import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import type { CompiledConfig } from '../config/compiled.ts';
import { type Gateway, type GatewayOptions, jsonLog, type SharedState, startGateway } from '../gateway.ts';
import { HealthTracker } from '../routing/health.ts';
import type { RedisConnection } from '../fleet/redis-connection.ts';
import { pgConsole } from '../store/postgres/console-store.ts';
import { openPgStore, type PgStore } from '../store/postgres/store.ts';
import { fleetLimits } from './fleet-limits.ts';
import type { ObservabilityOptions } from './observability.ts';
import { startObservability } from './runtime.ts';

export interface NodeOptions {
  config: CompiledConfig;
  db: string;
  redis: string | null;
  host: string;
  port: number;
  upstreamOverride?: string | null;
  observability?: ObservabilityOptions;
  clock?: Clock;
  /** This node's name in hold rows; default host:pid:random. */
  node?: string;
  /** Wallet admission (default escrow: slices admitted in memory; docs/fleet.md "Escrow"). */
  walletAdmission?: WalletAdmissionMode;
}

export interface RunningNode {
  gateway: Gateway<SharedState>;
  store: PgStore;
  wallets: WalletService;
  redis: RedisConnection | null;
  /** Drains nothing: closes the store and Redis (after `gateway.drain()`). */
  close(): Promise<void>;
}

export async function runNode(opts: NodeOptions): Promise<RunningNode> {
  const clock = opts.clock ?? systemClock;
  const log = jsonLog;
  const node = opts.node ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const { telemetry, admin } = await startObservability(opts.observability);
  let store: PgStore | null = null;
  let redis: RedisConnection | null = null;
  let wallets: WalletService | null = null;
  try {
    store = await openPgStore(opts.db, {
      clock,
      requestLog: opts.config.settings.requestLog,
      onIdleError: (err) => log('store_connection_lost', { error: err.message }),
    });
    await store.secrets.assertUsable();
    const view = await PgStoreView.open(store, (name, _err, kept) =>
      log(kept ? 'sealed_secret_kept_after_rotation' : 'sealed_secret_refused', { name }),
    );
    wallets = fleetWalletService(store, opts.walletAdmission ?? 'escrow', { clock, node, log });
    const settings = opts.config.settings;
    const limits = await fleetLimits(opts.redis, settings, clock, telemetry, log);
    redis = limits.redis;
    const { limiter, pins } = limits;
    const shared = { wallets, view, limiter, pins, health: new HealthTracker(settings.health, clock) };
    const records = {
      requestLog: store.requestLog,
      credentialNames: () => {
        if (!view.storeAnswers) throw new Error('PostgreSQL does not answer');
        return view.names();
      },
      // The operator console (admin listener with PI_ADMIN_TOKEN) reads the fleet's database.
      console: pgConsole(store),
    };
    const gwOpts: GatewayOptions = {
      config: opts.config,
      shared,
      records,
      clock,
      host: opts.host,
      port: opts.port,
      upstreamOverride: opts.upstreamOverride ?? null,
      telemetry,
    };
    if (admin) gwOpts.admin = admin;
    const gateway = await startGateway(gwOpts);
    const s = store;
    const r = redis;
    const w = wallets;
    return {
      gateway,
      store: s,
      wallets: w,
      redis: r,
      async close() {
        await w.close();
        await s.close();
        await r?.close();
      },
    };
  } catch (err) {
    admin?.close();
    await telemetry.close();
    await wallets?.close();
    await store?.close();
    await redis?.close();
    throw err;
  }
}
