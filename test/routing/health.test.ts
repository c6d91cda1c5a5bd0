// The per-deployment circuit breaker with a manual clock: trips, cool-down, the single half-open
// probe, doubling cool-down with its cap, and declared `status: down`.
import t from 'tap';
import { ManualClock } from '../../src/clock.ts';
import type { GatewaySettings } from '../../src/config/compiled.ts';
import { HealthTracker, type Outcome } from '../../src/routing/health.ts';
import { HEALTH, NOW, deployment } from './fixtures.ts';

const FAIL: Outcome = { ok: false, reason: 'status_5xx' };
const OK: Outcome = { ok: true, firstByteMs: 200 };
const d = deployment('d1', 'acme/chat', 'p1');

function setup(over: Partial<GatewaySettings['health']> = {}, opts: { probeLeaseMs?: number } = {}) {
  const clock = new ManualClock(NOW);
  const h = new HealthTracker({ ...HEALTH, ...over }, clock, opts);
  const down = () => h.isDown(d, clock.now());
  const feed = (...outcomes: Outcome[]) => {
    for (const o of outcomes) h.record(d.id, o);
  };
  return { clock, h, down, feed };
}

t.test('trips on consecutive failures', async (t) => {
  const { h, down, feed, clock } = setup();
  feed(FAIL, FAIL, FAIL, FAIL);
  t.equal(down(), false, '4 in a row: still closed');
  t.same(h.state(d.id), { state: 'closed', consecutiveFailures: 4, errorRate: 1, openUntil: null });
  feed(FAIL);
  t.equal(down(), true, '5 in a row: open');
  t.same(h.state(d.id), { state: 'open', consecutiveFailures: 5, errorRate: 1, openUntil: clock.now() + 30_000 });
});

t.test('a success breaks the run', async (t) => {
  const { down, feed, h } = setup();
  feed(FAIL, FAIL, FAIL, FAIL, OK, FAIL, FAIL, FAIL, FAIL);
  t.equal(down(), false);
  t.equal(h.state(d.id).consecutiveFailures, 4);
});

t.test('trips on the window error rate, not before minRequests', async (t) => {
  const { down, feed, h } = setup({ consecutiveFailures: 100 });
  feed(FAIL, OK, FAIL, OK, FAIL, OK, FAIL, FAIL, FAIL);
  t.equal(h.state(d.id).errorRate, 6 / 9);
  t.equal(down(), false, '9 outcomes at 67% failures: below minRequests, closed');
  feed(OK);
  t.equal(down(), true, '10 outcomes at 60% ≥ 50%: open (the outcome that reaches minRequests may be a success)');
});

t.test('error rate below the threshold, and the window slides', async (t) => {
  const { down, feed, h } = setup({ consecutiveFailures: 100, window: 10, minRequests: 10 });
  for (let i = 0; i < 10; i++) feed(FAIL, OK, OK); // 1/3 failures
  t.equal(down(), false);
  t.equal(h.state(d.id).errorRate, 0.3, 'only the last 10 outcomes count');
  const s = setup({ consecutiveFailures: 100, window: 10, minRequests: 10 });
  s.feed(FAIL, FAIL, FAIL, FAIL, OK, OK, OK, OK, OK, OK, OK, OK, OK, OK); // old failures slid out
  s.feed(FAIL, FAIL, FAIL, FAIL);
  t.equal(s.h.state(d.id).errorRate, 0.4);
  t.equal(s.down(), false);
  s.feed(FAIL);
  t.equal(s.down(), true, '5 of the last 10');
});

t.test('a slow first byte counts as a failure for health', async (t) => {
  const { down, feed, h } = setup();
  const slow: Outcome = { ok: true, firstByteMs: 30_001 };
  const edge: Outcome = { ok: true, firstByteMs: 30_000 };
  feed(slow, slow, slow, slow, edge);
  t.equal(h.state(d.id).consecutiveFailures, 0, 'exactly slowFirstByteMs is not slow');
  feed(slow, slow, slow, slow);
  t.equal(down(), false);
  feed(slow);
  t.equal(down(), true);
  for (const reason of ['connect', 'timeout', 'reset', 'status_429', 'auth', 'malformed', 'inband_error'] as const) {
    const s = setup({ consecutiveFailures: 1 });
    s.feed({ ok: false, reason });
    t.equal(s.down(), true, `${reason} is a failure`);
  }
});

t.test('cool-down, then exactly one half-open probe', async (t) => {
  const { clock, h, down, feed } = setup();
  feed(FAIL, FAIL, FAIL, FAIL, FAIL);
  const until = clock.now() + 30_000;
  clock.advance(30_000 - 1);
  t.equal(down(), true, 'still cooling down');
  t.equal(h.state(d.id).state, 'open');
  clock.advance(1);
  t.equal(h.state(d.id).state, 'half_open');
  t.equal(down(), false, 'the first caller after the cool-down gets the probe');
  t.equal(down(), true, 'everyone else still sees it down');
  t.equal(down(), true);
  t.same(h.state(d.id), { state: 'half_open', consecutiveFailures: 5, errorRate: 1, openUntil: until });
});

t.test('probe success closes the breaker and resets counters', async (t) => {
  const { clock, h, down, feed } = setup();
  feed(FAIL, FAIL, FAIL, FAIL, FAIL);
  clock.advance(30_000);
  t.equal(down(), false);
  feed(OK);
  t.same(h.state(d.id), { state: 'closed', consecutiveFailures: 0, errorRate: 0, openUntil: null });
  t.equal(down(), false);
  t.equal(down(), false, 'closed: everyone may use it');
  feed(FAIL, FAIL, FAIL, FAIL, FAIL);
  t.equal(h.state(d.id).openUntil, clock.now() + 30_000, 'a later trip starts again at the base cool-down');
});

t.test('probe failure reopens with the cool-down doubled, capped', async (t) => {
  const { clock, h, down, feed } = setup();
  feed(FAIL, FAIL, FAIL, FAIL, FAIL);
  const seen: number[] = [];
  let cooldown = 30_000;
  for (let i = 0; i < 6; i++) {
    clock.advance(cooldown);
    t.equal(down(), false, `probe ${i + 1} let through`);
    feed(FAIL);
    const s = h.state(d.id);
    t.equal(s.state, 'open');
    cooldown = (s.openUntil as number) - clock.now();
    seen.push(cooldown);
    t.equal(down(), true);
  }
  t.same(seen, [60_000, 120_000, 240_000, 300_000, 300_000, 300_000]);
  clock.advance(300_000);
  t.equal(down(), false);
  feed(OK);
  t.equal(h.state(d.id).state, 'closed');
  feed(FAIL, FAIL, FAIL, FAIL, FAIL);
  t.equal((h.state(d.id).openUntil as number) - clock.now(), 30_000, 'success reset the cool-down');
});

t.test('outcomes recorded while open (in-flight stragglers) change nothing', async (t) => {
  const { clock, h, feed, down } = setup();
  feed(FAIL, FAIL, FAIL, FAIL, FAIL);
  const before = h.state(d.id);
  feed(OK, OK, FAIL);
  t.same(h.state(d.id), before);
  clock.advance(30_000);
  t.equal(down(), false);
});

t.test('"in a row" follows when attempts ended, not when their outcomes were recorded', async (t) => {
  const { clock, h, down } = setup({ errorRate: 1 });
  const t0 = clock.now();
  // Failures that ended at t0+1…t0+4, then a success that ended at t0 recorded late (another
  // thread's message): it ended before them, so the run stands.
  for (let i = 1; i <= 4; i++) h.record(d.id, FAIL, t0 + i);
  h.record(d.id, OK, t0);
  t.equal(h.state(d.id).consecutiveFailures, 4, 'the late success did not break the run');
  h.record(d.id, FAIL, t0 + 5);
  t.equal(down(), true, 'the fifth failure in a row opens it');

  const other = setup({ errorRate: 1 });
  const t1 = other.clock.now();
  for (let i = 1; i <= 3; i++) other.h.record(d.id, FAIL, t1 + i);
  other.h.record(d.id, OK, t1 + 10);
  // Failures that ended before that success, recorded after it, are not part of a run.
  other.h.record(d.id, FAIL, t1 + 4);
  other.h.record(d.id, FAIL, t1 + 9);
  t.equal(other.h.state(d.id).consecutiveFailures, 0, 'failures that ended before the success');
  other.h.record(d.id, FAIL, t1 + 10);
  t.equal(other.h.state(d.id).consecutiveFailures, 1, 'the same millisecond, recorded after it: after it');
  // A success that ended between two failures of the run breaks it there.
  for (let i = 20; i < 23; i++) other.h.record(d.id, FAIL, t1 + i);
  other.h.record(d.id, OK, t1 + 21);
  t.equal(other.h.state(d.id).consecutiveFailures, 1, 'only the failure after it remains');
  t.equal(other.down(), false);
});

t.test('an outcome that ended while open, recorded after the cool-down, does not settle the probe', async (t) => {
  const { clock, h, feed, down } = setup();
  feed(FAIL, FAIL, FAIL, FAIL, FAIL);
  const openedAt = clock.now();
  clock.advance(30_000);
  h.record(d.id, OK, openedAt + 10);
  t.equal(h.state(d.id).state, 'half_open', 'still waiting for its probe');
  t.equal(down(), false, 'the probe is still to be claimed');
  h.record(d.id, OK);
  t.equal(h.state(d.id).state, 'closed', "the probe's own success closes it");
  h.record(d.id, FAIL, clock.now() - 1);
  t.equal(h.state(d.id).consecutiveFailures, 0, 'a failure that ended before the probe succeeded starts no run');
});

t.test('an unused probe claim lapses after the lease', async (t) => {
  const { clock, down, feed } = setup({}, { probeLeaseMs: 10_000 });
  feed(FAIL, FAIL, FAIL, FAIL, FAIL);
  clock.advance(30_000);
  t.equal(down(), false, 'claimed');
  clock.advance(9_999);
  t.equal(down(), true, 'claim still held');
  clock.advance(1);
  t.equal(down(), false, 'claim lapsed: the next caller probes');
  t.equal(down(), true);
});

t.test('declared status down is always down and never probes', async (t) => {
  const { clock, h } = setup();
  const off = deployment('off', 'acme/chat', 'p1', { status: 'down' });
  t.equal(h.isDown(off, clock.now()), true, 'with no outcomes at all');
  h.record(off.id, OK);
  t.equal(h.isDown(off, clock.now()), true, 'after a success');
  for (let i = 0; i < 5; i++) h.record(off.id, FAIL);
  clock.advance(30_000);
  t.equal(h.isDown(off, clock.now()), true, 'no probe for a declared-down deployment');
  t.equal(h.passive.isDown(off, clock.now()), true);
});

t.test('passive view never claims the probe', async (t) => {
  const { clock, h, down, feed } = setup();
  t.equal(h.passive.isDown(d, clock.now()), false);
  feed(FAIL, FAIL, FAIL, FAIL, FAIL);
  clock.advance(30_000);
  t.equal(h.passive.isDown(d, clock.now()), true, 'half-open counts as down');
  t.equal(h.passive.isDown(d, clock.now()), true);
  t.equal(down(), false, 'the router still gets the probe');
});

t.test('deployments are independent; snapshot lists every tracked one', async (t) => {
  const { clock, h } = setup();
  const other = deployment('d2', 'acme/chat', 'p1');
  for (let i = 0; i < 5; i++) h.record('d1', FAIL);
  h.record('d2', OK);
  t.equal(h.isDown(d, clock.now()), true);
  t.equal(h.isDown(other, clock.now()), false);
  t.same(h.state('unknown'), { state: 'closed', consecutiveFailures: 0, errorRate: 0, openUntil: null });
  t.same(h.snapshot(), {
    d1: { state: 'open', consecutiveFailures: 5, errorRate: 1, openUntil: clock.now() + 30_000 },
    d2: { state: 'closed', consecutiveFailures: 0, errorRate: 0, openUntil: null },
  });
});
