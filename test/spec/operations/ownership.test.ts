// One owner per database and per port, as real processes: a second serve on the same SQLite file
// refuses to start, naming the file and the pid that holds it, while the CLI keeps working beside the
// server; the lock dies with its process (a crashed owner leaves nothing stale); a port already in use
// — by another gateway or anything else — is refused, not shared.
import t from 'tap';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { startSimulator } from '../../../src/simulator/server.ts';
import { FIXTURES } from '../../helpers/stack.ts';
import { cli } from '../../helpers/admission.ts';
import { prepareDb, startServe } from '../../helpers/serve-process.ts';

const CONFIG = join(FIXTURES, 'gateway');

t.test('a second serve on the same database refuses, naming the file and the pid; the CLI works beside', async (t) => {
  const db = prepareDb(t);
  const first = await startServe(t, { config: CONFIG, db });
  const second = await startServe(t, { config: CONFIG, db, noWait: true });
  const exit = await second.exited;
  t.equal(exit.code, 1, 'refused');
  t.match(
    second.stderr(),
    `the database ${resolve(db.file)} is already served by another pi-gateway process (pid ${first.child.pid}`,
  );
  t.notMatch(second.stderr(), /listening/, 'it never listened');
  // The first still serves.
  const res = await fetch(`${first.url}/v1/models`);
  t.equal(res.status, 200);
  // Other commands use the database beside the server.
  const env = { PI_DB: db.file, PI_MASTER_KEY: db.masterKey };
  t.equal((await cli(['wallet', 'show', 'open'], env)).code, 0, 'wallet show');
  t.equal((await cli(['key', 'list'], env)).code, 0, 'key list');
  t.equal((await cli(['wallet', 'credit', '--workspace', 'open', '--usd', '1'], env)).code, 0, 'wallet credit');
  t.equal((await cli(['ledger', 'verify'], env)).code, 0, 'ledger verify');
});

t.test('a crashed owner leaves no stale lock', async (t) => {
  const db = prepareDb(t);
  const first = await startServe(t, { config: CONFIG, db });
  first.child.kill('SIGKILL');
  await first.exited;
  const again = await startServe(t, { config: CONFIG, db });
  t.ok(again.url, 'a new server starts on the same database');
  t.match(
    again.events.find((e) => e.event === 'listening'),
    { pid: again.child.pid },
  );
});

t.test('a port in use is refused, by a gateway or by anything else', async (t) => {
  const sim = await startSimulator({});
  t.teardown(() => sim.close());
  const first = await startServe(t, { config: CONFIG, db: prepareDb(t) });
  const otherDb = prepareDb(t);
  const second = await startServe(t, { config: CONFIG, db: otherDb, port: first.port, noWait: true });
  t.equal((await second.exited).code, 1, 'a second gateway on the same port is refused');
  t.match(second.stderr(), `cannot listen on 127.0.0.1:${first.port}: the port is in use`);
  // Its database claim was given back: a server on it can start.
  const third = await startServe(t, { config: CONFIG, db: otherDb });
  t.ok(third.url);
  // Another program's port.
  const plain = createServer();
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => plain.close(() => r())));
  const port = (plain.address() as { port: number }).port;
  const fourth = await startServe(t, { config: CONFIG, db: prepareDb(t), port, noWait: true });
  t.equal((await fourth.exited).code, 1, 'a port another program listens on is refused');
});

t.test('reload with no server running says so', async (t) => {
  const db = prepareDb(t);
  const r = await cli(['reload', '--db', db.file]);
  t.equal(r.code, 1);
  t.match(r.stderr, `no running pi-gateway serve owns the database ${resolve(db.file)}`);
});
