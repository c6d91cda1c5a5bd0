// A private Redis behind a TCP proxy that can stall it: `freeze()` holds every byte (as a stopped
// Redis leaves them in the socket buffers, connections open), `thaw()` delivers what it held, in
// order, and forwards again, `cut()` closes the connections it carries (new ones go through). For
// the tests of RedisConnection against a Redis that stops answering without closing its connection.
import { connect, createServer, type Socket } from 'node:net';
import type { Test } from 'tap';
import { RedisConnection } from '../../src/fleet/redis-connection.ts';
import { startPrivateRedis } from './redis.ts';

export async function stallableProxy(port: number) {
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

/** What `p` settled to within `ms` ('resolved', the error, or 'pending': a hang fails the test
 *  instead of stalling it). */
export async function within(p: Promise<unknown>, ms: number): Promise<unknown> {
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

/** A connection (100-ms command timeout) to a private Redis through the proxy, connected; all of it
 *  closed when `t` ends. */
export async function connectionThroughProxy(t: Test) {
  const redis = await startPrivateRedis();
  const proxy = await stallableProxy(redis.port);
  const conn = new RedisConnection(proxy.url, { commandTimeoutMs: 100 });
  t.teardown(async () => {
    await within(conn.close(), 1_000);
    await proxy.close();
    await redis.destroy();
  });
  t.ok(await conn.start(), 'connected through the proxy');
  return { conn, proxy };
}
