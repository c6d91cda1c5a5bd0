// A settlement on PostgreSQL carries its request's log row, committed in the same statement as the
// charge (escrow's `settleMany`, the per-request holds' `closeMany`): a node killed after an answer
// leaves no charge without its row. The request's final row, written later in the request log's
// batch, replaces it (the wallet services mark those traces: `carried`); a final row already there
// (written first) is kept. A row's values never fail the charge: what no column takes is stored as
// null, and a row the statement still could not carry goes to the request log's own batch.
import t from 'tap';
import pg from 'pg';
import type { Test } from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { chargeBeforeRow } from '../../../src/fleet/isolated-batch.ts';
import { openPgStore, type PgStore } from '../../../src/store/postgres/store.ts';
import {
  columnArrays,
  REQUEST_LOG_REPLACE,
  requestLogInsert,
  requestLogValues,
} from '../../../src/store/postgres/request-log.ts';
import type { RequestLogRow } from '../../../src/store/types.ts';
import { logRow } from '../../helpers/log-rows.ts';
import { startPrivatePg, type PrivatePg } from '../../helpers/pg.ts';
import { masterKey } from '../sqlite/fixtures/temp-db.ts';

let server: PrivatePg;
t.before(async () => {
  server = await startPrivatePg();
});
t.teardown(() => server.destroy());

const clock = new ManualClock(Date.UTC(2026, 0, 1));

async function fresh(t: Test, onUrl: (url: string) => Promise<void> = async () => undefined): Promise<PgStore> {
  const url = await server.createDatabase();
  await onUrl(url);
  const m = await openPgStore(url, { clock, checkSchema: false, masterKey: masterKey(1) });
  await m.migrate();
  await m.close();
  const s = await openPgStore(url, { clock, masterKey: masterKey(1), requestLog: { flushIntervalMs: 5 } });
  t.teardown(() => s.close());
  await s.wallets.credit('w', 10_000n, 'seed');
  return s;
}

/** The provisional row of a settlement: what was known when the answer was charged. */
const settledRow = (traceId: string, over: Partial<RequestLogRow> = {}): RequestLogRow =>
  logRow(traceId, { ts: clock.now(), workspace: 'w', cost_nano: 300n, latency_ms: 7, ended: 'completed', ...over });

async function rowsOf(s: PgStore, traceId: string) {
  return (await s.requestLog.query({ limit: 10_000 })).filter((r) => r.trace_id === traceId);
}

async function openSlice(s: PgStore, sliceId: string): Promise<void> {
  const take = await s.slices.take(
    { workspace: 'w', sliceId, grow: false, want: 4_000n, need: 1_000n, floor: 0n, fraction: 1n },
    clock.now(),
    'a',
  );
  if (take.granted !== 4_000n) throw new Error(`slice not granted: ${take.granted}`);
}

t.test('escrow: the row is committed with the charge, once; the final row replaces it', async (t) => {
  const s = await fresh(t);
  await openSlice(s, 's1');
  const batch = [
    { traceId: 'x', sliceId: 's1', cost: 300n, details: {}, logRow: settledRow('x') },
    { traceId: 'y', sliceId: 's1', cost: 200n, details: {} },
  ];
  t.same([...(await s.slices.settleMany(batch, clock.now()))].sort(), ['x', 'y']);
  t.match(await rowsOf(s, 'x'), [{ trace_id: 'x', cost_nano: 300n, latency_ms: 7 }], 'written with the charge');
  t.same(await rowsOf(s, 'y'), [], 'a settlement without a row writes none');
  t.same([...(await s.slices.settleMany(batch, clock.now()))].sort(), ['x', 'y'], 'a retry finds both charged');
  t.equal((await rowsOf(s, 'x')).length, 1, 'and writes no second row');

  // The wallet services say which traces' rows rode with their settlement (see the fleet tests).
  s.requestLog.carried('x', Promise.resolve());
  s.requestLog.append(settledRow('x', { latency_ms: 42, ended: 'client_abort' }));
  await s.requestLog.flush();
  t.match(
    await rowsOf(s, 'x'),
    [{ latency_ms: 42, ended: 'client_abort', cost_nano: 300n }],
    'the final row replaced it',
  );
  t.equal((await rowsOf(s, 'x')).length, 1);
  t.same(await s.wallets.verify(), { ok: true, problems: [] });
});

t.test('per-request holds: the row is committed with the charge; a release writes none', async (t) => {
  const s = await fresh(t);
  for (const id of ['a', 'b']) t.same(await s.holds.hold('w', id, 1_000n, clock.now(), 'n'), { ok: true });
  const closes = [
    { traceId: 'a', kind: 'settle' as const, cost: 300n, details: {}, logRow: settledRow('a') },
    { traceId: 'b', kind: 'release' as const, note: null },
  ];
  t.same([...(await s.holds.closeMany(closes, clock.now()))].sort(), ['a', 'b']);
  t.match(await rowsOf(s, 'a'), [{ trace_id: 'a', cost_nano: 300n }]);
  t.same(await rowsOf(s, 'b'), []);
  t.same([...(await s.holds.closeMany(closes, clock.now()))], [], 'a retry closes nothing');
  t.equal((await rowsOf(s, 'a')).length, 1, 'and writes no second row');
  s.requestLog.carried('a', Promise.resolve());
  s.requestLog.append(settledRow('a', { latency_ms: 9 }));
  await s.requestLog.flush();
  t.match(await rowsOf(s, 'a'), [{ latency_ms: 9 }], 'the final row replaced it');
  t.equal((await rowsOf(s, 'a')).length, 1);
});

t.test('a final row written before its settlement is kept: the settlement adds none', async (t) => {
  const s = await fresh(t);
  await openSlice(s, 's1');
  s.requestLog.append(settledRow('late', { latency_ms: 99, ended: 'completed' }));
  await s.requestLog.flush();
  const settle = { traceId: 'late', sliceId: 's1', cost: 300n, details: {}, logRow: settledRow('late') };
  t.same([...(await s.slices.settleMany([settle], clock.now()))], ['late']);
  // A final row to replace a settlement's row that is not there is written as a new one.
  s.requestLog.carried('gone', Promise.resolve());
  s.requestLog.append(settledRow('gone', { latency_ms: 5 }));
  await s.requestLog.flush();
  t.match(await rowsOf(s, 'gone'), [{ latency_ms: 5 }], 'written');
  t.match(await rowsOf(s, 'late'), [{ latency_ms: 99 }], 'the final row has the last word');
  t.equal((await rowsOf(s, 'late')).length, 1);
});

t.test('values no column takes never fail the charge', async (t) => {
  const s = await fresh(t);
  await openSlice(s, 's1');
  const odd = settledRow('odd', {
    latency_ms: 1.5,
    prompt_tokens: 1e300,
    completion_tokens: Number.NaN,
    cost_nano: 2n ** 70n,
    attempts: 2 ** 40,
    model_requested: 'a\u0000b\ud800',
    session_id: 's'.repeat(300),
  });
  const settle = { traceId: 'odd', sliceId: 's1', cost: 300n, details: {}, logRow: odd };
  t.same([...(await s.slices.settleMany([settle], clock.now()))], ['odd'], 'charged');
  t.match(
    await rowsOf(s, 'odd'),
    [
      {
        latency_ms: null,
        prompt_tokens: null,
        completion_tokens: null,
        cost_nano: null,
        attempts: 0,
        model_requested: 'a\uFFFDb\uFFFD',
        session_id: `${'s'.repeat(255)}…`,
      },
    ],
    'stored, what no column takes as null',
  );
  t.same(await s.wallets.verify(), { ok: true, problems: [] });
});

t.test('an item refused alone is charged without its row, the row set aside', async (t) => {
  type Item = { traceId: string; logRow?: RequestLogRow | undefined };
  const sent: Item[][] = [];
  const aside: string[] = [];
  const many = chargeBeforeRow<Item>(
    async (items) => {
      sent.push(items);
      if (items.some((i) => i.logRow)) throw Object.assign(new Error('invalid input syntax'), { code: '22P02' });
      return new Set(items.map((i) => i.traceId));
    },
    { rowOf: (i) => i.logRow, without: (i) => ({ ...i, logRow: undefined }), aside: (r) => aside.push(r.trace_id) },
  );
  t.same([...(await many([{ traceId: 'p', logRow: settledRow('p') }]))], ['p'], 'charged');
  t.same(aside, ['p'], 'its row went to the request log');
  t.equal(sent.length, 2);
  await t.rejects(
    many([{ traceId: 'q', logRow: settledRow('q') }, { traceId: 'r' }]),
    /invalid input/,
    'a batch is isolated by its caller first',
  );
  const down = chargeBeforeRow<Item>(
    () => Promise.reject(Object.assign(new Error('Connection terminated'), { code: 'ECONNRESET' })),
    { rowOf: (i) => i.logRow, without: (i) => i, aside: (r) => aside.push(r.trace_id) },
  );
  await t.rejects(
    down([{ traceId: 's', logRow: settledRow('s') }]),
    /Connection terminated/,
    'an outage is not a refusal',
  );
  const busy = chargeBeforeRow<Item>(
    () => Promise.reject(Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' })),
    { rowOf: (i) => i.logRow, without: (i) => i, aside: (r) => aside.push(r.trace_id) },
  );
  await t.rejects(
    busy([{ traceId: 'u', logRow: settledRow('u') }]),
    /lock timeout/,
    'nor a lock timeout: retried with its row',
  );
  t.same(aside, ['p']);
});

t.test('a batch of final rows finds its rows through indexes, never a scan of the whole log', async (t) => {
  const s = await fresh(t);
  // A log of 20,000 rows PostgreSQL has no statistics of yet (as after a burst, before autovacuum).
  const rows = Array.from({ length: 20_000 }, (_, i) => settledRow(`old-${i}`));
  for (let i = 0; i < rows.length; i += 1000) {
    const part = rows.slice(i, i + 1000);
    await s.pool.query(requestLogInsert(part.length), part.flatMap(requestLogValues));
  }
  const finals = rows.slice(5000, 5200).map((r) => ({ ...r, latency_ms: 77 }));
  const columns = columnArrays(finals);
  const plan = (await s.pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${REQUEST_LOG_REPLACE}`, columns)).rows
    .map((r) => r['QUERY PLAN'])
    .join('\n');
  t.notMatch(plan, /Seq Scan on request_log/, 'no sequential scan of the request log');
  await s.pool.query(REQUEST_LOG_REPLACE, columns);
  const after = await s.pool.query<{ latency_ms: bigint }>(
    "SELECT latency_ms FROM request_log WHERE trace_id = 'old-5100'",
  );
  t.same(
    after.rows.map((r) => r.latency_ms),
    [77n],
    'replaced, one row',
  );
});

/** Another session on the database (a node, an operator), ended with the test. */
async function session(t: Test, url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  t.teardown(() => c.end());
  return c;
}

t.test('a final row waits for its settlement: two statements never both add the row', async (t) => {
  let url = '';
  const s = await fresh(t, async (u) => {
    url = u;
  });
  await openSlice(s, 's1');
  // Another node's statement holds the slice: the settlement waits on it, its snapshot taken.
  const other = await session(t, url);
  await other.query('BEGIN');
  await other.query("SELECT id FROM slices WHERE id = 's1' FOR UPDATE");
  const settled = s.slices.settleMany(
    [{ traceId: 'x', sliceId: 's1', cost: 300n, details: {}, logRow: settledRow('x') }],
    clock.now(),
  );
  const watcher = await session(t, url);
  let waiting = false;
  for (let i = 0; i < 200 && !waiting; i++) {
    const w = await watcher.query<{ query: string }>(
      "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
    );
    waiting = w.rows.some((r) => r.query.includes('INSERT INTO ledger'));
    if (!waiting) await new Promise((r) => setTimeout(r, 10));
  }
  t.ok(waiting, 'the settlement waits on the slice');
  // The request ended meanwhile (a stream cut): its final row is appended and flushed.
  s.requestLog.carried('x', settled);
  s.requestLog.append(settledRow('x', { latency_ms: 99, ended: 'upstream_cut' }));
  const flushed = s.requestLog.flush();
  // Half a second for the flush to go ahead (it must not: the settlement is not over).
  const early = await Promise.race([
    flushed.then(() => 'flushed'),
    new Promise((r) => setTimeout(() => r('waiting'), 500)),
  ]);
  t.equal(early, 'waiting', 'the final row waits for the settlement');
  await other.query('COMMIT');
  t.same([...(await settled)], ['x'], 'charged');
  await flushed;
  t.same(
    (await rowsOf(s, 'x')).map((r) => [r.latency_ms, r.ended]),
    [[99, 'upstream_cut']],
    'one row, the final one',
  );
});

t.test('rows the database did not take for a passing reason (a lock timeout) are kept and written later', async (t) => {
  let url = '';
  const s = await fresh(t, async (u) => {
    url = u;
    const admin = await session(t, u);
    await admin.query(`ALTER DATABASE "${new URL(u).pathname.slice(1)}" SET lock_timeout = '200ms'`);
  });
  const locker = await session(t, url);
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE request_log IN ACCESS EXCLUSIVE MODE');
  for (const id of ['a', 'b', 'c']) s.requestLog.append(settledRow(id));
  await s.requestLog.flush();
  t.match(s.requestLog.stats(), { queued: 3, refused: 0 }, 'kept, none refused');
  await locker.query('COMMIT');
  await s.requestLog.flush();
  t.match(s.requestLog.stats(), { queued: 0, refused: 0 });
  t.equal((await s.requestLog.query({})).length, 3, 'all written');
});
