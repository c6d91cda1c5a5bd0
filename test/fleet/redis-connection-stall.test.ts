// RedisConnection leaving its stalled mode (one command at a time tries a Redis that holds the
// connection open without answering): once Redis answers again — the probe answered, the probe's
// reply a script error, or the connection dropped and made again — every command goes to Redis
// again, none left failing fast; and a close while the probe waits ends it.
import t, { type Test } from 'tap';
import { createServer, connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisConnection, RedisUnavailableError } from '../../src/fleet/redis-connection.ts';
import { startPrivateRedis } from '../helpers/redis.ts';

/**
 * A TCP proxy to `port`. `freeze()` holds every byte (as a stopped Redis leaves them in the socket
 * buffers, connections open); `thaw()` delivers what it held, in order, and forwards again;
 * `cut()` closes the connections it carries (new ones go through).
 */
async function stallableProxy(port: number) {
  let frozen = false;
  const held: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    const pass = (to: Socket) => (b: Buffer) => {
      if (frozen) held.push(() => to.write(b));
      else to.write(b);
    };
    client.on('data', pass(upstream));
    upstream.on('data', pass(client));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    url: `redis://127.0.0.1:${address.port}`,
    freeze: () => (frozen = true),
    thaw: () => {
      frozen = false;
      for (const write of held.splice(0)) write();
    },
    cut: () => {
      held.length = 0;
      for (const s of sockets) s.destroy();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** What `p` settled to within `ms` ('resolved', the error, or 'pending'). */
async function within(p: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise((r) => (timer = setTimeout(r, ms, 'pending')));
  try {
    return await Promise.race([
      p.then(
        () => 'resolved',
        (err: unknown) => err,
      ),
      bound,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A connection through the proxy, stalled: its last command timed out on the open connection. */
async function stalledConnection(t: Test) {
  const redis = await startPrivateRedis();
  const proxy = await stallableProxy(redis.port);
  const conn = new RedisConnection(proxy.url, { commandTimeoutMs: 100 });
  t.teardown(async () => {
    await within(conn.close(), 1_000);
    await proxy.close();
    await redis.destroy();
  });
  t.ok(await conn.start(), 'connected through the proxy');
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
