// The breaker-board contract (test/helpers/breaker-board-contract.ts) over every implementation the
// gateway runs with: the tracker in process, and two serving threads' mirrors over one coordinator
// (`serve --workers N`), whose board judges every outcome and grants the half-open probe.
import t from 'tap';
import { FixedWindowRateLimiter } from '../../src/admission/rate-limit.ts';
import { ManualClock } from '../../src/clock.ts';
import type { CompiledDeployment } from '../../src/config/compiled.ts';
import { type BreakerBoard, HealthTracker } from '../../src/routing/health.ts';
import { SessionPins } from '../../src/routing/session-pins.ts';
import { BreakerGrants, type Schedule } from '../../src/workers/breaker-grants.ts';
import { BreakerMirror } from '../../src/workers/breaker-mirror.ts';
import { CoordinatorClient, TELL_WAIT_MS } from '../../src/workers/coordinator-client.ts';
import { Coordinator } from '../../src/workers/coordinator.ts';
import type { CoordinatorMessage, WorkerMessage } from '../../src/workers/protocol.ts';
import { breakerBoardContract } from '../helpers/breaker-board-contract.ts';
import { memoryBook } from '../helpers/coordinator-rig.ts';

const NOW = Date.UTC(2026, 0, 15, 12);

t.test('in process (HealthTracker)', async (t) => {
  breakerBoardContract(t, async (_t, settings) => {
    const clock = new ManualClock(NOW);
    const board = new HealthTracker(settings, clock);
    return {
      board,
      other: board,
      deliver: async () => undefined,
      advance: async (ms) => clock.advance(ms),
      pass: (ms) => clock.advance(ms),
      now: () => clock.now(),
      reload: async (next) => board.reconfigure(next),
    };
  });
});

t.test('two serving threads’ mirrors over one coordinator (serve --workers N)', async (t) => {
  breakerBoardContract(t, async (t, settings, deployments) => {
    const clock = new ManualClock(NOW);
    const { book } = memoryBook(t, clock);
    // The coordinator's timers (a probe granted at the end of the cool-down, a grant moving on) on
    // the test's clock: they run when `advance` moves it past them.
    let timers: { at: number; fn: () => void; live: boolean }[] = [];
    const schedule: Schedule = (fn, ms) => {
      const timer = { at: clock.now() + ms, fn, live: true };
      timers.push(timer);
      return () => void (timer.live = false);
    };
    const runDue = () => {
      for (;;) {
        const due = timers.filter((x) => x.live && x.at <= clock.now());
        if (due.length === 0) return;
        timers = timers.filter((x) => !due.includes(x));
        for (const x of due) x.fn();
      }
    };
    let known = new Map(deployments.map((d) => [d.id, d]));
    const tracker = new HealthTracker(settings, clock);
    const workers = [1, 2];
    const grants = new BreakerGrants(
      tracker,
      clock,
      (id) => known.get(id),
      () => workers,
      (states) => coordinator.broadcast({ kind: 'breakers', states }),
      schedule,
    );
    t.teardown(() => grants.close());
    const coordinator: Coordinator = new Coordinator({
      wallets: book,
      limiter: new FixedWindowRateLimiter(clock),
      pins: new SessionPins({ clock, maxPins: 10 }),
      breakers: grants,
      appendLog: () => undefined,
      behind: () => false,
      onError: () => undefined,
    });
    const [board, other] = workers.map((w) => {
      // Worker → coordinator and back, each message cloned as postMessage clones it.
      const client = new CoordinatorClient({
        postMessage: (m: WorkerMessage) => {
          if (m.kind === 'calls') coordinator.handle(w, structuredClone(m.calls));
        },
      });
      const mirror = new BreakerMirror(w, client, clock, coordinator.breakerStates());
      coordinator.attach(w, {
        postMessage: (m: CoordinatorMessage) => {
          const c = structuredClone(m);
          if (c.kind === 'replies') client.receive(c);
          else if (c.kind === 'breakers') mirror.update(c.states);
        },
      });
      return mirror;
    });
    if (!board || !other) throw new Error('two mirrors');
    // A client sends a turn's calls at its end (setImmediate), and a call nobody waits for (a success
    // on a closed breaker) after TELL_WAIT_MS unless another call takes it along; the coordinator
    // answers and broadcasts as it handles them, so both are delivered once that much has passed.
    const deliver = async () => {
      await new Promise((resolve) => setTimeout(resolve, TELL_WAIT_MS + 1));
      await new Promise((resolve) => setImmediate(resolve));
    };
    return {
      board,
      other,
      deliver,
      advance: async (ms) => {
        await deliver();
        clock.advance(ms);
        runDue();
        await deliver();
      },
      pass: (ms) => clock.advance(ms),
      now: () => clock.now(),
      reload: async (next, remaining: readonly CompiledDeployment[]) => {
        // The coordinator's board takes a reload's thresholds and config; each serving thread's
        // gateway reconfigures its board too (the mirror leaves thresholds to the coordinator).
        known = new Map(remaining.map((d) => [d.id, d]));
        tracker.reconfigure(next);
        for (const mirror of [board, other] as BreakerBoard[]) mirror.reconfigure(next);
        await deliver();
      },
    };
  });
});
