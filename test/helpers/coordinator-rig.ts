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
import { BreakerGrants } from '../../src/workers/breaker-grants.ts';
import { CoordinatorClient } from '../../src/workers/coordinator-client.ts';
import { Coordinator } from '../../src/workers/coordinator.ts';
import type { CoordinatorMessage, WorkerMessage } from '../../src/workers/protocol.ts';

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
