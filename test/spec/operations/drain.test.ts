// Graceful drain (Gateway.drain, what SIGTERM runs; the signal itself is tested in signals.test.ts):
// new connections are refused at once; a request arriving on a kept-alive connection is served and
// its connection closed; in-flight streams finish up to the deadline; past it they end with the
// protocol's error event (never the normal end), are logged `drained` and billed on the estimate; a
// request with nothing committed gets a 503; every hold is settled or released and every log row
// written before the drain resolves.
import t from 'tap';
import { Agent, request as httpRequest } from 'node:http';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { logRow, parseSse, spyWallet, USER, waitFor } from '../../helpers/inference.ts';

function streamBody(provider: string, sim: Record<string, unknown>) {
  return { model: 'acme/chat-small', messages: USER, stream: true, provider: { only: [provider] }, sim };
}

/** Starts a stream and resolves once its first content event arrived; `rest` reads it to the end. */
async function openStream(s: Stack, key: string, body: unknown): Promise<{ trace: string; rest: Promise<string> }> {
  const res = await s.post('/v1/chat/completions', body, { key });
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

function get(url: string, agent: Agent): Promise<{ status: number; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('a stream in flight finishes within the deadline; new connections are refused meanwhile', async (t) => {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 2000 } });
  const key = s.key('open');
  s.credit('open', '100');
  const stream = await openStream(s, key, streamBody('alpha', { chunks: 12, chunkDelayMs: 40 }));
  const drained = s.gw.drain(10_000);
  t.equal(s.gw.draining, true, 'draining (readiness reads it)');
  await t.rejects(fetch(`${s.url}/v1/models`), 'a new connection is refused');
  const text = await stream.rest;
  t.equal(parseSse(text).at(-1)?.data, '[DONE]', 'the stream completed normally');
  const report = await drained;
  t.match(report, { inFlightAtStart: 1, endedAtDeadline: 0, unfinished: 0 });
  t.equal((await logRow(s, stream.trace))?.ended, 'completed');
});

t.test(
  'past the deadline: the protocol error event, logged drained, billed on the estimate, holds closed',
  async (t) => {
    const s = await startStack(t, { limits: { firstByteTimeoutMs: 5000, streamIdleTimeoutMs: 5000 } });
    const key = s.key('open');
    s.credit('open', '100');
    const w = spyWallet(s);
    // alpha cancels streams, beta does not: a drain is billed on the estimate on both.
    const streams = [
      await openStream(s, key, streamBody('alpha', { chunks: 200, chunkDelayMs: 50 })),
      await openStream(s, key, streamBody('beta', { chunks: 200, chunkDelayMs: 50 })),
    ];
    // A request still waiting for its provider's first byte at the deadline.
    const waiting = s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] }, sim: { ttfbMs: 4000 } },
      { key },
    );
    t.ok(await waitFor(() => s.gw.ctx.inFlight.size === 3), 'three in flight');
    const report = await s.gw.drain(300);
    t.match(report, { inFlightAtStart: 3, endedAtDeadline: 3, unfinished: 0 });
    for (const [i, st] of streams.entries()) {
      const text = await st.rest;
      const last = parseSse(text).at(-1);
      t.match(last?.data ?? '', /"code":"gateway_shutdown"/, `stream ${i}: ends with the error event`);
      t.match(last?.data ?? '', /the gateway is shutting down; the answer is incomplete/);
      t.notMatch(text, '[DONE]', `stream ${i}: never presented as complete`);
      const row = await logRow(s, st.trace);
      t.equal(row?.ended, 'drained', `stream ${i}: logged as drained`);
      t.equal(row?.status, 200);
      t.equal(row?.error_code, 'stream_drained');
      const settled = w.settles.get(st.trace);
      t.equal(settled?.details['estimated'], true, `stream ${i}: billed on the estimate, cancellable platform or not`);
      t.ok((settled?.cost ?? 0n) < (w.holds.get(st.trace) ?? 0n));
    }
    const res = await waiting;
    const body = (await res.json()) as { error: { code: string; message: string } };
    t.equal(res.status, 503, 'nothing committed: 503');
    t.equal(body.error.code, 'provider_unavailable');
    t.match(body.error.message, /shutting down/);
    const row = await logRow(s, res.headers.get('x-pi-trace-id'));
    t.equal(row?.ended, 'drained');
    t.equal(row?.cost_nano, null, 'nothing charged');
    // Every hold settled or released, in memory and in the ledger the drain flushed.
    t.equal(s.store.wallets.show('open', s.clock.now()).held, 0n);
    t.equal(s.store.wallets.show('open', s.clock.now()).openHolds, 0);
  },
);

t.test('a request on a kept-alive connection during the drain is served, then its connection closed', async (t) => {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 2000 } });
  const key = s.key('open');
  s.credit('open', '100');
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const first = await get(`${s.url}/v1/models`, agent);
  t.equal(first.status, 200);
  t.not(first.connection, 'close', 'kept alive before the drain');
  // Something in flight keeps the drain open.
  const stream = await openStream(s, key, streamBody('alpha', { chunks: 15, chunkDelayMs: 40 }));
  const drained = s.gw.drain(10_000);
  const during = await get(`${s.url}/v1/models`, agent);
  t.equal(during.status, 200, 'served on the kept-alive connection');
  t.equal(during.connection, 'close', 'and told to close it');
  await t.rejects(get(`${s.url}/v1/models`, agent), 'the next one needs a new connection, which is refused');
  await stream.rest;
  await drained;
});

t.test('with nothing in flight the drain closes at once', async (t) => {
  const s = await startStack(t);
  const started = performance.now();
  const report = await s.gw.drain(30_000);
  t.ok(performance.now() - started < 2000, 'did not wait for the deadline');
  t.match(report, { inFlightAtStart: 0, endedAtDeadline: 0, unfinished: 0 });
  t.equal(s.gw.drain(30_000), s.gw.drain(30_000), 'one drain');
});
