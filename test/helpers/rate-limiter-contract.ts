// What every rate limiter promises the admission path, whichever way the gateway runs: the
// in-process fixed window, a serving thread's coordinator client (`serve --workers N`) and the
// Redis limiter of a fleet node. One suite, run once per implementation
// (test/admission/rate-limiters.test.ts).
import type { Test } from 'tap';
import type { RateDecision, RateLimiter } from '../../src/admission/rate-limit.ts';
import type { ManualClock } from '../../src/clock.ts';

/** One implementation whose windows follow `clock`; every rig starts with no key counted. */
export interface LimiterRig {
  limiter: RateLimiter;
  clock: ManualClock;
}

type Make = (t: Test, startAt: number) => Promise<LimiterRig>;

/** 12:00:15.500 on some day: 44.5 s to the next minute. */
const MID_MINUTE = Date.UTC(2026, 0, 1, 12, 0, 15, 500);

const take = async (r: LimiterRig, key: string, limit: number): Promise<RateDecision> =>
  await r.limiter.take(key, limit);

export function rateLimiterContract(t: Test, make: Make): void {
  t.test('counts down to the limit; refusals say when the minute ends and are not counted', async (t) => {
    const r = await make(t, MID_MINUTE);
    t.same(await take(r, 'k', 3), { ok: true, remaining: 2 });
    t.same(await take(r, 'k', 3), { ok: true, remaining: 1 });
    t.same(await take(r, 'k', 3), { ok: true, remaining: 0 });
    t.same(await take(r, 'k', 3), { ok: false, retryAfterSeconds: 45 }, '44.5 s to the next minute, rounded up');
    t.same(await take(r, 'k', 4), { ok: true, remaining: 0 }, 'a refusal used nothing: a higher limit has one left');
  });

  t.test('keys are counted apart', async (t) => {
    const r = await make(t, MID_MINUTE);
    t.same(await take(r, 'a', 1), { ok: true, remaining: 0 });
    t.same(await take(r, 'b', 1), { ok: true, remaining: 0 });
    t.equal((await take(r, 'a', 1)).ok, false);
  });

  t.test('the next clock minute is a new window', async (t) => {
    const r = await make(t, MID_MINUTE);
    t.same(await take(r, 'k', 1), { ok: true, remaining: 0 });
    r.clock.advance(44_499);
    t.same(await take(r, 'k', 1), { ok: false, retryAfterSeconds: 1 }, 'one millisecond before it');
    r.clock.advance(1);
    t.same(await take(r, 'k', 1), { ok: true, remaining: 0 }, 'at its first millisecond');
  });

  t.test('a limit that is not a positive number refuses everything', async (t) => {
    const r = await make(t, MID_MINUTE);
    for (const limit of [0, -5, Number.NaN]) t.equal((await take(r, `k${limit}`, limit)).ok, false, `limit ${limit}`);
    t.same(await take(r, 'frac', 1.9), { ok: true, remaining: 0 }, 'a fractional limit counts whole requests');
    t.equal((await take(r, 'frac', 1.9)).ok, false);
  });

  t.test('concurrent requests: exactly the limit is admitted, each seeing its own count', async (t) => {
    const r = await make(t, MID_MINUTE);
    const decisions = await Promise.all(Array.from({ length: 60 }, () => take(r, 'burst', 25)));
    const remaining = decisions.flatMap((d) => (d.ok ? [d.remaining] : [])).sort((a, b) => a - b);
    t.same(
      remaining,
      Array.from({ length: 25 }, (_, i) => i),
    );
  });
}
