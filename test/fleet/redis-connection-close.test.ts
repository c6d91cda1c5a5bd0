// RedisConnection against a Redis that stopped answering without closing its connection (a stalled
// server, a network path that drops packets): a command must fail within its timeout (the caller
// falls back instead of waiting — node-redis's own timeout stops counting once the command is
// written), and close() must not wait for a reply that never comes (a drain closes the connection
// last: a close that never returns keeps a serving thread, and so the process, from ever ending).
import t, { type Test } from 'tap';
import { RedisUnavailableError } from '../../src/fleet/redis-connection.ts';
import { connectionThroughProxy, within } from '../helpers/stallable-redis.ts';

/** A connection whose Redis answered once, then stopped answering (its connection left open). */
async function frozenConnection(t: Test) {
  const { conn, proxy } = await connectionThroughProxy(t);
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
