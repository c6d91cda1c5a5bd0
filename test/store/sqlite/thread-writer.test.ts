// The SQLite writer thread seen from its serving-thread end (ThreadWriter), on a real file: ledger
// batches and log rows are committed together; a final row replaces its trace's provisional row
// without touching the two indexed columns; WAL checkpoints run on the checkpointer thread (the
// database file takes the rows while the writer's own auto-checkpoint, ~64 MB, is far off).
import { statSync } from 'node:fs';
import t from 'tap';
import { openStore, ThreadWriter } from '../../../src/store/sqlite/store.ts';
import type { LedgerOp, RequestLogRow } from '../../../src/store/types.ts';
import { tempDbFile } from './fixtures/temp-db.ts';

function row(traceId: string, over: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    trace_id: traceId,
    ts: 1_700_000_000_000,
    workspace: 'w',
    key_id: 'key_1',
    endpoint: 'chat.completions',
    model_requested: 'acme/chat',
    model_served: 'acme/chat',
    provider: 'local',
    deployment: 'local-chat',
    attempts: 1,
    attempts_json: [
      { provider: 'local', model: 'acme/chat', deployment: 'local-chat', outcome: 'ok', status: 200, ms: 3 },
    ],
    stream: false,
    status: 200,
    error_code: null,
    latency_ms: null,
    ttfb_ms: 2,
    prompt_tokens: 10,
    completion_tokens: 20,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: 40n,
    app_title: null,
    app_origin: null,
    session_id: null,
    ended: 'completed',
    ...over,
  };
}

function charge(traceId: string): LedgerOp[] {
  return [
    { kind: 'hold', workspace: 'w', traceId, amount: 100n },
    {
      kind: 'settle',
      workspace: 'w',
      traceId,
      amount: 100n,
      cost: 40n,
      details: { model: 'acme/chat' },
      logRow: row(traceId),
    },
  ];
}

async function until(cond: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return cond();
}

t.test('a settlement and its log row commit together; the final row replaces it', async (t) => {
  const file = tempDbFile(t);
  const store = openStore(file);
  store.wallets.credit('w', 1_000n, 'seed');
  const writer = await ThreadWriter.start(file);
  t.teardown(async () => {
    await writer.close();
    store.close();
  });
  await writer.commit(charge('tr_1'));
  writer.append(row('tr_1', { latency_ms: 12, attempts: 2, ended: 'client_abort' }));
  writer.flush();
  const rows = store.requestLog.query({});
  t.equal(rows.length, 1, 'one row per trace');
  t.match(rows[0], {
    trace_id: 'tr_1',
    workspace: 'w',
    latency_ms: 12,
    attempts: 2,
    ended: 'client_abort',
    cost_nano: 40n,
  });
  t.same(
    store.requestLog.search({ workspace: 'w' }).rows.map((r) => r.trace_id),
    ['tr_1'],
    'still found through the workspace index',
  );
  t.same(store.wallets.verify(), { ok: true, problems: [] });
  t.equal(store.wallets.show('w', 0).balance, 960n);
});

t.test('a final row committed before its settlement keeps the last word', async (t) => {
  const file = tempDbFile(t);
  const store = openStore(file);
  store.wallets.credit('w', 1_000n, 'seed');
  const writer = await ThreadWriter.start(file);
  t.teardown(async () => {
    await writer.close();
    store.close();
  });
  await writer.commit([{ kind: 'hold', workspace: 'w', traceId: 'tr_cut', amount: 100n }]);
  // The request ended (its final row went out alone) while its settlement was still queued behind a
  // busy writer: the settlement, with its provisional row, commits second.
  writer.append(row('tr_cut', { error_code: 'stream_reset', ended: 'upstream_cut', latency_ms: 80 }));
  writer.flush();
  await writer.commit([
    {
      kind: 'settle',
      workspace: 'w',
      traceId: 'tr_cut',
      amount: 100n,
      cost: 40n,
      details: {},
      logRow: row('tr_cut', { ended: 'upstream_cut' }),
    },
  ]);
  const rows = store.requestLog.query({});
  t.equal(rows.length, 1, 'one row per trace');
  t.match(
    rows[0],
    { trace_id: 'tr_cut', error_code: 'stream_reset', ended: 'upstream_cut', latency_ms: 80, cost_nano: 40n },
    'the final row, not the provisional one',
  );
  t.same(store.wallets.verify(), { ok: true, problems: [] });
});

t.test('one commit, many requests: an operation the store refuses is left out alone', async (t) => {
  const file = tempDbFile(t);
  const store = openStore(file);
  store.wallets.credit('w', 1_000n, 'seed');
  const writer = await ThreadWriter.start(file);
  t.teardown(async () => {
    await writer.close();
    store.close();
  });
  await writer.commit(
    ['a', 'b', 'c'].map((traceId) => ({ kind: 'hold', workspace: 'w', traceId, amount: 100n }) as LedgerOp),
  );
  writer.append(row('finished', { cost_nano: null, status: 429, error_code: 'rate_limited', model_served: null }));
  const refused = await writer.commit([
    { kind: 'settle', workspace: 'w', traceId: 'a', amount: 100n, cost: 40n, details: {}, logRow: row('a') },
    // Priced beyond SQLite's INTEGER: better-sqlite3 refuses to bind it.
    {
      kind: 'settle',
      workspace: 'w',
      traceId: 'b',
      amount: 100n,
      cost: 2n ** 64n,
      details: {},
      logRow: row('b', { cost_nano: 2n ** 64n }),
    },
    { kind: 'settle', workspace: 'w', traceId: 'c', amount: 100n, cost: 40n, details: {}, logRow: row('c') },
  ]);
  t.same(
    refused.map((r) => [r.kind, r.traceId]),
    [['settle', 'b']],
    'the writer names the one refused operation',
  );
  t.match(refused[0]?.error, /outside what the ledger holds/);
  t.same(
    store.requestLog
      .query({})
      .map((r) => r.trace_id)
      .sort(),
    ['a', 'c', 'finished'],
    'the others settled with their log rows, and the finished request’s row is written',
  );
  t.same(
    store.wallets.show('w', 0).openHolds,
    1,
    'the refused settlement’s hold is still open (the wallet book releases it)',
  );
  t.equal(store.wallets.show('w', 0).balance, 920n);
});

t.test('WAL checkpoints run beside the writer: the database file takes the rows', async (t) => {
  const file = tempDbFile(t);
  const store = openStore(file);
  store.wallets.credit('w', 1_000_000n, 'seed');
  // Everything so far checkpointed: from here on only a checkpoint grows the database file.
  store.batch(() => undefined);
  const writer = await ThreadWriter.start(file);
  t.teardown(async () => {
    await writer.close();
    store.close();
  });
  const before = statSync(file).size;
  // ~2 MB of log rows: far below the writer's own auto-checkpoint (16,000 pages, ~64 MB).
  // The bulk rides in `deployment` (a config id): client-chosen columns are cut where stored.
  const note = 'x'.repeat(4000);
  for (let i = 0; i < 500; i++) {
    // Refused requests' rows (nothing charged, so no settlement is expected of them).
    writer.append(
      row(`tr_${i}`, {
        deployment: note,
        status: 429,
        error_code: 'rate_limited',
        model_served: null,
        cost_nano: null,
      }),
    );
    if (i % 50 === 49) await writer.commit(charge(`c_${i}`));
  }
  writer.flush();
  t.ok(
    await until(() => statSync(file).size > before + 1_500_000),
    `the database file grew from ${before} bytes to ${statSync(file).size}`,
  );
  t.equal(store.requestLog.query({ limit: 10_000 }).length, 510);
  t.same(store.wallets.verify(), { ok: true, problems: [] });
});

t.test('PI_WRITER_SLOW_COMMIT_MS reports each commit at or over the threshold on stderr, counts only', async (t) => {
  const file = tempDbFile(t);
  const store = openStore(file);
  store.wallets.credit('w', 1_000n, 'seed');
  // The worker copies the environment when it starts; 0 ms reports every commit.
  const saved = process.env['PI_WRITER_SLOW_COMMIT_MS'];
  process.env['PI_WRITER_SLOW_COMMIT_MS'] = '0';
  const lines: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (text.includes('writer_slow_commit'))
      lines.push(...text.split('\n').filter((l) => l.includes('writer_slow_commit')));
    return write(chunk, ...rest);
  }) as typeof process.stderr.write;
  const writer = await ThreadWriter.start(file);
  if (saved === undefined) delete process.env['PI_WRITER_SLOW_COMMIT_MS'];
  else process.env['PI_WRITER_SLOW_COMMIT_MS'] = saved;
  t.teardown(async () => {
    process.stderr.write = write;
    await writer.close();
    store.close();
  });
  await writer.commit(charge('tr_slow'));
  t.ok(await until(() => lines.length >= 1), 'the commit was reported');
  const line = JSON.parse(lines[0] as string) as Record<string, unknown>;
  t.match(line, {
    time: /^\d{4}-\d\d-\d\dT[\d:.]+Z$/,
    level: 'warn',
    event: 'writer_slow_commit',
    ledger_ops: 2,
    log_rows: 1,
  });
  t.ok(typeof line['ms'] === 'number' && (line['ms'] as number) >= 0, 'with its duration in ms');
  t.notOk(JSON.stringify(line).includes('tr_slow'), 'no trace id, workspace or amount in the line');
  t.notOk(JSON.stringify(line).includes('"w"'), 'no workspace');
});

t.test('the slow-commit threshold: unset, empty or not a number ≥ 0 is off', async (t) => {
  const { slowCommitThreshold } = await import('../../../src/store/sqlite/slow-commit.ts');
  t.equal(slowCommitThreshold(undefined), null);
  t.equal(slowCommitThreshold(''), null);
  t.equal(slowCommitThreshold('fast'), null);
  t.equal(slowCommitThreshold('-1'), null);
  t.equal(slowCommitThreshold('0'), 0);
  t.equal(slowCommitThreshold('2.5'), 2.5);
});

t.test(
  'a log row whose cost the column cannot hold is stored without it and reported, its neighbours whole',
  async (t) => {
    const file = tempDbFile(t);
    const store = openStore(file);
    store.wallets.credit('w', 1_000n, 'seed');
    const errors: string[] = [];
    const writer = await ThreadWriter.start(file, {
      onError: (event, err) => errors.push(`${event}: ${err instanceof Error ? err.message : String(err)}`),
    });
    t.teardown(async () => {
      await writer.close();
      store.close();
    });
    await writer.commit(charge('tr_ok'));
    writer.append(row('tr_ok', { latency_ms: 5 }));
    writer.append(row('tr_big', { cost_nano: 2n ** 63n, latency_ms: 6 }));
    writer.flush();
    const rows = Object.fromEntries(store.requestLog.query({}).map((r) => [r.trace_id, r]));
    t.match(rows['tr_ok'], { cost_nano: 40n, latency_ms: 5 });
    t.match(rows['tr_big'], { cost_nano: null, latency_ms: 6 }, 'the row is kept, without its cost');
    t.equal(errors.length, 1);
    t.match(
      errors[0],
      /^request_log_write_failed: request-log row of trace tr_big: cost_nano 9223372036854775808 is outside/,
    );
  },
);
