// The coordinator's state on a fleet node (`serve --workers N --db postgres://… [--redis …]`): the
// node's PostgreSQL wallet service (escrow by default: the node's slices of each wallet and its
// settlement batches; or per-request holds), Redis's rate
// limits and pins (or the node's own), the request log written by the node's batches, and the
// console reading the fleet's database. Serving threads reach it through the coordinator, as on the
// embedded store; each reads keys and credentials on its own small pool (serving-thread.ts).
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { PgStoreView } from '../fleet/pg-store-view.ts';
import type { WalletService } from '../admission/admission.ts';
import { EscrowWalletService } from '../fleet/pg-escrow.ts';
import { fleetWalletService, type WalletAdmissionMode } from '../fleet/pg-fleet-wallets.ts';
import type { Clock } from '../clock.ts';
import type { CompiledConfig } from '../config/compiled.ts';
import { jsonLog } from '../gateway.ts';
import { HealthTracker } from '../routing/health.ts';
import { pgConsole } from '../store/postgres/console-store.ts';
import { openPgStore, type PgStore } from '../store/postgres/store.ts';
import type { Telemetry } from '../telemetry/telemetry.ts';
import type { LendingWallets } from '../workers/lent-room-owner.ts';
import type { CoordinatorState } from './coordinator-state.ts';
import { fleetLimits } from './fleet-limits.ts';
import { ThreadRedisWords } from './thread-redis-words.ts';

export async function fleetCoordinatorState(
  db: string,
  redisUrl: string | null,
  config: CompiledConfig,
  clock: Clock,
  telemetry: Telemetry,
  walletAdmission: WalletAdmissionMode = 'escrow',
  /** The node's serving threads (each reports its own Redis connection). */
  workers = 1,
): Promise<CoordinatorState & { location: string }> {
  const log = jsonLog;
  const node = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let store: PgStore | null = null;
  let wallets: WalletService | null = null;
  try {
    store = await openPgStore(db, {
      clock,
      requestLog: config.settings.requestLog,
      onIdleError: (err) => log('store_connection_lost', { error: err.message }),
    });
    await store.secrets.assertUsable();
    // The coordinator's own view: the credentials' names for readiness and the console.
    const view = await PgStoreView.open(store, () => undefined);
    wallets = fleetWalletService(store, walletAdmission, { clock, node, log });
    // The serving threads' own Redis connections, reported in shared memory for this node's metrics:
    // word 0 their fallbacks, word w 1 while thread w's connection is down.
    const threadRedis = ThreadRedisWords.create(workers);
    const limits = await fleetLimits(redisUrl, config.settings, clock, telemetry, log, threadRedis);
    const s = store;
    const w = wallets;
    return {
      location: s.location,
      wallets: w,
      // Escrow's slices lend room to the serving threads' shared memory (per-request holds cannot).
      ...(w instanceof EscrowWalletService ? { lending: w as LendingWallets<unknown> } : {}),
      threadLimits: { redis: redisUrl, threadRedis: threadRedis.buffer },
      limiter: limits.limiter,
      pins: limits.pins,
      health: new HealthTracker(config.settings.health, clock),
      appendLog: (row) => s.requestLog.append(row),
      // Every write is a statement that answers or fails on its own: nothing queues behind a writer.
      behind: () => false,
      console: pgConsole(s),
      credentialNames: () => {
        view.sync();
        if (!view.storeAnswers) throw new Error('PostgreSQL does not answer');
        return view.names();
      },
      async close() {
        await w.close();
        await s.requestLog.flush();
        await s.close();
        await limits.redis?.close();
      },
      stopNow() {
        void s.requestLog.flush();
      },
    };
  } catch (err) {
    await wallets?.close();
    await store?.close();
    throw err;
  }
}
