// A fleet node's admin listener (`serve --db postgres://… --redis … --admin-port 0`), as a real
// process on a private PostgreSQL and Redis: readiness and `pi_gateway_config_info` report the
// serving config's hash (skew between nodes after a redeploy is visible), and the Redis fallback is
// visible in the metrics (`pi_gateway_redis_up`, `pi_gateway_redis_fallbacks_total`) while Redis is
// stopped, and back to up when it returns — on a one-thread node and on a `--workers 2` node, whose
// serving threads ask Redis themselves and count their fallbacks in the coordinator's metrics.
import t from 'tap';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseMetrics, sampleValue } from '../helpers/metrics.ts';
import { chatStatus, fleetNodeRig } from '../helpers/fleet-node-rig.ts';
import { startServe } from '../helpers/serve-process.ts';
import { FIXTURES, fixtureConfig } from '../helpers/stack.ts';

const nodeTest = (name: string, extra: string[]) =>
  t.test(name, async (t) => {
    const { url, masterKey, key, redis, sim } = await fleetNodeRig(t, 'obs');

    const node = await startServe(t, {
      config: join(FIXTURES, 'gateway'),
      db: { file: url, masterKey, key: '' },
      upstream: sim.url,
      args: ['--redis', redis.url, '--admin-port', '0', ...extra],
      env: { PI_ADMIN_PORT: '', PI_REDIS_URL: '' },
    });
    const listening = node.events.find((e) => e.event === 'listening');
    const admin = String(listening?.['admin']);
    t.match(admin, /^http:\/\/127\.0\.0\.1:\d+$/, 'the admin listener is up');
    const hash = fixtureConfig('gateway').sourceHash;

    const ready = (await (await fetch(`${admin}/health/ready`)).json()) as {
      status: string;
      config: { loaded: boolean; hash: string };
      store: { ok: boolean };
    };
    t.match(
      ready,
      { status: 'ready', config: { loaded: true, hash }, store: { ok: true } },
      'readiness: ready, the config hash, the store answers',
    );
    const chat = () => chatStatus(node.url, key);
    t.equal(await chat(), 200);
    const metrics = async () => parseMetrics(await (await fetch(`${admin}/metrics`)).text());
    let mm = await metrics();
    t.equal(sampleValue(mm, 'pi_gateway_config_info', { hash }), 1, 'pi_gateway_config_info carries the same hash');
    t.equal(sampleValue(mm, 'pi_gateway_redis_up', {}), 1, 'Redis up');
    t.equal(sampleValue(mm, 'pi_gateway_redis_fallbacks_total', { kind: 'rate_limit' }), 0, 'no fallback yet');

    await redis.stop();
    t.equal(await chat(), 200, 'Redis down: served on per-node limits');
    mm = await metrics();
    t.equal(sampleValue(mm, 'pi_gateway_redis_up', {}), 0, 'Redis down in the metrics');
    t.ok(
      (sampleValue(mm, 'pi_gateway_redis_fallbacks_total', { kind: 'rate_limit' }) ?? 0) >= 1,
      'the local rate-limit decision is counted',
    );

    await redis.start();
    let up = 0;
    for (let i = 0; i < 100 && up !== 1; i++) {
      await chat();
      up = sampleValue(await metrics(), 'pi_gateway_redis_up', {}) ?? 0;
      if (up !== 1) await sleep(100);
    }
    t.equal(up, 1, 'Redis back: up again, by itself');
    node.child.kill('SIGTERM');
    t.equal((await node.exited).code, 0, 'SIGTERM stops it cleanly');
  });

nodeTest('a PostgreSQL node reports its config hash in readiness and metrics; the Redis fallback in metrics', []);
nodeTest('the same on a --workers 2 node: its threads’ own Redis fallbacks are in its metrics', ['--workers', '2']);
