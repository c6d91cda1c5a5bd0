// A `--workers 2` fleet node whose serving threads cannot reach Redis while its coordinator can (each
// thread has its own connection: here Redis refuses them once its `maxclients` is reached). The
// threads then decide rate limits on the node's own windows — per node, not fleet-wide — and the
// operator must be able to see it: in `pi_gateway_redis_up` (the failure-mode table's "the metrics
// show it") or a `redis_unreachable` line, not only in a rising fallback counter.
import t from 'tap';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisConnection } from '../../src/fleet/redis-connection.ts';
import { parseMetrics, sampleValue } from '../helpers/metrics.ts';
import { chatStatus, fleetNodeRig } from '../helpers/fleet-node-rig.ts';
import { startServe } from '../helpers/serve-process.ts';
import { FIXTURES } from '../helpers/stack.ts';

t.test('serving threads that cannot reach Redis while the coordinator can: visible as Redis down', async (t) => {
  const { url, masterKey, key, redis, sim } = await fleetNodeRig(t, 'threads');
  const admin = new RedisConnection(redis.url);
  t.teardown(() => admin.close());

  const node = await startServe(t, {
    config: join(FIXTURES, 'gateway'),
    db: { file: url, masterKey, key: '' },
    upstream: sim.url,
    args: ['--redis', redis.url, '--admin-port', '0', '--workers', '2'],
    env: { PI_ADMIN_PORT: '', PI_REDIS_URL: '' },
  });
  const adminUrl = String(node.events.find((e) => e.event === 'listening')?.['admin']);
  const metrics = async () => parseMetrics(await (await fetch(`${adminUrl}/metrics`)).text());
  const chat = () => chatStatus(node.url, key);

  t.ok(await admin.start(), 'the test reaches Redis');
  const own = Number(await admin.command(['CLIENT', 'ID']));
  // The coordinator connected first (before its threads were started): the lowest id but ours.
  const ids = String(await admin.command(['CLIENT', 'LIST']))
    .split('\n')
    .map((line) => Number(/\bid=(\d+)/.exec(line)?.[1]))
    .filter((id) => Number.isFinite(id) && id !== own)
    .sort((a, b) => a - b);
  t.equal(ids.length, 3, 'the node holds three connections: its coordinator’s and one per thread');
  await admin.command(['CONFIG', 'SET', 'maxclients', '2']);
  for (const id of ids.slice(1)) await admin.command(['CLIENT', 'KILL', 'ID', String(id)]);
  await sleep(300);

  for (let i = 0; i < 4; i++) t.equal(await chat(), 200, 'served (on the node’s own windows)');
  const mm = await metrics();
  t.ok(
    (sampleValue(mm, 'pi_gateway_redis_fallbacks_total', { kind: 'rate_limit' }) ?? 0) >= 1,
    'the threads fell back',
  );
  const visible =
    sampleValue(mm, 'pi_gateway_redis_up', {}) === 0 || node.events.some((e) => e.event === 'redis_unreachable');
  t.ok(visible, 'the node shows Redis as unreachable (pi_gateway_redis_up 0 or a redis_unreachable line)');
  node.child.kill('SIGTERM');
  t.equal((await node.exited).code, 0, 'SIGTERM stops it cleanly');
});
