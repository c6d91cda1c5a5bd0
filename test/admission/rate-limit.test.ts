// Fixed clock-minute windows: alignment, limit, Retry-After bounds, reset, bounded memory.
import t from 'tap';
import { FixedWindowRateLimiter, retryAfterSeconds } from '../../src/admission/rate-limit.ts';
import { ManualClock } from '../../src/clock.ts';

const at = (hms: string) => Date.parse(`2026-01-15T${hms}Z`);

t.test('limit within one window, per key', async (t) => {
  const clock = new ManualClock(at('12:00:10.000'));
  const rl = new FixedWindowRateLimiter(clock);
  t.same(rl.take('k1', 3), { ok: true, remaining: 2 });
  t.same(rl.take('k1', 3), { ok: true, remaining: 1 });
  t.same(rl.take('k2', 3), { ok: true, remaining: 2 }, 'keys are independent');
  t.same(rl.take('k1', 3), { ok: true, remaining: 0 });
  clock.set(at('12:00:30.500'));
  t.same(rl.take('k1', 3), { ok: false, retryAfterSeconds: 30 });
  t.same(rl.take('k1', 3), { ok: false, retryAfterSeconds: 30 }, 'refusals are not counted against later windows');
  t.same(rl.take('k1', 4), { ok: true, remaining: 0 }, 'a raised limit applies at once');
});

t.test('windows align to the clock minute, not to the first request', async (t) => {
  const clock = new ManualClock(at('12:00:59.000'));
  const rl = new FixedWindowRateLimiter(clock);
  t.equal(rl.take('k', 2).ok, true);
  t.equal(rl.take('k', 2).ok, true);
  clock.set(at('12:00:59.999'));
  t.same(rl.take('k', 2), { ok: false, retryAfterSeconds: 1 });
  clock.set(at('12:01:00.000'));
  t.same(rl.take('k', 2), { ok: true, remaining: 1 }, 'one millisecond later a new window starts');
  clock.set(at('12:03:20.000'));
  t.same(rl.take('k', 2), { ok: true, remaining: 1 }, 'a later window resets too');
});

t.test('Retry-After is whole seconds to the next minute, 1..60', async (t) => {
  const table: [string, number][] = [
    ['12:00:00.000', 60],
    ['12:00:00.001', 60],
    ['12:00:00.999', 60],
    ['12:00:01.000', 59],
    ['12:00:30.500', 30],
    ['12:00:59.000', 1],
    ['12:00:59.001', 1],
    ['12:00:59.999', 1],
  ];
  for (const [time, want] of table) {
    t.equal(retryAfterSeconds(at(time)), want, time);
    const rl = new FixedWindowRateLimiter(new ManualClock(at(time)));
    t.same(rl.take('k', 0), { ok: false, retryAfterSeconds: want }, `${time} via take`);
  }
  for (let ms = 0; ms < 60_000; ms += 7) {
    const r = retryAfterSeconds(at('12:00:00.000') + ms);
    if (r < 1 || r > 60 || !Number.isInteger(r)) t.fail(`out of range at +${ms}ms: ${r}`);
  }
});

t.test('non-positive limits refuse; memory holds only the current window', async (t) => {
  const clock = new ManualClock(at('12:00:00.000'));
  const rl = new FixedWindowRateLimiter(clock);
  t.equal(rl.take('k', 0).ok, false);
  t.equal(rl.take('k', -5).ok, false);
  t.equal(rl.take('k', Number.NaN).ok, false);
  for (let i = 0; i < 1000; i++) rl.take(`key-${i}`, 10);
  t.equal(rl.size(), 1000);
  clock.advance(60_000);
  rl.take('fresh', 10);
  t.equal(rl.size(), 1, 'past windows dropped');
});
