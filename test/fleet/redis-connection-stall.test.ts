// RedisConnection leaving its stalled mode (one command at a time tries a Redis that holds the
// connection open without answering): once Redis answers again — the probe answered, the probe's
// reply a script error, or the connection dropped and made again — every command goes to Redis
// again, none left failing fast; and a close while the probe waits ends it.
import t, { type Test } from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RedisConnection, RedisUnavailableError } from '../../src/fleet/redis-connection.ts';
import { connectionThroughProxy, within } from '../helpers/stallable-redis.ts';

/** A connection through the proxy, stalled: its last command timed out on the open connection. */
async function stalledConnection(t: Test) {
  const { conn, proxy } = await connectionThroughProxy(t);
  proxy.freeze();
  t.type(await within(conn.command(['PING']), 3_000), RedisUnavailableError, 'a command times out');
  return { conn, proxy };
}

/** How twenty commands at once settle: all must reach Redis once it answers. */
async function twenty(conn: RedisConnection): Promise<string[]> {
  return Promise.all(
    Array.from({ length: 20 }, () =>
      conn.command(['PING']).then(
        (r) => String(r),
        (err: unknown) => (err instanceof Error ? err.message : String(err)),
      ),
    ),
  );
}

const PONGS = Array.from({ length: 20 }, () => 'PONG');

t.test('Redis answers again: the probe gets through and then every command does', async (t) => {
  const { conn, proxy } = await stalledConnection(t);
  proxy.thaw();
  t.same(await conn.command(['PING']), 'PONG', 'the probe is answered');
  t.ok(conn.up, 'up again');
  t.same(await twenty(conn), PONGS, 'no command fails fast any more');
});

t.test('the probe’s reply is a script error: an answer, so the connection is not stalled', async (t) => {
  const { conn, proxy } = await stalledConnection(t);
  proxy.thaw();
  await conn.command(['SET', 'text', 'abc']);
  await conn.command(['PING']);
  proxy.freeze();
  t.type(await within(conn.command(['PING']), 3_000), RedisUnavailableError, 'stalled again');
  proxy.thaw();
  const err = await within(conn.command(['INCR', 'text']), 3_000);
  t.ok(err instanceof Error && !(err instanceof RedisUnavailableError), `the script error comes back (${String(err)})`);
  t.same(await twenty(conn), PONGS, 'no command fails fast after it');
});

t.test('the connection dropped while stalled and made again: commands go to Redis again', async (t) => {
  const { conn, proxy } = await stalledConnection(t);
  proxy.cut();
  proxy.thaw();
  // The client reconnects by itself (50 ms, then more); bounded. No command meanwhile: the new
  // connection alone must end the stalled mode (its first command is not a probe).
  const deadline = Date.now() + 5_000;
  while (!conn.up && Date.now() < deadline) await sleep(20);
  t.ok(conn.up, 'connected again');
  t.same(await twenty(conn), PONGS, 'no command fails fast after it');
});

t.test('close() while the probe waits: the probe ends, nothing waits for ever', async (t) => {
  const { conn } = await stalledConnection(t);
  const probe = conn.command(['PING']);
  const fast = await within(conn.command(['PING']), 1_000);
  t.ok(fast instanceof RedisUnavailableError && /one command at a time/.test(fast.message), 'a second one fails fast');
  t.equal(await within(conn.close(), 1_000), 'resolved', 'close() returns');
  t.type(await within(probe, 1_000), RedisUnavailableError, 'the probe ends with the connection');
});
