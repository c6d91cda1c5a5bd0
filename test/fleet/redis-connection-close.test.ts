// RedisConnection against a Redis that stopped answering without closing its connection (a stalled
// server, a network path that drops packets): a command must fail within its timeout (the caller
// falls back instead of waiting — node-redis's own timeout stops counting once the command is
// written), and close() must not wait for a reply that never comes (a drain closes the connection
// last: a close that never returns keeps a serving thread, and so the process, from ever ending).
import t, { type Test } from 'tap';
import { createServer, connect, type Socket } from 'node:net';
import { RedisConnection, RedisUnavailableError } from '../../src/fleet/redis-connection.ts';
import { startPrivateRedis } from '../helpers/redis.ts';

/** A TCP proxy to `port` that forwards until `freeze()`: then it holds every byte, sockets left open. */
async function freezableProxy(port: number) {
  let frozen = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('data', (b) => frozen || upstream.write(b));
    upstream.on('data', (b) => frozen || client.write(b));
    const end = () => {
      client.destroy();
      upstream.destroy();
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
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** What `p` settled to within `ms`, or 'pending' (so a hang fails the test instead of stalling it). */
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

async function frozenConnection(t: Test) {
  const redis = await startPrivateRedis();
  const proxy = await freezableProxy(redis.port);
  const conn = new RedisConnection(proxy.url, { commandTimeoutMs: 100 });
  t.teardown(async () => {
    await within(conn.close(), 1_000);
    await proxy.close();
    await redis.destroy();
  });
  t.ok(await conn.start(), 'connected through the proxy');
  t.same(await conn.command(['PING']), 'PONG', 'Redis answers');
  proxy.freeze();
  return conn;
}

t.test('a command sent to a Redis that stopped answering fails within its timeout', async (t) => {
  const conn = await frozenConnection(t);
  const outcome = await within(conn.command(['PING']), 3_000);
  t.type(outcome, RedisUnavailableError, 'RedisUnavailableError, not a wait for a reply that never comes');
  t.notOk(conn.up, 'the connection counts as down');
});

t.test('close() returns while a command still waits on a Redis that stopped answering', async (t) => {
  const conn = await frozenConnection(t);
  const pending = conn.command(['PING']).catch(() => undefined);
  await new Promise((r) => setTimeout(r, 50));
  t.equal(await within(conn.close(), 3_000), 'resolved', 'close() does not wait for the reply');
  await within(pending, 3_000);
});

t.test('while Redis does not answer, one command at a time waits on it; the others fall back at once', async (t) => {
  const conn = await frozenConnection(t);
  t.type(await within(conn.command(['PING']), 3_000), RedisUnavailableError, 'the first one times out');
  // Twenty at once: the one that tries Redis waits its timeout; the others must not queue behind it.
  const settled: string[] = [];
  await Promise.all(
    Array.from({ length: 20 }, () =>
      conn.command(['PING']).then(
        () => settled.push('answered'),
        (err: unknown) =>
          settled.push(
            err instanceof RedisUnavailableError && /one command at a time/.test(err.message) ? 'fast' : 'timed out',
          ),
      ),
    ),
  );
  t.same(
    settled,
    [...Array.from({ length: 19 }, () => 'fast'), 'timed out'],
    'nineteen fell back before the one probe timed out',
  );
  t.notOk(conn.up);
});
