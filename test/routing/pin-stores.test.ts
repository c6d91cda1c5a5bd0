// The session-pin contract (test/helpers/pin-store-contract.ts) over every implementation the
// gateway runs with: the pins in process, serving threads' coordinator clients over one coordinator
// (`serve --workers N`), and Redis (a fleet node's nodes), alone and behind the fleet's fallback.
// Redis keeps a pin's time itself (PX, PEXPIRE): the test's clock there moves every pin's remaining
// lifetime (PTTL) forward in one script, as that much time passing on the server would.
import t, { type Test } from 'tap';
import { FixedWindowRateLimiter } from '../../src/admission/rate-limit.ts';
import { ManualClock } from '../../src/clock.ts';
import { SessionPins } from '../../src/routing/session-pins.ts';
import { RedisConnection } from '../../src/fleet/redis-connection.ts';
import { RedisPins } from '../../src/fleet/redis-pins.ts';
import { SharedPins, SharedStateHealth } from '../../src/fleet/shared-limits.ts';
import { coordinatorClients, memoryBook } from '../helpers/coordinator-rig.ts';
import { pinStoreContract } from '../helpers/pin-store-contract.ts';
import { type PrivateRedis, startPrivateRedis } from '../helpers/redis.ts';

const NOW = Date.UTC(2026, 0, 15, 12);

t.test('in process (bounded LRU in memory)', async (t) => {
  pinStoreContract(t, async () => {
    const clock = new ManualClock(NOW);
    const pins = new SessionPins({ clock, maxPins: 100 });
    return { pins, other: pins, advance: async (ms) => clock.advance(ms), slackMs: 0 };
  });
});

t.test('coordinator clients of two serving threads (serve --workers N)', async (t) => {
  pinStoreContract(t, async (t) => {
    const clock = new ManualClock(NOW);
    const { book } = memoryBook(t, clock);
    const [pins, other] = coordinatorClients(
      t,
      clock,
      { wallets: book, limiter: new FixedWindowRateLimiter(clock), pins: new SessionPins({ clock, maxPins: 100 }) },
      2,
    );
    if (!pins || !other) throw new Error('two clients');
    // A client sends the calls of one turn at its end (setImmediate): time moves once they are there,
    // as no real time passes between a call and its message.
    const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
    return {
      pins,
      other,
      advance: async (ms) => {
        await endOfTurn();
        clock.advance(ms);
      },
      slackMs: 0,
    };
  });
});

/** KEYS under ARGV[1] (a pattern); ARGV[2] ms: every pin's remaining lifetime that much shorter. */
const ADVANCE_SCRIPT = `
local ms = tonumber(ARGV[2])
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
  local left = redis.call('PTTL', k)
  if left >= 0 then
    if left <= ms then redis.call('DEL', k) else redis.call('PEXPIRE', k, left - ms) end
  end
end
return 0
`;

/** Real milliseconds a pin may lose between its set and the check on a loaded machine. */
const REDIS_SLACK_MS = 2_000;

t.test('Redis (fleet node)', async (t) => {
  let redis: PrivateRedis | null = null;
  let rig = 0;
  t.before(async () => {
    redis = await startPrivateRedis();
  });
  t.teardown(() => redis?.destroy());
  const connect = async (t: Test) => {
    // A long command timeout: a loaded machine must not send a call to the fallback mid-test.
    const conn = new RedisConnection((redis as PrivateRedis).url, { commandTimeoutMs: 5_000 });
    t.teardown(() => conn.close());
    if (!(await conn.start())) throw new Error('redis did not answer');
    return conn;
  };
  const advancer = (conn: RedisConnection, pattern: string) => async (ms: number) => {
    await conn.script(ADVANCE_SCRIPT, [], [pattern, String(ms)]);
  };
  t.test('the pins alone, two nodes', async (t) => {
    pinStoreContract(t, async (t) => {
      const prefix = `pi:pin:c${++rig}:`;
      const [a, b] = [await connect(t), await connect(t)];
      const wrap = (p: RedisPins) => ({
        get: (k: string) => p.get(k),
        touch: async (k: string) => void (await p.touch(k)),
        set: (k: string, d: string) => p.set(k, d),
        drop: (k: string) => p.drop(k),
        resize: () => undefined,
      });
      return {
        pins: wrap(new RedisPins(a, undefined, prefix)),
        other: wrap(new RedisPins(b, undefined, prefix)),
        advance: advancer(a, `${prefix}*`),
        slackMs: REDIS_SLACK_MS,
      };
    });
  });
  t.test('behind the fallback a fleet node uses, two nodes', async (t) => {
    pinStoreContract(t, async (t) => {
      const clock = new ManualClock(NOW);
      const [a, b] = [await connect(t), await connect(t)];
      // Each rig starts with no pins: Redis keeps the pins of the suite's earlier rigs.
      await a.command(['FLUSHDB']);
      const health = [new SharedStateHealth(a), new SharedStateHealth(b)];
      const pins = new SharedPins(health[0] as SharedStateHealth, { clock, maxPins: 100 });
      const other = new SharedPins(health[1] as SharedStateHealth, { clock, maxPins: 100 });
      // A call that fell back would use this node's own pins, on a clock `advance` does not move:
      // the lifetime checks would fail, as would the other node's view.
      return { pins, other, advance: advancer(a, 'pi:pin:*'), slackMs: REDIS_SLACK_MS };
    });
  });
});
