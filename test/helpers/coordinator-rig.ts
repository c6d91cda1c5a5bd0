// The coordinator of `serve --workers N` without threads, for suites that need a serving thread's
// client over a real coordinator: one CoordinatorClient wired to one Coordinator over in-process
// ports, each message cloned as postMessage would clone it.
import type { Test } from 'tap';
import type { WalletService } from '../../src/admission/admission.ts';
import type { RateLimiter } from '../../src/admission/rate-limit.ts';
import type { Clock } from '../../src/clock.ts';
import type { GatewaySettings } from '../../src/config/compiled.ts';
import { HealthTracker } from '../../src/routing/health.ts';
import { type PinStore, SessionPins } from '../../src/routing/session-pins.ts';
import { BreakerGrants, type Schedule } from '../../src/workers/breaker-grants.ts';
import { CoordinatorClient } from '../../src/workers/coordinator-client.ts';
import { Coordinator, type SharedAdmission } from '../../src/workers/coordinator.ts';
import type { CoordinatorMessage, WorkerMessage } from '../../src/workers/protocol.ts';
import { SharedMemoryLimiter, SharedMemoryWallets } from '../../src/workers/shared-client.ts';
import { SharedAdmissionOwner } from '../../src/workers/shared-owner.ts';
import type { EscrowWalletService } from '../../src/fleet/pg-escrow.ts';
import { LentRoomWallets } from '../../src/workers/lent-room-client.ts';
import { type LendingWallets, LentRoomOwner } from '../../src/workers/lent-room-owner.ts';
import { FixedWindowRateLimiter } from '../../src/admission/rate-limit.ts';
import { WalletBook } from '../../src/admission/wallet-book.ts';
import { openStore, type Store } from '../../src/store/sqlite/store.ts';

/** Breaker settings for the coordinator suites (a breaker trips after two failures in a row). */
export const TEST_HEALTH: GatewaySettings['health'] = {
  consecutiveFailures: 2,
  errorRate: 1,
  window: 10,
  minRequests: 100,
  cooldownMs: 1000,
  maxCooldownMs: 8000,
  slowFirstByteMs: 60_000,
};

/** An in-memory store and its wallet book on `clock`, both closed when `t` ends. */
export function memoryBook(
  t: Test,
  clock: Clock,
  onError?: (err: unknown) => void,
): { store: Store; book: WalletBook } {
  const store = openStore(':memory:', { clock });
  const book = onError ? new WalletBook(store, onError) : new WalletBook(store);
  t.teardown(() => {
    book.close();
    store.close();
  });
  return { store, book };
}

/** A serving thread's client (worker 1) of a coordinator holding `wallets` and `limiter`. */
export function coordinatorClient(
  t: Test,
  clock: Clock,
  state: { wallets: WalletService; limiter: RateLimiter },
): CoordinatorClient {
  return coordinatorClients(t, clock, state, 1)[0] as CoordinatorClient;
}

/** `count` serving threads' clients (workers 1…count) of one coordinator holding `wallets`,
 *  `limiter` and `pins` (default: pins in process on `clock`). */
export function coordinatorClients(
  t: Test,
  clock: Clock,
  state: { wallets: WalletService; limiter: RateLimiter; pins?: PinStore },
  count: number,
): CoordinatorClient[] {
  const workers = Array.from({ length: count }, (_, i) => i + 1);
  const breakers = new BreakerGrants(
    new HealthTracker(TEST_HEALTH, clock),
    clock,
    () => undefined,
    () => workers,
    () => undefined,
    () => () => undefined,
  );
  t.teardown(() => breakers.close());
  const coordinator: Coordinator = new Coordinator({
    wallets: state.wallets,
    limiter: state.limiter,
    pins: state.pins ?? new SessionPins({ clock, maxPins: 10 }),
    breakers,
    appendLog: () => undefined,
    behind: () => false,
    onError: () => undefined,
  });
  return workers.map((worker) => {
    const client = new CoordinatorClient({
      postMessage: (m: WorkerMessage) => {
        if (m.kind === 'calls') coordinator.handle(worker, structuredClone(m.calls));
      },
    });
    coordinator.attach(worker, {
      postMessage: (m: CoordinatorMessage) => {
        const c = structuredClone(m);
        if (c.kind === 'replies') client.receive(c);
      },
    });
    return client;
  });
}

/** Serving threads over one coordinator whose state includes a shared admission memory, without
 *  threads: each worker's side is made by `side` over its own client, once. */
interface SharedMemoryRig<O, W> {
  coordinator: Coordinator;
  owner: O;
  /** The messages each worker sent the coordinator (its calls, batch by batch). */
  sent: { worker: number; ops: string[] }[];
  /** One serving thread's side per worker (1-based), each with its own client. */
  worker(n: number): W & { client: CoordinatorClient };
}

function sharedMemoryRig<O extends SharedAdmission, W>(
  t: Test,
  clock: Clock,
  wallets: WalletService,
  owner: O,
  workers: number,
  side: (client: CoordinatorClient, n: number) => W,
  schedule?: Schedule,
): SharedMemoryRig<O, W> {
  const all = Array.from({ length: workers }, (_, i) => i + 1);
  const breakers = new BreakerGrants(
    new HealthTracker(TEST_HEALTH, clock),
    clock,
    () => undefined,
    () => all,
    () => undefined,
    () => () => undefined,
  );
  t.teardown(() => breakers.close());
  const coordinator: Coordinator = new Coordinator({
    wallets,
    limiter: new FixedWindowRateLimiter(clock),
    pins: new SessionPins({ clock, maxPins: 10 }),
    breakers,
    appendLog: () => undefined,
    behind: () => false,
    onError: () => undefined,
    shared: owner,
  });
  const sides = new Map<number, W & { client: CoordinatorClient }>();
  const sent: SharedMemoryRig<O, W>['sent'] = [];
  return {
    coordinator,
    owner,
    sent,
    worker(n) {
      const known = sides.get(n);
      if (known) return known;
      const client = new CoordinatorClient(
        {
          postMessage: (m: WorkerMessage) => {
            if (m.kind !== 'calls') return;
            sent.push({ worker: n, ops: m.calls.map((c) => c.op) });
            coordinator.handle(n, structuredClone(m.calls));
          },
        },
        schedule,
      );
      coordinator.attach(n, {
        postMessage: (m: CoordinatorMessage) => {
          const c = structuredClone(m);
          if (c.kind === 'replies') client.receive(c);
        },
      });
      const made = { ...side(client, n), client };
      sides.set(n, made);
      return made;
    },
  };
}

/** A serving thread's shared-memory admission (worker `worker`) over a coordinator whose embedded
 *  book is `book`: the rig of `serve --workers N` on a database file, without threads. */
export type SharedRig = SharedMemoryRig<
  SharedAdmissionOwner,
  { wallets: SharedMemoryWallets; limiter: SharedMemoryLimiter }
>;

export function sharedAdmissionRig(t: Test, clock: Clock, book: WalletBook, workers = 1): SharedRig {
  const owner = new SharedAdmissionOwner(book, workers);
  return sharedMemoryRig(t, clock, book, owner, workers, (client, n) => ({
    wallets: new SharedMemoryWallets(client, owner.memory, n),
    limiter: new SharedMemoryLimiter(client, owner.memory.windows, clock),
  }));
}

/** A fleet node's serving threads taking holds from room its escrow's slices lend to shared memory
 *  (`serve --workers N --db postgres://…`), without threads: one coordinator over `escrow`. */
export type LentRoomRig = SharedMemoryRig<LentRoomOwner<unknown>, { wallets: LentRoomWallets }>;

export function lentRoomRig(t: Test, clock: Clock, escrow: EscrowWalletService, workers = 1): LentRoomRig {
  const owner = new LentRoomOwner(escrow as LendingWallets<unknown>, workers);
  // A thread's announcement goes with its next message (or `client.close()`), never on the wall
  // clock's timer: which slice it is charged to must not depend on how fast the machine is.
  return sharedMemoryRig(
    t,
    clock,
    escrow,
    owner,
    workers,
    (client, n) => ({ wallets: new LentRoomWallets(client, owner.memory, n) }),
    () => () => undefined,
  );
}
