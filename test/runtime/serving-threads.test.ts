// The serving threads' supervisor (src/runtime/serving-threads.ts) with stand-in threads: a thread that
// dies unexpectedly has its open hold released by the coordinator and is started again; a drain
// ends every thread and adds up their reports.
import t from 'tap';
import { FixedWindowRateLimiter } from '../../src/admission/rate-limit.ts';
import { WalletBook } from '../../src/admission/wallet-book.ts';
import { systemClock } from '../../src/clock.ts';
import { ServingThreads } from '../../src/runtime/serving-threads.ts';
import { HealthTracker } from '../../src/routing/health.ts';
import { SessionPins } from '../../src/routing/session-pins.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { BreakerGrants } from '../../src/workers/breaker-grants.ts';
import { Coordinator } from '../../src/workers/coordinator.ts';
import type { WorkerStart } from '../../src/workers/protocol.ts';
import { waitFor } from '../helpers/admission.ts';

const HEALTH = {
  consecutiveFailures: 3,
  errorRate: 1,
  window: 10,
  minRequests: 100,
  cooldownMs: 1000,
  maxCooldownMs: 8000,
  slowFirstByteMs: 60_000,
};

t.test('a thread that dies has its hold released and is started again; drain ends them all', async (t) => {
  const store = openStore(':memory:', { masterKey: undefined });
  t.teardown(() => store.close());
  store.wallets.credit('ws', 1_000n, 'test');
  const wallets = new WalletBook(store);
  const grants = new BreakerGrants(
    new HealthTracker(HEALTH, systemClock),
    systemClock,
    () => undefined,
    () => [],
    () => undefined,
  );
  t.teardown(() => grants.close());
  const coordinator: Coordinator = new Coordinator({
    wallets,
    limiter: new FixedWindowRateLimiter(systemClock),
    pins: new SessionPins({ clock: systemClock, maxPins: 10 }),
    breakers: grants,
    appendLog: () => undefined,
    behind: () => false,
    onError: () => undefined,
  });
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  let starts = 0;
  const threads = new ServingThreads(
    coordinator,
    (worker) => ({ worker, crash: starts++ === 0, trace: `trace-${starts}` }) as unknown as WorkerStart,
    (event, fields = {}) => events.push({ event, fields }),
    new URL('../fixtures/workers/stand-in-thread.ts', import.meta.url),
  );
  await threads.start(1);
  t.ok(await waitFor(() => events.some((e) => e.event === 'worker_exited'), 10_000), 'the thread died');
  const exited = events.find((e) => e.event === 'worker_exited');
  t.same(exited?.fields, { worker: 1, code: 7, holds_released: 1, restart: 1 });
  t.ok(await waitFor(() => threads.samples()[0]?.state === 'ready' && starts === 2, 10_000), 'started again');
  t.same(
    threads.samples().map((s) => [s.worker, s.state, s.restarts]),
    [[1, 'ready', 1]],
  );
  t.ok(await waitFor(() => wallets.view('ws').held === 100n, 5_000), "only the new thread's hold is open");
  const report = await threads.drain(1000);
  t.same({ ...report, ms: 0 }, { inFlightAtStart: 1, endedAtDeadline: 0, unfinished: 0, ms: 0 });
  t.equal(threads.samples()[0]?.state, 'exited');
  t.equal(coordinator.openHolds(1), 0);
});
