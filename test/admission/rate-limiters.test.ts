// The rate-limiter contract (test/helpers/rate-limiter-contract.ts) over every implementation the
// gateway runs with: the in-process fixed window, a serving thread's coordinator client over the
// coordinator (`serve --workers N`), the Redis limiter alone and behind the fleet's fallback, and a
// fleet node's serving thread falling back to the windows its node's threads share.
import t from 'tap';
import { FixedWindowRateLimiter } from '../../src/admission/rate-limit.ts';
import { ManualClock } from '../../src/clock.ts';
import { RedisConnection } from '../../src/fleet/redis-connection.ts';
import { RedisRateLimiter } from '../../src/fleet/redis-rate-limiter.ts';
import { SharedRateLimiter, SharedStateHealth } from '../../src/fleet/shared-limits.ts';
import { coordinatorClient, memoryBook, sharedAdmissionRig } from '../helpers/coordinator-rig.ts';
import { rateLimiterContract } from '../helpers/rate-limiter-contract.ts';
import { type PrivateRedis, startPrivateRedis } from '../helpers/redis.ts';

t.test('in process (fixed window in memory)', async (t) => {
  rateLimiterContract(t, async (_t, at) => {
    const clock = new ManualClock(at);
    return { limiter: new FixedWindowRateLimiter(clock), clock };
  });
});

t.test('coordinator client of a serving thread (serve --workers N)', async (t) => {
  rateLimiterContract(t, async (t, at) => {
    const clock = new ManualClock(at);
    const { book } = memoryBook(t, clock);
    return {
      limiter: coordinatorClient(t, clock, { wallets: book, limiter: new FixedWindowRateLimiter(clock) }),
      clock,
    };
  });
});

t.test('a serving thread’s windows in shared memory (serve --workers N on a database file)', async (t) => {
  rateLimiterContract(t, async (t, at) => {
    const clock = new ManualClock(at);
    const { book } = memoryBook(t, clock);
    return { limiter: sharedAdmissionRig(t, clock, book).worker(1).limiter, clock };
  });
});

t.test('a fleet node’s serving thread while Redis is away: the windows its threads share', async (t) => {
  rateLimiterContract(t, async (t, at) => {
    const clock = new ManualClock(at);
    const { book } = memoryBook(t, clock);
    // Nothing listens on port 1: every decision falls back, to the node's shared windows.
    const away = new RedisConnection('redis://127.0.0.1:1', { commandTimeoutMs: 50 });
    t.teardown(() => away.close());
    const local = sharedAdmissionRig(t, clock, book).worker(1).limiter;
    return { limiter: new SharedRateLimiter(new SharedStateHealth(away), clock, clock, local), clock };
  });
});

t.test('Redis (fleet node)', async (t) => {
  let redis: PrivateRedis | null = null;
  let rig = 0;
  t.before(async () => {
    redis = await startPrivateRedis();
  });
  t.teardown(() => redis?.destroy());
  const connect = async (t: Parameters<Parameters<typeof rateLimiterContract>[1]>[0]) => {
    // A long command timeout: a loaded machine must not send a call to the fallback mid-test.
    const conn = new RedisConnection((redis as PrivateRedis).url, { commandTimeoutMs: 5_000 });
    t.teardown(() => conn.close());
    if (!(await conn.start())) throw new Error('redis did not answer');
    return conn;
  };
  t.test('the limiter alone', async (t) => {
    rateLimiterContract(t, async (t, at) => {
      const clock = new ManualClock(at);
      return { limiter: new RedisRateLimiter(await connect(t), clock, `pi:rl:c${++rig}:`), clock };
    });
  });
  t.test('behind the fallback a fleet node uses', async (t) => {
    rateLimiterContract(t, async (t, at) => {
      const clock = new ManualClock(at);
      const conn = await connect(t);
      // Each rig counts in a window of its own: Redis keeps the counts of the suite's earlier rigs.
      await conn.command(['FLUSHDB']);
      return { limiter: new SharedRateLimiter(new SharedStateHealth(conn), clock, clock), clock };
    });
  });
});
