// The coordinator of `serve --workers N` without threads: two CoordinatorClients wired to one
// Coordinator over in-process ports (messages cloned as postMessage would). Exactness of holds and
// rate limits across clients, one message per event-loop turn, holds of a dead worker released,
// settlement answered only once durable, and the breaker probe granted to one worker at a time.
import t, { type Test } from 'tap';
import type { HoldResult, WalletService } from '../../src/admission/admission.ts';
import { FixedWindowRateLimiter, type RateLimiter } from '../../src/admission/rate-limit.ts';
import { WalletBook } from '../../src/admission/wallet-book.ts';
import { ManualClock } from '../../src/clock.ts';
import type { CompiledDeployment } from '../../src/config/compiled.ts';
import { HealthTracker } from '../../src/routing/health.ts';
import { SessionPins } from '../../src/routing/session-pins.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import type { RequestLogRow } from '../../src/store/types.ts';
import { BreakerGrants } from '../../src/workers/breaker-grants.ts';
import { BreakerMirror } from '../../src/workers/breaker-mirror.ts';
import { CoordinatorClient, TELL_WAIT_MS } from '../../src/workers/coordinator-client.ts';
import { Coordinator } from '../../src/workers/coordinator.ts';
import type { CoordinatorMessage, WorkerMessage } from '../../src/workers/protocol.ts';
import { TEST_HEALTH } from '../helpers/coordinator-rig.ts';

const HEALTH = TEST_HEALTH;
const DEPLOYMENT = { id: 'alpha/chat', status: 'up' } as CompiledDeployment;
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A wallet service and limiter that answer later, as a fleet node's PostgreSQL and Redis do: holds
 *  wait until the test lets them through (`answerHolds`), rate decisions answer on the next tick. */
function later(book: WalletBook, limiter: RateLimiter) {
  const waiting: (() => void)[] = [];
  const wallets: WalletService = {
    hold: (ws, trace, amount) =>
      new Promise<HoldResult>((resolve) => waiting.push(() => resolve(book.hold(ws, trace, amount)))),
    settle: (trace, cost, details, row) => book.settle(trace, cost, details, row),
    release: (trace) => book.release(trace),
    refresh: () => book.refresh(),
    close: () => book.close(),
  };
  const slowLimiter: RateLimiter = {
    take: (key, limit) => new Promise((resolve) => setImmediate(() => resolve(limiter.take(key, limit)))),
  };
  return {
    wallets,
    limiter: slowLimiter,
    answerHolds: () => {
      for (const answer of waiting.splice(0)) answer();
    },
    waitingHolds: () => waiting.length,
  };
}

function rig(t: Test, opts: { workers?: number; later?: boolean } = {}) {
  const clock = new ManualClock(1_700_000_000_000);
  const store = openStore(':memory:', { clock, masterKey: undefined });
  t.teardown(() => store.close());
  const wallets = new WalletBook(store);
  const slow = opts.later ? later(wallets, new FixedWindowRateLimiter(clock)) : null;
  const health = new HealthTracker(HEALTH, clock);
  const logged: RequestLogRow[] = [];
  // The grants' timers on the manual clock: run when the test moves it (runDue).
  let timers: { at: number; fn: () => void; live: boolean }[] = [];
  const schedule = (fn: () => void, ms: number) => {
    const timer = { at: clock.now() + ms, fn, live: true };
    timers.push(timer);
    return () => void (timer.live = false);
  };
  const advance = (ms: number) => {
    clock.advance(ms);
    const due = timers.filter((x) => x.live && x.at <= clock.now());
    timers = timers.filter((x) => !due.includes(x));
    for (const x of due) x.fn();
  };
  const sent: { worker: number; m: WorkerMessage }[] = [];
  const ids = Array.from({ length: opts.workers ?? 2 }, (_, i) => i + 1);
  const clients = new Map<number, CoordinatorClient>();
  const live = new Set(ids);
  const mirrors = new Map<number, BreakerMirror>();
  const coordinator: Coordinator = new Coordinator({
    wallets: slow?.wallets ?? wallets,
    limiter: slow?.limiter ?? new FixedWindowRateLimiter(clock),
    pins: new SessionPins({ clock, maxPins: 100 }),
    breakers: new BreakerGrants(
      health,
      clock,
      (id) => (id === DEPLOYMENT.id ? DEPLOYMENT : undefined),
      () => ids.filter((w) => live.has(w)),
      (states) => coordinator.broadcast({ kind: 'breakers', states }),
      schedule,
    ),
    appendLog: (row) => logged.push(row),
    behind: () => false,
    onError: () => undefined,
  });
  for (const w of ids) {
    // Worker → coordinator and back, each message cloned like postMessage does. A call nobody waits
    // for waits on the manual clock (advance), not on how soon the machine runs the next turn.
    const client = new CoordinatorClient(
      {
        postMessage: (m: WorkerMessage) => {
          sent.push({ worker: w, m });
          if (m.kind === 'calls') coordinator.handle(w, structuredClone(m.calls));
        },
      },
      schedule,
    );
    const mirror = new BreakerMirror(w, client, clock);
    coordinator.attach(w, {
      postMessage: (m: CoordinatorMessage) => {
        const c = structuredClone(m);
        if (c.kind === 'replies') client.receive(c);
        else if (c.kind === 'breakers') mirror.update(c.states);
      },
    });
    clients.set(w, client);
    mirrors.set(w, mirror);
  }
  t.teardown(() => (coordinator as unknown as { parts: { breakers: BreakerGrants } }).parts.breakers.close());
  return {
    slow,
    detach: (w: number) => {
      live.delete(w);
      return coordinator.detach(w);
    },
    advance,
    clock,
    store,
    wallets,
    health,
    coordinator,
    clients,
    mirrors,
    logged,
    sent,
    client: (w: number) => clients.get(w) as CoordinatorClient,
    mirror: (w: number) => mirrors.get(w) as BreakerMirror,
  };
}

t.test('holds from two workers never exceed the wallet, and settle exactly', async (t) => {
  const r = rig(t);
  r.store.wallets.credit('ws', 1_000n, 'test');
  r.wallets.refresh();
  const holds = await Promise.all(
    Array.from({ length: 30 }, (_, i) => r.client((i % 2) + 1).hold('ws', `trace-${i}`, 100n)),
  );
  t.equal(holds.filter((h) => h.ok).length, 10, 'exactly what the wallet covers');
  t.same(r.wallets.view('ws'), { balance: 1_000n, held: 1_000n, available: 0n });
  const settled = await Promise.all(
    holds.map((h, i) =>
      h.ok ? r.client((i % 2) + 1).settle(`trace-${i}`, 40n, { model: 'm' } as never) : Promise.resolve(null),
    ),
  );
  t.equal(settled.filter((s) => s === true).length, 10);
  t.same(r.wallets.view('ws'), { balance: 600n, held: 0n, available: 600n });
  t.equal(await r.client(1).settle('trace-0', 40n, { model: 'm' } as never), false, 'a second settlement is a no-op');
  t.same(r.store.wallets.verify(), { ok: true, problems: [] });
});

t.test('calls of one event-loop turn go as one message', async (t) => {
  const r = rig(t);
  r.sent.length = 0;
  const w = r.client(1);
  const answers = Promise.all([w.take('k', 10), w.take('k', 10), w.get('pin'), w.take('k', 10)]);
  w.touch('pin');
  await answers;
  t.equal(r.sent.filter((s) => s.worker === 1 && s.m.kind === 'calls').length, 1);
});

t.test('one rate-limit window across workers', async (t) => {
  const r = rig(t);
  const decisions = await Promise.all(Array.from({ length: 9 }, (_, i) => r.client((i % 2) + 1).take('key-1', 5)));
  t.equal(decisions.filter((d) => d.ok).length, 5);
  t.ok(decisions.filter((d) => !d.ok).every((d) => !d.ok && d.retryAfterSeconds >= 1 && d.retryAfterSeconds <= 60));
});

t.test('a hold gated on its rate decision: one message, and nothing held for a refused request', async (t) => {
  const r = rig(t);
  r.store.wallets.credit('ws', 1_000n, 'test');
  r.wallets.refresh();
  r.sent.length = 0;
  const w = r.client(1);
  // Three requests of a key allowed two a minute, each asking its rate decision and its hold in the
  // same turn, as the inference handler does when the limiter is the coordinator.
  const asked = [0, 1, 2].map((i) => {
    const decision = w.take('k', 2);
    return { decision, held: w.holdIfAllowed('ws', `gated-${i}`, 100n, decision) };
  });
  const decisions = await Promise.all(asked.map((a) => a.decision));
  const holds = await Promise.all(asked.map((a) => a.held));
  t.same(
    decisions.map((d) => d.ok),
    [true, true, false],
  );
  t.same(holds, [{ ok: true }, { ok: true }, null], 'the refused request held nothing');
  t.same(r.wallets.view('ws'), { balance: 1_000n, held: 200n, available: 800n });
  t.equal(r.sent.filter((s) => s.worker === 1 && s.m.kind === 'calls').length, 1, 'decisions and holds in one message');
  t.equal(r.coordinator.openHolds(1), 2);

  // A decision already sent (answered in an earlier message) is waited for, then the hold asked.
  const early = w.take('other', 1);
  await early;
  t.same(await w.holdIfAllowed('ws', 'late-ok', 100n, early), { ok: true });
  const refused = w.take('other', 1);
  await refused;
  t.equal(await w.holdIfAllowed('ws', 'late-refused', 100n, refused), null);
  t.same(r.wallets.view('ws'), { balance: 1_000n, held: 300n, available: 700n });
});

t.test('a pin set through one worker is read through the other', async (t) => {
  const r = rig(t);
  r.client(1).set('session', 'alpha/chat');
  t.equal(await r.client(2).get('session'), 'alpha/chat');
  r.client(2).drop('session');
  t.equal(await r.client(1).get('session'), null);
});

t.test('a worker that dies has its open holds released; its log rows were kept', async (t) => {
  const r = rig(t);
  r.store.wallets.credit('ws', 1_000n, 'test');
  r.wallets.refresh();
  t.same(await r.client(1).hold('ws', 'a', 300n), { ok: true });
  t.same(await r.client(2).hold('ws', 'b', 300n), { ok: true });
  r.sent.length = 0;
  r.client(1).appendLog({ trace_id: 'x' } as RequestLogRow);
  await tick();
  t.equal(r.logged.length, 0, 'a log row alone waits (TELL_WAIT_MS) for another call to ride with');
  r.client(1).appendLog({ trace_id: 'y' } as RequestLogRow);
  await tick();
  t.equal(r.logged.length, 0, 'nor does a second one start a message of its own');
  r.advance(TELL_WAIT_MS);
  t.same(
    r.logged.map((x) => x.trace_id),
    ['x', 'y'],
    'then both go, in one message',
  );
  t.equal(r.sent.filter((s) => s.worker === 1).length, 1);
  r.client(1).appendLog({ trace_id: 'z' } as RequestLogRow);
  t.same(await r.client(1).take('k', 5), { ok: true, remaining: 4 });
  t.same(
    r.logged.map((x) => x.trace_id),
    ['x', 'y', 'z'],
    'a call somebody waits for carries it at once',
  );
  t.equal(r.coordinator.detach(1), 1, 'one hold released');
  t.same(r.wallets.view('ws'), { balance: 1_000n, held: 300n, available: 700n });
  t.equal(r.coordinator.openHolds(2), 1, "the other worker's hold stays");
});

t.test('a failure is answered as a failure of that call only', async (t) => {
  const r = rig(t);
  r.store.wallets.credit('ws', 1_000n, 'test');
  r.wallets.refresh();
  const [a, b] = await Promise.allSettled([r.client(1).hold('ws', 'same', 1n), r.client(2).hold('ws', 'same', 1n)]);
  t.equal(a?.status, 'fulfilled');
  t.equal(b?.status, 'rejected', 'a duplicate trace is refused');
});

t.test('breakers: tripped by outcomes from both workers, the half-open probe granted to exactly one', async (t) => {
  const r = rig(t);
  r.mirror(1).record(DEPLOYMENT.id, { ok: false, reason: 'status_5xx' });
  r.mirror(2).record(DEPLOYMENT.id, { ok: false, reason: 'status_5xx' });
  await tick();
  t.equal(r.health.state(DEPLOYMENT.id).state, 'open', 'two failures from two workers trip the threshold of two');
  const now = r.clock.now();
  t.ok(r.mirror(1).isDown(DEPLOYMENT, now) && r.mirror(2).isDown(DEPLOYMENT, now), 'down on both');
  t.equal(r.mirror(2).state(DEPLOYMENT.id).state, 'open');
  // The cool-down ends: the coordinator's timer grants the probe.
  r.advance(HEALTH.cooldownMs);
  const later = r.clock.now();
  const answers = [1, 2, 1, 2].map((w) => r.mirror(w).isDown(DEPLOYMENT, later));
  t.equal(answers.filter((down) => !down).length, 1, 'exactly one caller gets the probe');
  t.ok(
    r.mirror(1).passive.isDown(DEPLOYMENT, later) && r.mirror(2).passive.isDown(DEPLOYMENT, later),
    'passive views never claim',
  );
  const prober = answers[0] === false ? 1 : 2;
  r.mirror(prober).record(DEPLOYMENT.id, { ok: true, firstByteMs: 10 });
  await tick();
  t.equal(r.health.state(DEPLOYMENT.id).state, 'closed', 'the probe closed it');
  t.notOk(r.mirror(1).isDown(DEPLOYMENT, later) || r.mirror(2).isDown(DEPLOYMENT, later), 'up on both');
});

t.test('breakers: a probe given back, or never claimed, goes to another worker', async (t) => {
  const r = rig(t);
  for (const w of [1, 2]) r.mirror(w).record(DEPLOYMENT.id, { ok: false, reason: 'connect' });
  await tick();
  r.advance(HEALTH.cooldownMs);
  const now = r.clock.now();
  const holder = [1, 2].find((w) => !r.mirror(w).isDown(DEPLOYMENT, now)) as number;
  t.ok(holder, 'one worker claimed it');
  r.mirror(holder).releaseProbe(DEPLOYMENT.id);
  await tick();
  const next = [1, 2].filter((w) => !r.mirror(w).isDown(DEPLOYMENT, now));
  t.equal(next.length, 1, 'granted again, to one worker');
  t.equal(r.detach(next[0] as number), 0);
  const other = next[0] === 1 ? 2 : 1;
  t.notOk(r.mirror(other).isDown(DEPLOYMENT, now), "a dead worker's grant moves to the live one");
});

t.test('breakers: a grant nobody claims within GRANT_MS moves to the next worker', async (t) => {
  const r = rig(t);
  for (const w of [1, 2]) r.mirror(w).record(DEPLOYMENT.id, { ok: false, reason: 'connect' });
  await tick();
  r.advance(HEALTH.cooldownMs);
  const first = [1, 2].filter((w) => r.mirror(w).hasGrant(DEPLOYMENT.id));
  t.equal(first.length, 1, 'granted to one worker');
  r.advance(1_000);
  const second = [1, 2].filter((w) => r.mirror(w).hasGrant(DEPLOYMENT.id));
  t.equal(second.length, 1, 'still one grant');
  t.not(second[0], first[0], 'unclaimed, it moved to the other worker');
  const now = r.clock.now();
  t.notOk(r.mirror(second[0] as number).isDown(DEPLOYMENT, now), 'that worker hands it out');
  await tick();
  r.advance(5_000);
  t.ok(
    [1, 2].every((w) => r.mirror(w).isDown(DEPLOYMENT, r.clock.now())),
    'a claimed probe is not granted again (down for every other caller)',
  );
});

t.test(
  'state that answers later (a fleet node): gated holds wait for their decision; a hold answered after its worker died is released',
  async (t) => {
    const r = rig(t, { later: true });
    const slow = r.slow as NonNullable<typeof r.slow>;
    r.store.wallets.credit('ws', 1_000n, 'test');
    r.wallets.refresh();
    const w = r.client(1);
    const asked = [0, 1, 2].map((i) => {
      const decision = w.take('k', 2);
      return { decision, held: w.holdIfAllowed('ws', `gated-${i}`, 100n, decision) };
    });
    const decisions = await Promise.all(asked.map((a) => a.decision));
    t.same(
      decisions.map((d) => d.ok),
      [true, true, false],
    );
    await tick();
    t.equal(slow.waitingHolds(), 2, 'only the two allowed requests asked for a hold');
    slow.answerHolds();
    t.same(await Promise.all(asked.map((a) => a.held)), [{ ok: true }, { ok: true }, null]);
    t.equal(r.coordinator.openHolds(1), 2);

    // Worker 2 asks for a hold; its thread ends before the wallet answers.
    const orphan = r.client(2).hold('ws', 'orphan', 300n);
    await tick();
    t.equal(slow.waitingHolds(), 1);
    r.detach(2);
    slow.answerHolds();
    await tick();
    await tick();
    t.same(
      r.wallets.view('ws'),
      { balance: 1_000n, held: 200n, available: 800n },
      'the late hold was released at once',
    );
    t.equal(r.coordinator.openHolds(2), 0);
    void orphan.catch(() => undefined);
  },
);

t.test('a success on a closed breaker rides with the next message; a failure goes this turn, after it', async (t) => {
  const r = rig(t);
  r.sent.length = 0;
  r.mirror(1).record(DEPLOYMENT.id, { ok: true, firstByteMs: 5 });
  await tick();
  t.equal(r.sent.length, 0, 'a success alone waits (TELL_WAIT_MS) for another call to ride with');
  r.mirror(1).record(DEPLOYMENT.id, { ok: false, reason: 'status_5xx' });
  await tick();
  t.equal(r.sent.length, 1, 'the failure goes at once');
  const m = r.sent[0]?.m;
  const outcomes = m?.kind === 'calls' ? m.calls.map((c) => (c.op === 'record' ? c.outcome.ok : null)) : [];
  t.same(outcomes, [true, false], 'in one message, in the order they happened');
});
