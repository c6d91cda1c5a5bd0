// `pi-gateway serve` under signals, as a real process: SIGTERM drains (a slow stream in flight
// completes within the deadline; past the deadline it ends with the protocol's error event and the log
// says `drained`), exits 0 with every hold closed and every log row written; a second signal exits at
// once, and the holds it left are released at the next start.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { startSimulator } from '../../../src/simulator/server.ts';
import { openStore } from '../../../src/store/sqlite/store.ts';
import { FIXTURES } from '../../helpers/stack.ts';
import { openHolds, patchedFixture, USER } from '../../helpers/admission.ts';
import { parseSse } from '../../helpers/inference.ts';
import { prepareDb, startServe, type ServeProcess } from '../../helpers/serve-process.ts';

async function simulator(t: Test) {
  const sim = await startSimulator({});
  t.teardown(() => sim.close());
  return sim;
}

/** Starts a chat stream and resolves once its first content event arrived; `rest` reads to the end. */
async function openStream(
  p: ServeProcess,
  key: string,
  sim: Record<string, unknown>,
): Promise<{ trace: string; rest: Promise<string> }> {
  const res = await fetch(`${p.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'acme/chat-small',
      messages: USER,
      stream: true,
      provider: { only: ['alpha'] },
      sim,
    }),
  });
  const trace = res.headers.get('x-pi-trace-id') ?? '';
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  let text = '';
  while (!/"content":"[^"]/.test(text)) {
    const r = await reader.read();
    if (r.done) break;
    text += dec.decode(r.value, { stream: true });
  }
  const rest = (async () => {
    for (;;) {
      const r = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (r.done) return text;
      text += dec.decode(r.value, { stream: true });
    }
  })();
  return { trace, rest };
}

/** The request-log row of a trace, read from the database file after the server exited. */
function rowOf(file: string, masterKey: string, trace: string) {
  const store = openStore(file, { masterKey, readonly: true });
  try {
    return store.requestLog.query({ limit: 1000 }).find((r) => r.trace_id === trace);
  } finally {
    store.close();
  }
}

function ledgerOk(file: string, masterKey: string): boolean {
  const store = openStore(file, { masterKey, readonly: true });
  try {
    return store.wallets.verify().ok;
  } finally {
    store.close();
  }
}

const CONFIG = join(FIXTURES, 'gateway');

t.test('SIGTERM: a slow stream in flight completes within the deadline, then exit 0', async (t) => {
  const sim = await simulator(t);
  const db = prepareDb(t);
  const p = await startServe(t, { config: CONFIG, db, upstream: sim.url });
  const stream = await openStream(p, db.key, { chunks: 15, chunkDelayMs: 60 });
  p.child.kill('SIGTERM');
  t.ok(await p.waitForEvent('draining'), 'draining');
  await t.rejects(fetch(`${p.url}/v1/models`), 'new connections are refused while draining');
  const text = await stream.rest;
  t.equal(parseSse(text).at(-1)?.data, '[DONE]', 'the stream completed');
  const exit = await p.exited;
  t.equal(exit.code, 0, 'exit 0');
  t.match(rowOf(db.file, db.masterKey, stream.trace), { ended: 'completed', status: 200 }, 'its log row was written');
  t.same([...openHolds(db.file).keys()], [], 'no hold left open');
  t.ok(ledgerOk(db.file, db.masterKey), 'ledger verify ok');
});

t.test('SIGTERM past the drain deadline: the error event, logged drained, exit 0, holds closed', async (t) => {
  const sim = await simulator(t);
  const config = join(
    FIXTURES,
    patchedFixture(t, 'gateway', { 'gateway.yaml': [['limits:\n', 'limits:\n  drain_timeout_ms: 300\n']] }),
  );
  const db = prepareDb(t);
  const p = await startServe(t, { config, db, upstream: sim.url });
  const stream = await openStream(p, db.key, { chunks: 200, chunkDelayMs: 50 });
  const signalledAt = performance.now();
  p.child.kill('SIGTERM');
  const text = await stream.rest;
  const last = parseSse(text).at(-1);
  t.match(last?.data ?? '', /"code":"gateway_shutdown"/, 'ended with the protocol’s error event');
  t.notMatch(text, '[DONE]', 'never presented as complete');
  const exit = await p.exited;
  t.equal(exit.code, 0, 'exit 0');
  t.ok(exit.atMs - signalledAt < 5000, 'within the deadline and a short wind-down');
  const row = rowOf(db.file, db.masterKey, stream.trace);
  t.equal(row?.ended, 'drained', 'the log says drained');
  t.equal(row?.error_code, 'stream_drained');
  t.ok((row?.cost_nano ?? 0n) > 0n, 'billed (on the estimate)');
  t.same([...openHolds(db.file).keys()], [], 'no hold left open');
  t.ok(ledgerOk(db.file, db.masterKey));
  t.ok(p.events.some((e) => e.event === 'drained' && e['ended_at_deadline'] === 1));
});

t.test('a second signal exits at once; the next start releases what it left open', async (t) => {
  const sim = await simulator(t);
  const db = prepareDb(t);
  const p = await startServe(t, { config: CONFIG, db, upstream: sim.url });
  const stream = await openStream(p, db.key, { chunks: 400, chunkDelayMs: 50 });
  p.child.kill('SIGTERM');
  t.ok(await p.waitForEvent('draining'), 'draining, with a 30 s deadline');
  const second = performance.now();
  p.child.kill('SIGTERM');
  const exit = await p.exited;
  t.equal(exit.code, 1, 'exit 1: not a clean drain');
  t.ok(exit.atMs - second < 2000, `exited at once (${Math.round(exit.atMs - second)} ms)`);
  await stream.rest;
  t.equal(openHolds(db.file).size, 1, 'the stream’s hold is still open');
  // The OS released the lock with the process: a new server starts and releases the orphan.
  const again = await startServe(t, { config: CONFIG, db, upstream: sim.url });
  t.ok(
    again.events.some((e) => e.event === 'released_orphaned_holds' && e['count'] === 1),
    'released at the next start',
  );
  t.equal(openHolds(db.file).size, 0);
  again.child.kill('SIGINT');
  t.equal((await again.exited).code, 0, 'SIGINT drains like SIGTERM');
});
