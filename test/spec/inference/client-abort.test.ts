// A client that goes away cancels the upstream at once: mid-stream, before the first byte, and while
// waiting for a JSON answer. The simulator cannot report when its side of a connection closed, so
// the "upstream sees its connection closed" claims use a hand-written node:http upstream; the
// simulator runs show the gateway aborting its upstream read and stopping to receive data.
import t from 'tap';
import { startStack } from '../../helpers/stack.ts';
import { handUpstream, logRow, spyUpstream, USER, waitFor } from '../../helpers/inference.ts';

function streamPost(url: string, key: string, body: unknown, signal: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
}

t.test('abort mid-stream: the gateway aborts its upstream at once (simulator)', async (t) => {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 2000 } });
  const key = s.key('open');
  s.credit('open', '100');
  const spy = spyUpstream(s);
  for (const [path, body] of [
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: USER, stream: true, provider: { only: ['alpha'] } }],
    [
      '/v1/messages',
      { model: 'beta-labs/sonnet-ish', max_tokens: 1000, messages: USER, stream: true, provider: { only: ['delta'] } },
    ],
    ['/v1/responses', { model: 'acme/chat-small', input: 'x', stream: true, provider: { only: ['alpha'] } }],
  ] as const) {
    const abortsBefore = spy.aborts.length;
    const ac = new AbortController();
    const res = await streamPost(
      `${s.url}${path}`,
      key,
      { ...body, sim: { chunks: 100, chunkDelayMs: 40 } },
      ac.signal,
    );
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const abortedAt = performance.now();
    ac.abort();
    await reader.cancel().catch(() => undefined);
    t.ok(await waitFor(() => spy.aborts.length > abortsBefore, 1000), `${path}: the upstream was aborted`);
    const took = (spy.aborts.at(-1)?.at ?? Infinity) - abortedAt;
    t.ok(took < 200, `${path}: within ${Math.round(took)} ms of the client going away`);
    const dataAtAbort = spy.dataAt.length;
    await new Promise((r) => setTimeout(r, 300));
    t.equal(spy.dataAt.length, dataAtAbort, `${path}: no upstream data after the abort`);
    const row = await logRow(s, res.headers.get('x-pi-trace-id'));
    t.equal(row?.status, 200);
  }
});

t.test(
  'abort mid-stream, before the first byte, and during a JSON wait: the upstream connection closes promptly',
  async (t) => {
    const s = await startStack(t, { limits: { firstByteTimeoutMs: 5000, streamIdleTimeoutMs: 5000 } });
    const key = s.key('open');
    s.credit('open', '100');
    const up = await handUpstream(t, (req, res) => {
      const mode = req.headers['x-title'];
      if (mode === 'silent') return; // never answers
      if (mode === 'json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return; // head only, the body never comes
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let i = 0;
      const timer = setInterval(() => {
        res.write(
          `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"w${i++} "},"finish_reason":null}]}\n\n`,
        );
      }, 30);
      res.on('close', () => clearInterval(timer));
    });
    s.gw.ctx.upstreamOverride = new URL(up.url);
    for (const mode of ['stream', 'silent', 'json']) {
      const ac = new AbortController();
      const body = { model: 'acme/chat-small', messages: USER, stream: mode !== 'json', provider: { only: ['alpha'] } };
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-title': mode };
      const pending = fetch(`${s.url}/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        signal: ac.signal,
      });
      const seenBefore = up.seen.length;
      let trace: string | null = null;
      if (mode === 'stream') {
        const res = await pending;
        trace = res.headers.get('x-pi-trace-id');
        const reader = (res.body as ReadableStream<Uint8Array>).getReader();
        await reader.read();
        await reader.read();
      } else {
        pending.catch(() => undefined);
        t.ok(await waitFor(() => up.seen.length > seenBefore), `${mode}: the upstream got the request`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const entry = up.seen.at(-1);
      const abortedAt = performance.now();
      ac.abort();
      t.ok(await waitFor(() => entry?.closedAt !== null, 1000), `${mode}: the upstream connection closed`);
      const took = (entry?.closedAt ?? Infinity) - abortedAt;
      t.ok(took < 300, `${mode}: ${Math.round(took)} ms after the client went away`);
      if (trace) {
        const row = await logRow(s, trace);
        t.equal(row?.status, 200, 'a committed stream cut by the client keeps its status');
      }
    }
    // Aborts before an answer: nothing charged, the holds released, logged as client_aborted.
    s.store.requestLog.flush();
    const rows = s.store.requestLog.query({ limit: 3 }).slice(1);
    t.same(
      rows.map((r) => [r.status, r.error_code, r.cost_nano]),
      [
        [499, 'client_aborted', null],
        [499, 'client_aborted', null],
      ],
    );
    t.ok(await waitFor(() => s.store.wallets.show('open', s.clock.now()).held === 0n), 'no hold left open');
  },
);
