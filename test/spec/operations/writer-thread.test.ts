// The SQLite writer thread of a real `pi-gateway serve` (no disk I/O on the event loop, nothing
// charged goes unlogged): SIGKILLed mid-burst several times, every settlement in the ledger
// has its request-log row and `ledger verify` is clean; an answer the client read to its last byte
// was settled and logged before it (a SIGKILL right after it loses neither); a full writer queue
// refuses new requests with a clean 503 and the gateway recovers by itself once the writer catches up.
import t from 'tap';
import { startSimulator } from '../../../src/simulator/server.ts';
import { openDatabase } from '../../../src/store/sqlite/db.ts';
import { cli, ledgerRows } from '../../helpers/admission.ts';
import { prepareDb, startServe, type PreparedDb, type ServeProcess } from '../../helpers/serve-process.ts';

const CONFIG = 'test/fixtures/config/gateway';
const ROUNDS = 3;
const BURST = 60;
const CONCURRENCY = 20;
const KILL_AFTER = 12;

interface Sent {
  status: number | null;
  trace: string | null;
  complete: boolean;
}

async function ask(url: string, key: string, stream: boolean, i: number): Promise<Sent> {
  const sent: Sent = { status: null, trace: null, complete: false };
  try {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'acme/chat-small',
        messages: [{ role: 'user', content: `writer drill ${i}` }],
        max_tokens: 50,
        stream,
        sim: stream ? { chunks: 8, chunkDelayMs: 5 + (i % 20) } : { ttfbMs: i % 40 },
      }),
    });
    sent.status = res.status;
    sent.trace = res.headers.get('x-pi-trace-id');
    const text = await res.text();
    sent.complete =
      res.status === 200 &&
      (stream
        ? text.trimEnd().endsWith('data: [DONE]')
        : (JSON.parse(text) as { object?: string }).object === 'chat.completion');
  } catch {
    sent.complete = false;
  }
  return sent;
}

/** Request-log rows by trace: how many, and the cost each recorded. */
function logRows(file: string): Map<string, { count: number; cost: bigint | null }> {
  const db = openDatabase(file, { readonly: true });
  try {
    const rows = db.prepare('SELECT trace_id, cost_nano FROM request_log').safeIntegers(true).all() as {
      trace_id: string;
      cost_nano: bigint | null;
    }[];
    const out = new Map<string, { count: number; cost: bigint | null }>();
    for (const r of rows) out.set(r.trace_id, { count: (out.get(r.trace_id)?.count ?? 0) + 1, cost: r.cost_nano });
    return out;
  } finally {
    db.close();
  }
}

/** Resolves once one of `statuses` is a 503, or after 4 s (below the writer's 5 s busy timeout, so
 *  a lock held that long still lets the admitted requests settle once it is released). */
function firstRefusal(statuses: Promise<number | null>[]): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 4000);
    for (const s of statuses)
      void s.then(
        (status) => {
          if (status !== 503) return;
          clearTimeout(timer);
          resolve();
        },
        () => undefined,
      );
  });
}

async function burstThenKill(server: ServeProcess, key: string, round: number): Promise<Sent[]> {
  const results: Sent[] = [];
  let completed = 0;
  let killed = false;
  let next = 0;
  const watchdog = setTimeout(() => server.child.kill('SIGKILL'), 30_000);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < BURST && !killed) {
        const i = round * BURST + next++;
        const sent = await ask(server.url, key, i % 2 === 0, i);
        results.push(sent);
        if (sent.complete && ++completed === KILL_AFTER && !killed) {
          killed = true;
          server.child.kill('SIGKILL');
        }
      }
    }),
  );
  clearTimeout(watchdog);
  await server.exited;
  return results;
}

t.test(`SIGKILL mid-burst ${ROUNDS} times: every settlement has its log row, the ledger verifies`, async (t) => {
  const sim = await startSimulator({ record: false });
  t.teardown(() => sim.close());
  const db = prepareDb(t);
  const answered: Sent[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const server = await startServe(t, { config: CONFIG, db, upstream: sim.url });
    const results = await burstThenKill(server, db.key, round);
    answered.push(...results.filter((r) => r.complete));
    t.equal(
      (await server.exited).signal,
      'SIGKILL',
      `round ${round + 1}: killed mid-burst (${results.length} sent, ${results.filter((r) => r.complete).length} answered)`,
    );
  }
  // A last start releases the holds the kills left open; a clean stop.
  const last = await startServe(t, { config: CONFIG, db, upstream: sim.url });
  last.child.kill('SIGTERM');
  t.equal((await last.exited).code, 0, 'the last server stops cleanly');

  const verify = await cli(['ledger', 'verify', '--db', db.file]);
  t.equal(verify.code, 0, `ledger verify: ${verify.stdout}${verify.stderr}`);
  const ledger = ledgerRows(db.file);
  const logs = logRows(db.file);
  const settles = ledger.filter((r) => r.kind === 'settle');
  t.ok(settles.length >= ROUNDS * KILL_AFTER, `${settles.length} settlements in the ledger`);
  t.same(
    settles
      .filter((s) => logs.get(s.trace_id)?.count !== 1 || logs.get(s.trace_id)?.cost !== s.amount_nano)
      .map((s) => s.trace_id),
    [],
    'every settlement has exactly one request-log row, with its cost',
  );
  const settled = new Set(settles.map((s) => s.trace_id));
  t.same(
    answered.filter((a) => !settled.has(a.trace ?? '')).map((a) => a.trace),
    [],
    `each of the ${answered.length} answers read in full was settled`,
  );
});

t.test(
  'an answer read to its last byte was settled and logged before it: SIGKILL right after loses neither',
  async (t) => {
    const sim = await startSimulator({ record: false });
    t.teardown(() => sim.close());
    const db = prepareDb(t);
    const traces: string[] = [];
    for (const stream of [false, true]) {
      const server = await startServe(t, { config: CONFIG, db, upstream: sim.url });
      const sent = await ask(server.url, db.key, stream, 7);
      server.child.kill('SIGKILL');
      await server.exited;
      t.ok(sent.complete, `${stream ? 'stream' : 'JSON answer'} read in full`);
      traces.push(sent.trace ?? '');
    }
    const ledger = ledgerRows(db.file);
    const logs = logRows(db.file);
    for (const trace of traces) {
      const settle = ledger.find((r) => r.kind === 'settle' && r.trace_id === trace);
      t.ok(settle, `${trace}: settled`);
      t.equal(logs.get(trace)?.count, 1, `${trace}: logged once`);
      t.equal(logs.get(trace)?.cost, settle?.amount_nano, `${trace}: the log row has the charge`);
    }
  },
);

t.test('a full writer queue refuses new requests with 503 provider_unavailable, then recovers', async (t) => {
  const sim = await startSimulator({ record: false });
  t.teardown(() => sim.close());
  const db: PreparedDb = prepareDb(t);
  const server = await startServe(t, { config: CONFIG, db, upstream: sim.url, env: { PI_WRITER_QUEUE: '3' } });
  const warm = await ask(server.url, db.key, false, 1);
  t.equal(warm.status, 200, 'answers before the writer is blocked');

  // Another connection takes the write lock: the writer thread waits for it (busy timeout), its
  // queue fills, and the serving thread — which never waits on the disk — keeps answering.
  const locker = openDatabase(db.file);
  locker.exec('BEGIN IMMEDIATE');
  const started = performance.now();
  const burst = Array.from({ length: 12 }, (_, i) => ask(server.url, db.key, false, 100 + i));
  const refused: Sent[] = [];
  const early = await Promise.race([Promise.all(burst), new Promise<null>((r) => setTimeout(() => r(null), 1200))]);
  t.equal(early, null, 'admitted requests wait for their settlement while the writer is blocked');
  // The lock stays until the queue has refused one, however slowly a loaded machine delivers the burst.
  await firstRefusal(burst.map((p) => p.then((r) => r.status)));
  locker.exec('ROLLBACK');
  locker.close();
  const results = await Promise.all(burst);
  for (const r of results) if (r.status === 503) refused.push(r);
  t.ok(refused.length > 0, `${refused.length} of 12 refused while the queue was full`);
  t.ok(
    results.every((r) => r.status === 200 || r.status === 503),
    `the rest answered: ${results.map((r) => r.status).join(',')}`,
  );
  t.ok(performance.now() - started < 6000, 'everything came back within the busy timeout');

  // The refused requests' log rows are still on their way to the writer for a moment after their
  // answers (they never hold an answer back), so the queue frees up shortly after the burst, not
  // at once: ask until it does, within a bound.
  let after = 0;
  for (let attempt = 0; attempt < 50 && after !== 200; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, 100));
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${db.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'acme/chat-small',
        messages: [{ role: 'user', content: 'refused?' }],
        max_tokens: 5,
      }),
    });
    await res.text();
    after = res.status;
    if (after !== 200 && after !== 503) break;
  }
  t.equal(after, 200, 'a request after the writer caught up is answered');

  // What a refusal looks like.
  const locker2 = openDatabase(db.file);
  locker2.exec('BEGIN IMMEDIATE');
  const more = Array.from({ length: 8 }, (_, i) =>
    fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${db.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'acme/chat-small', messages: [{ role: 'user', content: `x${i}` }], max_tokens: 5 }),
    }),
  );
  await firstRefusal(more.map((p) => p.then((r) => r.status)));
  locker2.exec('ROLLBACK');
  locker2.close();
  const answers = await Promise.all(more);
  const one = answers.find((a) => a.status === 503);
  t.ok(one, 'a refusal');
  if (one) {
    t.equal(one.headers.get('retry-after'), '1', 'with Retry-After: 1');
    const body = (await one.json()) as { error: { code: string } };
    t.equal(body.error.code, 'provider_unavailable', 'code provider_unavailable');
  }
  await Promise.all(answers.map((a) => (a.bodyUsed ? null : a.text())));

  server.child.kill('SIGTERM');
  t.equal((await server.exited).code, 0, 'stops cleanly');
  const verify = await cli(['ledger', 'verify', '--db', db.file]);
  t.equal(verify.code, 0, `ledger verify: ${verify.stdout}${verify.stderr}`);
});
