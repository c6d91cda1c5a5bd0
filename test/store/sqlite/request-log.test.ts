// Request log: batched writes (few transactions, flush on close), a cost beyond its column stored
// without it, queries, nothing secret stored.
import t from 'tap';
import { openDatabase, Statements } from '../../../src/store/sqlite/db.ts';
import {
  insertSettledRequestLogRow,
  logRowValues,
  ProvisionalRows,
  upsertRequestLogRows,
} from '../../../src/store/sqlite/request-log.ts';
import { openStore, type RequestLogRow } from '../../../src/store/sqlite/store.ts';
import { tempDbFile } from './fixtures/temp-db.ts';

function row(i: number, over: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    trace_id: `tr-${i}`,
    ts: 1_700_000_000_000 + i,
    workspace: i % 2 ? 'odd' : 'even',
    key_id: 'key_0123456789abcdef',
    endpoint: 'chat.completions',
    model_requested: 'openai/gpt-4o',
    model_served: 'openai/gpt-4o',
    provider: 'azure',
    deployment: 'azure/gpt-4o-eastus',
    attempts: 2,
    attempts_json: [
      {
        provider: 'openai',
        model: 'openai/gpt-4o',
        deployment: 'openai/gpt-4o',
        outcome: 'http_error',
        status: 503,
        ms: 40,
      },
      {
        provider: 'azure',
        model: 'openai/gpt-4o',
        deployment: 'azure/gpt-4o-eastus',
        outcome: 'ok',
        status: 200,
        ms: 300,
      },
    ],
    stream: true,
    status: 200,
    error_code: null,
    latency_ms: 345,
    ttfb_ms: 120,
    prompt_tokens: 12,
    completion_tokens: 34,
    reasoning_tokens: 5,
    cached_tokens: null,
    cost_nano: 9_223_372_036_854_775_000n,
    app_title: 'My App',
    app_origin: 'https://example.com',
    session_id: 'sess-1',
    ended: 'completed',
    ...over,
  };
}

t.test('appends are batched: N rows, few transactions; close flushes', async (t) => {
  const file = tempDbFile(t);
  const s = openStore(file, { requestLog: { flushIntervalMs: 60_000, maxBatch: 1000 } });
  for (let i = 0; i < 2500; i++) s.requestLog.append(row(i));
  t.same(
    s.requestLog.stats(),
    { queued: 500, transactions: 2, written: 2000, dropped: 0 },
    'full batches written at once',
  );
  const reader = openStore(file, { readonly: true });
  t.equal(reader.requestLog.query({ afterId: 0, limit: 10_000 }).length, 2000);
  s.close();
  t.same(
    s.requestLog.stats(),
    { queued: 0, transactions: 3, written: 2500, dropped: 0 },
    'close flushed the rest in one transaction',
  );
  t.equal(reader.requestLog.query({ afterId: 0, limit: 10_000 }).length, 2500);
  t.throws(() => s.requestLog.append(row(1)), /closed/);
  reader.close();
});

t.test('the interval timer flushes a partial batch', async (t) => {
  const s = openStore(':memory:', { requestLog: { flushIntervalMs: 20, maxBatch: 1000 } });
  for (let i = 0; i < 5; i++) s.requestLog.append(row(i));
  t.equal(s.requestLog.stats().transactions, 0);
  const deadline = Date.now() + 5000;
  while (s.requestLog.stats().transactions === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.same(s.requestLog.stats(), { queued: 0, transactions: 1, written: 5, dropped: 0 });
  s.close();
});

t.test('a failed write keeps the rows for the next flush', async (t) => {
  const file = tempDbFile(t);
  const failures: unknown[] = [];
  const s = openStore(file, {
    requestLog: { flushIntervalMs: 60_000, maxBatch: 100 },
    onLogError: (e) => failures.push(e),
  });
  s.requestLog.append(row(1));
  s.requestLog.append(row(2));
  // Another connection makes every insert fail, as a full disk or a broken file would.
  const other = openDatabase(file);
  other.exec("CREATE TRIGGER fail BEFORE INSERT ON request_log BEGIN SELECT RAISE(ABORT, 'injected failure'); END");
  s.requestLog.flush();
  t.equal(failures.length, 1);
  t.match(String(failures[0]), /injected failure/);
  t.same(
    s.requestLog.stats(),
    { queued: 2, transactions: 0, written: 0, dropped: 0 },
    'rows kept, nothing half-written',
  );
  other.exec('DROP TRIGGER fail');
  other.close();
  s.requestLog.flush();
  t.same(s.requestLog.stats(), { queued: 0, transactions: 1, written: 2, dropped: 0 });
  t.same(
    s.requestLog.query().map((r) => r.trace_id),
    ['tr-1', 'tr-2'],
  );
  s.close();
});

t.test('a cost beyond the column is stored without it, reported, and takes no other row down', async (t) => {
  const failures: unknown[] = [];
  const s = openStore(':memory:', {
    requestLog: { flushIntervalMs: 60_000, maxBatch: 100 },
    onLogError: (e) => failures.push(e),
  });
  s.requestLog.append(row(1));
  s.requestLog.append(row(2, { cost_nano: 2n ** 64n }));
  s.requestLog.append(row(3));
  s.requestLog.flush();
  t.same(
    s.requestLog.query().map((r) => [r.trace_id, r.cost_nano]),
    [
      ['tr-1', row(1).cost_nano],
      ['tr-2', null],
      ['tr-3', row(3).cost_nano],
    ],
  );
  t.equal(failures.length, 1);
  t.match(String(failures[0]), /tr-2: cost_nano 18446744073709551616 is outside what the column holds/);
  s.close();
});

t.test('query: round trip, filters, tail and paging', async (t) => {
  const s = openStore(':memory:', { requestLog: { flushIntervalMs: 60_000, maxBatch: 1000 } });
  for (let i = 0; i < 10; i++)
    s.requestLog.append(
      row(
        i,
        i === 3
          ? { stream: false, status: 429, error_code: 'rate_limited', cost_nano: null, workspace: null, key_id: null }
          : {},
      ),
    );
  s.requestLog.flush();
  const all = s.requestLog.query({ afterId: 0 });
  t.equal(all.length, 10);
  t.same(all[0], { id: 1, ...row(0) }, 'every field round-trips, bigint cost included');
  t.same(all[3], {
    id: 4,
    ...row(3, {
      stream: false,
      status: 429,
      error_code: 'rate_limited',
      cost_nano: null,
      workspace: null,
      key_id: null,
    }),
  });
  t.same(
    s.requestLog.query({ limit: 3 }).map((r) => r.id),
    [8, 9, 10],
    'without afterId: the newest rows, oldest first',
  );
  t.same(
    s.requestLog.query({ afterId: 4, limit: 3 }).map((r) => r.id),
    [5, 6, 7],
    'paging forward',
  );
  t.same(
    s.requestLog.query({ workspace: 'odd', afterId: 0 }).map((r) => r.trace_id),
    ['tr-1', 'tr-5', 'tr-7', 'tr-9'],
  );
  t.same(
    s.requestLog.query({ workspace: 'odd', limit: 2 }).map((r) => r.trace_id),
    ['tr-7', 'tr-9'],
  );
  t.same(s.requestLog.query({ afterId: 10 }), []);
  s.close();
});

t.test('the table has no column for keys, credentials or prompts', async (t) => {
  const file = tempDbFile(t);
  openStore(file).close();
  const raw = openDatabase(file);
  const cols = (raw.prepare("SELECT name FROM pragma_table_info('request_log')").pluck().all() as string[]).sort();
  raw.close();
  t.same(cols, [
    'app_origin',
    'app_title',
    'attempts',
    'attempts_json',
    'cached_tokens',
    'completion_tokens',
    'cost_nano',
    'deployment',
    'ended',
    'endpoint',
    'error_code',
    'id',
    'key_id',
    'latency_ms',
    'model_requested',
    'model_served',
    'prompt_tokens',
    'provider',
    'reasoning_tokens',
    'session_id',
    'status',
    'stream',
    'trace_id',
    'ts',
    'ttfb_ms',
    'workspace',
  ]);
});

t.test('options are validated', async (t) => {
  t.throws(() => openStore(':memory:', { requestLog: { maxBatch: 0 } }), RangeError);
});

t.test(
  "a final row finds its settlement's row by the rowid the writer remembered, never another trace's",
  async (t) => {
    const file = tempDbFile(t);
    const store = openStore(file);
    t.teardown(() => store.close());
    const db = openDatabase(file);
    t.teardown(() => db.close());
    const sql = new Statements(db, true);
    const places = new ProvisionalRows();
    db.transaction(() => {
      insertSettledRequestLogRow(sql, logRowValues(row(1, { latency_ms: null })), places);
      insertSettledRequestLogRow(sql, logRowValues(row(2, { latency_ms: null })), places);
    }).immediate();
    t.equal(places.size, 2, 'each provisional row remembered');
    db.transaction(() => upsertRequestLogRows(sql, [logRowValues(row(1, { latency_ms: 7 }))], places)).immediate();
    t.equal(places.size, 1, 'taken once its final row is written');
    // A rolled-back insert's rowid may now hold another trace's row: the remembered rowid of tr-2 is
    // pointed at tr-1's row, and the final row of tr-2 must still land on tr-2's own row.
    const ids = db.prepare('SELECT id, trace_id FROM request_log ORDER BY id').all() as {
      id: number;
      trace_id: string;
    }[];
    const idOf = (trace: string) => ids.find((r) => r.trace_id === trace)?.id as number;
    places.take('tr-2');
    places.remember('tr-2', idOf('tr-1'));
    db.transaction(() => upsertRequestLogRows(sql, [logRowValues(row(2, { latency_ms: 9 }))], places)).immediate();
    const byTrace = Object.fromEntries(store.requestLog.query({}).map((r) => [r.trace_id, r.latency_ms]));
    t.same(byTrace, { 'tr-1': 7, 'tr-2': 9 }, 'one row per trace, each with its own final details');
  },
);

t.test('the remembered rows are bounded: the oldest go first, and a forgotten one is found by trace', async (t) => {
  const places = new ProvisionalRows(4);
  for (let i = 1; i <= 5; i++) places.remember(`tr-${i}`, i);
  t.ok(places.size <= 4, 'never above the bound');
  t.equal(places.take('tr-1'), undefined, 'the oldest was dropped');
  t.equal(places.take('tr-5'), 5, 'the newest kept');
});
