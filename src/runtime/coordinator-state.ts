// What the coordinator of `serve --workers N` owns, whichever store it runs on: the wallets, the
// rate-limit windows, the session pins, the breakers' tracker, where finished requests' log rows go,
// what the console reads, and how it all is closed. The embedded store's filling is here; a fleet
// node's (PostgreSQL, Redis) is in coordinator-fleet.ts.
import type { WalletService } from '../admission/admission.ts';
import { FixedWindowRateLimiter, type RateLimiter } from '../admission/rate-limit.ts';
import { WalletBook } from '../admission/wallet-book.ts';
import type { Clock } from '../clock.ts';
import type { CompiledConfig } from '../config/compiled.ts';
import { jsonLog } from '../gateway.ts';
import { HealthTracker } from '../routing/health.ts';
import { type PinStore, SessionPins } from '../routing/session-pins.ts';
import type { ConsoleStore } from '../store/console-store-interface.ts';
import { sqliteConsole } from '../store/sqlite/console-store.ts';
import { openStore, ThreadWriter, WRITER_BATCH_WAIT_MS } from '../store/sqlite/store.ts';
import type { RequestLogRow } from '../store/types.ts';
import type { LendingWallets } from '../workers/lent-room-owner.ts';
import type { AdmittingBook } from '../workers/shared-owner.ts';
import { writerCapacity } from './runtime.ts';

export interface CoordinatorState {
  wallets: WalletService;
  /** The embedded book, whose holds serving threads may take in shared memory (shared-owner.ts). */
  sharedBook?: AdmittingBook;
  /** A fleet node's escrow, whose slices lend room serving threads take holds from (lent-room-owner.ts). */
  lending?: LendingWallets<unknown>;
  /** A fleet node's: serving threads decide rate limits themselves, on this Redis (null: none), and
   *  report to the node's metrics in `threadRedis` (32-bit words: 0, their fallbacks; `worker`, 1
   *  while that thread's connection is down). */
  threadLimits?: { redis: string | null; threadRedis: SharedArrayBuffer };
  limiter: RateLimiter;
  pins: PinStore;
  health: HealthTracker;
  /** A finished request's log row (a serving thread's). */
  appendLog(row: RequestLogRow): void;
  /** True while the store's writes are behind: serving threads refuse new requests with 503. */
  behind(): boolean;
  console: ConsoleStore;
  /** The stored credentials' names (readiness, the console); throws when the store does not answer. */
  credentialNames(): ReadonlySet<string>;
  /** After the drain: writes what is pending and closes the store. */
  close(): Promise<void>;
  /** A second signal: writes what is pending now. */
  stopNow(): void;
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** The embedded store: opened, orphaned holds of a previous process released, writer started. */
export async function embeddedCoordinatorState(
  db: string,
  config: CompiledConfig,
  clock: Clock,
): Promise<CoordinatorState> {
  const store = openStore(db, { requestLog: config.settings.requestLog });
  try {
    store.secrets.assertUsable();
    const released = store.wallets.releaseOrphanedHolds();
    if (released > 0) jsonLog('released_orphaned_holds', { count: released });
    const writer = await ThreadWriter.start(db, {
      capacity: writerCapacity(),
      onError: (event, err) => jsonLog(event, { error: errorText(err) }),
    });
    const wallets = new WalletBook(
      store,
      (err) => jsonLog('ledger_write_failed', { error: errorText(err) }),
      writer,
      WRITER_BATCH_WAIT_MS,
    );
    const settings = config.settings;
    return {
      wallets,
      sharedBook: wallets,
      limiter: new FixedWindowRateLimiter(clock),
      pins: new SessionPins({ clock, maxPins: settings.sessions.maxPins }),
      health: new HealthTracker(settings.health, clock),
      appendLog: (row) => writer.append(row),
      behind: () => writer.behind(wallets.pendingOps()),
      console: sqliteConsole(store),
      credentialNames: () => store.secrets.names(),
      async close() {
        wallets.close();
        await writer.close();
        store.close();
      },
      stopNow() {
        wallets.close();
        writer.flush();
      },
    };
  } catch (err) {
    store.close();
    throw err;
  }
}
