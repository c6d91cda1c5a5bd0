// The sign-in limiter on an injected clock: per-client locks after 10 failures in a minute, the
// global lock after 100 from all clients (guessing spread over many addresses), back-off doubling
// each lock that follows another up to 15 minutes, and a clean window or a success starting over.
import t from 'tap';
import { tokenBits, tokenStrengthProblem } from '../../src/admin/token-strength.ts';
import { ManualClock } from '../../src/clock.ts';
import { SignInLimiter } from '../../src/console/sign-in-limits.ts';

const limiter = () => {
  const clock = new ManualClock(1_000_000);
  return { clock, l: new SignInLimiter(() => clock.now()) };
};

t.test('one client: 10 failures lock it for a minute; locks in a row double up to 15 minutes', async (t) => {
  const { clock, l } = limiter();
  for (let i = 1; i < 10; i++) t.equal(l.failed('a'), false);
  t.equal(l.waitMs('a'), 0, 'nine failures: still free');
  t.equal(l.failed('a'), true, 'the tenth locks');
  t.equal(l.waitMs('a'), 60_000);
  t.equal(l.waitMs('b'), 0, 'another client is not locked');
  const locks: number[] = [];
  for (let round = 0; round < 6; round++) {
    clock.advance(l.waitMs('a'));
    for (let i = 0; i < 10; i++) l.failed('a');
    locks.push(l.waitMs('a') / 60_000);
  }
  t.same(locks, [2, 4, 8, 15, 15, 15], 'each lock right after another doubles, capped at 15 minutes');
  clock.advance(l.waitMs('a') + 60_000);
  for (let i = 0; i < 10; i++) l.failed('a');
  t.equal(l.waitMs('a'), 60_000, 'after a clean minute the back-off starts over');
  l.succeeded('a');
  t.equal(l.waitMs('a'), 0, 'a success clears the client');
});

t.test('failures spread over a minute count in fixed windows', async (t) => {
  const { clock, l } = limiter();
  for (let i = 0; i < 9; i++) l.failed('a');
  clock.advance(60_000);
  t.equal(l.failed('a'), false, 'a new window: the count starts over');
  t.equal(l.waitMs('a'), 0);
});

t.test('100 failures from many addresses lock everyone out', async (t) => {
  const { l } = limiter();
  for (let i = 0; i < 99; i++) t.equal(l.failed(`10.0.${Math.floor(i / 5)}.${i % 5}`), false);
  t.equal(l.waitMs('192.0.2.1'), 0, '99: a fresh client may still try');
  t.equal(l.failed('10.9.9.9'), true, 'the 100th locks everyone');
  t.equal(l.waitMs('192.0.2.1'), 60_000, 'a client that never failed waits too');
});

t.test('the operator token must carry 128 bits', async (t) => {
  for (const weak of ['a', 'changeme', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', '0123456789abcdef', 'Password123!'])
    t.match(tokenStrengthProblem(weak), /too easy to guess.*openssl rand -base64 32/, `refused: ${weak}`);
  for (const strong of [
    'k3J9x_Qm2Zp8Lw0VbN7cRt', // 22 base64url characters
    '9f86d081884c7d659a2feaa0c55ad015', // 32 hex digits
    'Y1xgPU6RjyVSkzLSSpR/JX9RpEJtt9ojmNRJJgOuEuU=', // openssl rand -base64 32
  ])
    t.equal(tokenStrengthProblem(strong), null, `accepted: ${strong.slice(0, 6)}…`);
  t.ok(tokenBits('9f86d081884c7d659a2feaa0c55ad015') >= 128);
});
