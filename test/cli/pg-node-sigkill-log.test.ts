// A fleet node killed by SIGKILL right after its answers: every answer it charged has its request-log
// row, because the row is committed with the settlement (not in the request log's next 200-ms
// batch) — on escrow slices, on per-request holds, and on a `--workers 2` node whose threads settle
// through their coordinator. The console's request log and spend, read from that table, then match
// the ledger after a crash as they do after a clean stop.
import t from 'tap';
import { join } from 'node:path';
import pg from 'pg';
import { chatStatus, fleetNodeRig } from '../helpers/fleet-node-rig.ts';
import { startServe } from '../helpers/serve-process.ts';
import { FIXTURES } from '../helpers/stack.ts';

const RUNS: [string, string[]][] = [
  ['escrow slices', []],
  ['per-request holds', ['--wallet-admission', 'per-request']],
  ['--workers 2, escrow', ['--workers', '2']],
];

for (const [name, args] of RUNS) {
  t.test(`SIGKILL after the answers (${name}): every settlement has its request-log row`, async (t) => {
    const { url, masterKey, key, redis, sim } = await fleetNodeRig(t, 'sigkill');
    const node = await startServe(t, {
      config: join(FIXTURES, 'gateway'),
      db: { file: url, masterKey, key: '' },
      upstream: sim.url,
      args: ['--redis', redis.url, ...args],
      env: { PI_ADMIN_PORT: '', PI_REDIS_URL: '' },
    });
    const statuses = await Promise.all(Array.from({ length: 12 }, () => chatStatus(node.url, key)));
    t.same(statuses, Array(12).fill(200), 'twelve answers');
    // At once: the request log's batch (every 200 ms) has not gone out for the last of them.
    node.child.kill('SIGKILL');
    await node.exited;

    const db = new pg.Client({ connectionString: url });
    await db.connect();
    t.teardown(() => db.end());
    const settled = await db.query<{ trace_id: string }>("SELECT trace_id FROM ledger WHERE kind = 'settle'");
    t.equal(settled.rows.length, 12, 'twelve settlements');
    const unlogged = await db.query<{ trace_id: string }>(
      "SELECT l.trace_id FROM ledger l WHERE l.kind = 'settle' AND NOT EXISTS (SELECT 1 FROM request_log r WHERE r.trace_id = l.trace_id)",
    );
    t.same(unlogged.rows, [], 'no settlement without its row');
    const rows = await db.query<{ trace_id: string; n: string }>(
      'SELECT trace_id, count(*) AS n FROM request_log GROUP BY trace_id HAVING count(*) > 1',
    );
    t.same(rows.rows, [], 'one row per request');
    const costs = await db.query<{ off: string }>(
      "SELECT count(*) AS off FROM ledger l JOIN request_log r USING (trace_id) WHERE l.kind = 'settle' AND r.cost_nano IS DISTINCT FROM l.amount_nano",
    );
    t.equal(Number(costs.rows[0]?.off), 0, 'each row says what its settlement charged');
  });
}
