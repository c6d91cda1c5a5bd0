// Rate limits over HTTP: requests per minute per key (the key's own rpm, else its workspace's), in
// fixed windows aligned to the clock minute; over the limit a 429 `rate_limited` with Retry-After =
// whole seconds to the next minute (1..60), decided after authentication and before the body, the
// wallet hold or any provider call. Time moves only through the ManualClock.
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { expectGatewayError, spyWallet, USER, waitFor } from '../../helpers/admission.ts';

const CHAT = { model: 'acme/chat-small', messages: USER, max_tokens: 16, provider: { only: ['alpha'] } };
const at = (hms: string) => `2026-01-15T${hms}Z`;

async function ok(t: Test, s: Stack, key: string, label: string, body: unknown = CHAT): Promise<void> {
  const r = await s.post('/v1/chat/completions', body, { key });
  t.equal(r.status, 200, label);
  await r.arrayBuffer();
}

async function limited(
  t: Test,
  s: Stack,
  key: string,
  retryAfter: number,
  label: string,
  body: unknown = CHAT,
): Promise<void> {
  const r = await s.post('/v1/chat/completions', body, { key });
  const header = r.headers.get('retry-after');
  await expectGatewayError(t, r, 429, 'rate_limited', label);
  t.equal(header, String(retryAfter), `${label}: Retry-After ${retryAfter}`);
}

t.test('workspace limit, fixed clock-minute windows, Retry-After at :00.000, :30.500 and :59.999', async (t) => {
  const clock = new ManualClock(at('12:00:00.000'));
  const s = await startStack(t, { clock });
  s.credit('slow', '10');
  const key = s.key('slow');
  const w = spyWallet(s, ['slow']);
  for (let i = 1; i <= 3; i++) await ok(t, s, key, `request ${i} of 3`);
  const simBefore = s.sim.requests.length;
  const balance = s.store.wallets.show('slow', clock.now());
  const holdsBefore = w.holds.size;
  await limited(t, s, key, 60, 'at 12:00:00.000');
  clock.set(at('12:00:30.500'));
  await limited(t, s, key, 30, 'at 12:00:30.500');
  clock.set(at('12:00:59.999'));
  await limited(t, s, key, 1, 'at 12:00:59.999');
  // Refused requests cost nothing: no provider call, no hold, the wallet as it was.
  t.equal(s.sim.requests.length, simBefore, 'no provider was called');
  t.equal(w.holds.size, holdsBefore, 'no hold was taken');
  t.same(s.store.wallets.show('slow', clock.now()), balance, 'the wallet is unchanged');
  clock.set(at('12:01:00.000'));
  for (let i = 1; i <= 3; i++) await ok(t, s, key, `new window: request ${i}`);
  await limited(t, s, key, 60, 'new window full at 12:01:00.000');
  // The refusals were not counted: the next window admits three again.
  clock.set(at('12:02:59.000'));
  for (let i = 1; i <= 3; i++) await ok(t, s, key, `a later window: request ${i}`);
  await limited(t, s, key, 1, 'at 12:02:59.000');
  const log = () => {
    s.store.requestLog.flush();
    return s.store.requestLog.query({ workspace: 'slow', limit: 100 }).filter((r) => r.status === 429);
  };
  await waitFor(() => log().length === 5);
  t.equal(log().filter((r) => r.error_code === 'rate_limited').length, 5, 'each refusal is logged');
  t.equal(
    log().every((r) => r.cost_nano === null && r.attempts === 0 && r.key_id !== null),
    true,
    'with its key, no cost and no attempt',
  );
});

t.test('windows align to the clock minute, not to the first request', async (t) => {
  const clock = new ManualClock(at('12:00:59.000'));
  const s = await startStack(t, { clock });
  s.credit('slow', '10');
  const key = s.key('slow');
  for (let i = 1; i <= 3; i++) await ok(t, s, key, `request ${i} at 12:00:59`);
  await limited(t, s, key, 1, 'full one second before the minute');
  clock.set(at('12:01:00.000'));
  await ok(t, s, key, 'one second later a new window opens (not 60 s after the first request)');
});

t.test('the limit is per key: the key’s own rpm, else the workspace’s', async (t) => {
  const clock = new ManualClock(at('12:00:10.000'));
  const s = await startStack(t, { clock });
  s.credit('slow', '10');
  s.credit('open', '10');
  const a = s.key('slow');
  const b = s.key('slow');
  const generous = s.key('slow', { rpm: 5 });
  const strict = s.key('open', { rpm: 1 });
  for (let i = 1; i <= 3; i++) await ok(t, s, a, `key a ${i}`);
  await limited(t, s, a, 50, 'key a over the workspace limit (3)');
  for (let i = 1; i <= 3; i++) await ok(t, s, b, `key b ${i}: its own window`);
  await limited(t, s, b, 50, 'key b over the workspace limit');
  for (let i = 1; i <= 5; i++) await ok(t, s, generous, `key rpm 5 in a 3-rpm workspace: ${i}`);
  await limited(t, s, generous, 50, 'key rpm 5: the sixth');
  await ok(t, s, strict, 'key rpm 1 in a 100000-rpm workspace');
  await limited(t, s, strict, 50, 'key rpm 1: the second');
});

t.test('order: after authentication, before the body, before the wallet', async (t) => {
  const clock = new ManualClock(at('12:00:00.000'));
  const s = await startStack(t, { clock });
  const key = s.key('slow');
  const w = spyWallet(s, ['slow']);
  // No credit: the first three are admitted by the limiter and refused by the wallet…
  for (let i = 1; i <= 3; i++)
    await expectGatewayError(
      t,
      await s.post('/v1/chat/completions', CHAT, { key }),
      402,
      'insufficient_balance',
      `request ${i}: 402`,
    );
  // …the fourth never reaches the wallet.
  await limited(t, s, key, 60, 'the fourth: 429, not 402');
  await limited(t, s, key, 60, 'a bad body: 429, not 400', 'not json');
  await limited(t, s, key, 60, 'an unknown model: 429, not 404', { model: 'nobody/none', messages: USER });
  t.equal(w.holds.size, 3, 'only the three admitted requests asked for a hold');
  t.equal([...w.holds.values()].filter((h) => h.ok).length, 0, 'none was granted');
  // Authentication failures never consume the key's window, and keep their own 401.
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key: key.slice(0, -1) }),
    401,
    'invalid_api_key',
    'a malformed key',
  );
  clock.set(at('12:01:00.000'));
  s.credit('slow', '1');
  await ok(t, s, key, 'the next window, with money');
  t.equal(s.sim.requests.length, 1, 'only that one reached a provider');
});

t.test('concurrent requests: exactly the limit is admitted, streams count the same', async (t) => {
  const clock = new ManualClock(at('12:00:05.000'));
  const s = await startStack(t, { clock });
  s.credit('slow', '10');
  const key = s.key('slow');
  const bodies = Array.from({ length: 12 }, (_, i) => ({ ...CHAT, stream: i % 2 === 0 }));
  const answers = await Promise.all(bodies.map((b) => s.post('/v1/chat/completions', b, { key })));
  const statuses = answers.map((r) => r.status);
  await Promise.all(answers.map((r) => r.arrayBuffer()));
  t.equal(statuses.filter((x) => x === 200).length, 3, 'three admitted');
  t.equal(statuses.filter((x) => x === 429).length, 9, 'nine refused');
  t.ok(
    answers.filter((r) => r.status === 429).every((r) => r.headers.get('retry-after') === '55'),
    'every refusal says 55 s',
  );
  t.equal(s.sim.requests.length, 3, 'three provider calls');
});
