// Rate limits and session pins on a private redis-server (test/helpers/redis.ts): the limit exact
// across three connections ("nodes") in one atomic script, Retry-After from the window's end, pins
// shared with the sliding lifetime — and Redis stopped mid-test: every node falls back to its own
// limiter and pins (logged once), and returns to Redis by itself when it is back.
import t, { type Test } from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock } from '../../src/clock.ts';
import { RedisConnection } from '../../src/fleet/redis-connection.ts';
import { RedisPins } from '../../src/fleet/redis-pins.ts';
import { SharedPins, SharedRateLimiter, SharedStateHealth } from '../../src/fleet/shared-limits.ts';
import { startPrivateRedis, type PrivateRedis } from '../helpers/redis.ts';

let redis: PrivateRedis;
t.before(async () => {
  redis = await startPrivateRedis();
});
t.teardown(() => redis.destroy());

async function node(t: Test, clock: ManualClock, events: string[] = [], commandTimeoutMs = 5_000) {
  // A long command timeout: on a loaded CI machine the default 250 ms can expire and send a node to
  // its local fallback, which the exactness assertions would then count (the fallback test shortens it).
  const conn = new RedisConnection(redis.url, {
    commandTimeoutMs,
    onStatus: (up, detail) => events.push(`${up ? 'up' : 'down'}: ${detail}`),
  });
  t.teardown(() => conn.close());
  t.equal(await conn.start(), true, 'connected');
  const health = new SharedStateHealth(conn);
  return {
    conn,
    health,
    limiter: new SharedRateLimiter(health, clock, clock),
    pins: new SharedPins(health, { clock, maxPins: 100, ttlMs: 60_000 }),
  };
}

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

t.test('--rpm 50 from three nodes: exactly 50 admitted, the rest told when the window ends', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12, 0, 15, 500));
  const nodes = await Promise.all([node(t, clock), node(t, clock), node(t, clock)]);
  const decisions = await Promise.all(
    Array.from({ length: 150 }, (_, i) => (nodes[i % 3] as (typeof nodes)[0]).limiter.take('key_a', 50)),
  );
  const ok = decisions.filter((d) => d.ok);
  t.equal(ok.length, 50, 'exactly the limit, across nodes');
  t.same(
    new Set(decisions.filter((d) => !d.ok).map((d) => (d.ok ? 0 : d.retryAfterSeconds))),
    new Set([45]),
    '44.5 s to the next minute, rounded up',
  );
  t.same(
    ok.map((d) => (d.ok ? d.remaining : -1)).sort((a, b) => a - b),
    Array.from({ length: 50 }, (_, i) => i),
    'each admission saw its own count (atomic)',
  );
  t.match(await nodes[0]?.limiter.take('key_b', 50), { ok: true }, 'keys are separate');
  clock.advance(44_500);
  t.match(await nodes[1]?.limiter.take('key_a', 50), { ok: true, remaining: 49 }, 'the next minute is a new window');
  t.match(await nodes[2]?.limiter.take('key_a', 0), { ok: false }, 'a zero limit refuses everything');
  const keys = (await nodes[0]?.conn.command(['KEYS', 'pi:rl:key_a*'])) as string[];
  t.same(keys, ['pi:rl:key_a'], 'one key per API key, the next minute counted in it');
  t.equal(
    await nodes[0]?.conn.command(['GET', 'pi:rl:key_a']),
    `${Math.floor(clock.now() / 60_000)}:1`,
    'the minute and its count',
  );
  t.equal(Number(await nodes[0]?.conn.command(['PTTL', 'pi:rl:key_a'])), -1, 'never expires (never evicted)');
});

t.test('the window comes from Redis’s clock when no clock is given', async (t) => {
  const conn = new RedisConnection(redis.url);
  t.teardown(() => conn.close());
  await conn.start();
  const limiter = new SharedRateLimiter(new SharedStateHealth(conn), new ManualClock(0), null);
  t.match(await limiter.take('key_time', 1), { ok: true });
  const refused = await limiter.take('key_time', 1);
  t.equal(refused.ok, false);
  if (!refused.ok) t.ok(refused.retryAfterSeconds >= 1 && refused.retryAfterSeconds <= 60);
});

t.test('pins: set on one node, honoured on the others; touch slides the lifetime, get does not', async (t) => {
  const clock = new ManualClock(0);
  const [a, b, c] = await Promise.all([node(t, clock), node(t, clock), node(t, clock)]);
  if (!a || !b || !c) throw new Error('nodes');
  await a.pins.set('pin-1', 'deployment-x');
  t.equal(await b.pins.get('pin-1'), 'deployment-x');
  t.equal(await c.pins.get('pin-1'), 'deployment-x');
  const rk = (await import('../../src/fleet/redis-pins.ts')).RedisPins.prototype.redisKey.call(
    { prefix: 'pi:pin:' },
    'pin-1',
  );
  await a.conn.command(['PEXPIRE', rk, '5000']);
  await b.pins.get('pin-1');
  t.ok(Number(await a.conn.command(['PTTL', rk])) <= 5000, 'get does not extend the lifetime');
  await c.pins.touch('pin-1');
  t.ok(Number(await a.conn.command(['PTTL', rk])) > 55_000, 'touch restarts the lifetime');
  await b.pins.drop('pin-1');
  t.equal(await a.pins.get('pin-1'), null);
  await a.pins.touch('absent');
  t.equal(await a.pins.get('absent'), null, 'touch never creates a pin');
});

t.test('Redis stopped mid-test: local fallback with one warning, back to Redis by itself', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12, 0, 0));
  const events: string[] = [];
  const n = await node(t, clock, events, 250);
  t.match(await n.limiter.take('key_down', 2), { ok: true });
  await redis.stop();
  const during = await Promise.all([
    n.limiter.take('key_down', 2),
    n.limiter.take('key_down', 2),
    n.limiter.take('key_down', 2),
  ]);
  t.same(
    during.map((d) => d.ok),
    [true, true, false],
    'the local limiter applies the full limit on this node (the Redis count is not carried over)',
  );
  t.equal(n.health.fallbacks.rateLimit, 3);
  t.equal(n.health.redisUp, false);
  await n.pins.set('p', 'd1');
  t.equal(await n.pins.get('p'), 'd1', 'pins fall back to this node');
  t.equal(events.filter((e) => e.startsWith('down')).length, 1, `one warning for the outage: ${events.join(' | ')}`);
  await redis.start();
  await until(() => n.health.redisUp, 'the node to reconnect');
  const fallbacks = n.health.fallbacks.rateLimit;
  t.match(
    await n.limiter.take('key_down', 2),
    { ok: true, remaining: 1 },
    'counted in Redis again (this Redis keeps no data across a restart: the window starts afresh)',
  );
  t.equal(n.health.fallbacks.rateLimit, fallbacks, 'no more fallbacks');
  t.match(events.at(-1), /^up/);
});

t.test('Redis at its maxmemory: one tenant’s flood of session pins never evicts a rate-limit window', async (t) => {
  // Its own server: the flood fills it to the bound set here.
  const own = await startPrivateRedis();
  t.teardown(() => own.destroy());
  const conn = new RedisConnection(own.url, { commandTimeoutMs: 5_000 });
  t.teardown(() => conn.close());
  t.equal(await conn.start(), true, 'connected');
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12, 0, 15, 500));
  const limiter = new SharedRateLimiter(new SharedStateHealth(conn), clock, clock);
  const pins = new RedisPins(conn);
  let flood = 0;
  // docs/fleet.md sets volatile-ttl (every pin expires); the others that evict only expiring keys too.
  for (const policy of ['volatile-ttl', 'volatile-lru', 'volatile-lfu', 'volatile-random']) {
    await conn.command(['FLUSHALL']);
    await conn.command(['CONFIG', 'SET', 'maxmemory', '0']);
    await conn.command(['CONFIG', 'SET', 'maxmemory-policy', policy]);
    await conn.command(['CONFIG', 'RESETSTAT']);
    for (let i = 0; i < 3; i++)
      t.match(await limiter.take('key_b', 3), { ok: true }, `${policy}: key_b's request ${i}`);
    const info = String(await conn.command(['INFO', 'memory']));
    const used = Number(/used_memory:(\d+)/.exec(info)?.[1]);
    await conn.command(['CONFIG', 'SET', 'maxmemory', String(used + 512 * 1024)]);
    // Another tenant's requests, each with a session id of its own: a pin each, for an hour.
    for (let batch = 0; batch < 20; batch++)
      await Promise.all(Array.from({ length: 500 }, () => pins.set(`["other","key_a","m","s${++flood}"]`, 'd')));
    const stats = String(await conn.command(['INFO', 'stats']));
    t.ok(Number(/evicted_keys:(\d+)/.exec(stats)?.[1]) > 0, `${policy}: the flood reached the bound (pins evicted)`);
    t.match(await limiter.take('key_b', 3), { ok: false }, `${policy}: key_b's fourth request is still refused`);
  }
});
