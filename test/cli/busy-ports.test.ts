// The simulator binds exclusively, like the gateway: a port another simulator (or anything else)
// listens on is refused, by `simulator --port` and `demo --sim-port` alike, never silently shared
// (the kernel would split the connections between the two).
import t from 'tap';
import { join } from 'node:path';
import { startSimulator } from '../../src/simulator/server.ts';
import { tempDir } from '../helpers/admission.ts';
import { boundedCli } from './fixtures/bounded-cli.ts';

t.test('startSimulator refuses a port a simulator listens on', async (t) => {
  const first = await startSimulator({ port: 0 });
  t.teardown(() => first.close());
  await t.rejects(startSimulator({ port: first.port }), {
    message: `simulator: cannot listen on 127.0.0.1:${first.port}: the port is in use (by another process) or the address is not available`,
  });
});

t.test('simulator --port and demo --sim-port refuse a busy port and exit 1', async (t) => {
  const busy = await startSimulator({ port: 0 });
  t.teardown(() => busy.close());
  const sim = await boundedCli(['simulator', '--port', String(busy.port)], { ms: 15_000 });
  t.notOk(sim.timedOut, 'simulator: ends instead of sharing the port');
  t.equal(sim.code, 1);
  t.equal(
    sim.stderr,
    `pi-gateway simulator: cannot listen on 127.0.0.1:${busy.port}: the port is in use (by another process) or the address is not available\n`,
  );
  t.notMatch(sim.stdout, /listening/);

  const dir = join(tempDir(t, 'pi-busy-'), 'demo');
  const demo = await boundedCli(['demo', '--dir', dir, '--port', '0', '--sim-port', String(busy.port)], {
    ms: 30_000,
    env: { PI_CONFIG: undefined, PI_ADMIN_PORT: undefined },
  });
  t.notOk(demo.timedOut, 'demo: ends instead of sharing the port');
  t.equal(demo.code, 1);
  t.match(demo.stderr, `pi-gateway demo: simulator: cannot listen on 127.0.0.1:${busy.port}: the port is in use`);
  t.notMatch(demo.stdout, /gateway on/, 'no gateway was started');
  // The demo's database was given back: a second demo on the same directory may start.
  const again = await boundedCli(['demo', '--dir', dir, '--port', '0', '--sim-port', String(busy.port)], {
    ms: 30_000,
    env: { PI_CONFIG: undefined, PI_ADMIN_PORT: undefined },
  });
  t.notMatch(again.stderr, /already served/, 'the owner lock was released');
});
