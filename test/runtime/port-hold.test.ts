// How `serve --workers N` chooses its port (src/runtime/port-hold.ts): with port 0 the port picked
// is held until the serving threads listen, so no exclusive bind elsewhere can take it in between,
// and the threads' shared (SO_REUSEPORT) bind succeeds beside the hold; a fixed port another
// listener already serves is refused, even one shared the same way, and a free one is not held.
import { createServer, type Server } from 'node:net';
import t from 'tap';
import { holdPort } from '../../src/runtime/port-hold.ts';
import { createHttpServer } from '../../src/server/http-server.ts';

const HOST = '127.0.0.1';

/** Listens with node:net; resolves the server, or the error code the bind failed with. */
function bind(port: number, reusePort: boolean): Promise<Server | string> {
  return new Promise((resolve) => {
    const server = createServer((s) => s.destroy());
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen({ host: HOST, port, exclusive: true, reusePort }, () => resolve(server));
  });
}

const close = (s: Server): Promise<void> => new Promise((r) => s.close(() => r()));

t.test('port 0: the picked port stays taken until released, and the threads bind beside it', async (t) => {
  const hold = await holdPort(HOST, 0);
  t.teardown(() => hold.release());
  t.ok(hold.port > 0, 'a port was picked');
  t.equal(await bind(hold.port, false), 'EADDRINUSE', 'an exclusive bind elsewhere fails while held');

  // A serving thread's own bind: uWS sharing the port.
  const thread = createHttpServer([{ method: 'get', pattern: '/', handler: (_req, reply) => reply.sendJson(200, {}) }]);
  t.equal(await thread.listen(HOST, hold.port, { shared: true }), hold.port, 'the thread listens beside the hold');
  await hold.release();
  await hold.release(); // twice is harmless
  t.equal(await bind(hold.port, false), 'EADDRINUSE', 'after release the thread still owns the port');
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`http://${HOST}:${hold.port}/`);
    t.equal(res.status, 200, 'every connection reaches the thread once the hold is gone');
  }
  thread.close();
});

t.test('port 0: a second hold never gets a port the first still holds', async (t) => {
  const holds = await Promise.all(Array.from({ length: 20 }, () => holdPort(HOST, 0)));
  t.teardown(() => Promise.all(holds.map((h) => h.release())));
  t.equal(new Set(holds.map((h) => h.port)).size, holds.length, 'twenty holds, twenty ports');
});

t.test('a fixed port is refused when something listens on it', async (t) => {
  const other = await bind(0, false);
  if (typeof other === 'string') throw new Error(other);
  const port = (other.address() as { port: number }).port;
  await t.rejects(holdPort(HOST, port), /cannot listen on 127\.0\.0\.1:\d+: .*in use/, 'an exclusive listener');
  await close(other);

  // Another gateway's serving threads share their port by SO_REUSEPORT: the hold must not join them.
  const shared = await bind(0, true);
  if (typeof shared === 'string') throw new Error(shared);
  const sharedPort = (shared.address() as { port: number }).port;
  await t.rejects(holdPort(HOST, sharedPort), /in use/, 'a listener bound with SO_REUSEPORT');
  await close(shared);

  const hold = await holdPort(HOST, sharedPort);
  t.equal(hold.port, sharedPort, 'once free, the fixed port is accepted');
  // Not held: clients may already be connecting to a fixed port, and a hold would take a share of
  // those connections and reset them.
  const after = await bind(sharedPort, false);
  t.type(after, 'object', 'a fixed port is checked, not held');
  if (typeof after !== 'string') await close(after);
  await hold.release();
});
