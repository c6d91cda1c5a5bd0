// How each request ended, as the request log records it (src/observe/request-end.ts), for every way a
// request can end over a real server: completed, client abort (before and after the commit point),
// upstream cut (reset, malformed frame), idle timeout, write stall, drained (the drain deadline),
// failed (a provider's error passed on, or no answer), rejected (auth, rate limit, balance,
// validation, no eligible provider). Status and error code are checked beside it.
import t from 'tap';
import { startStack } from '../../helpers/stack.ts';
import { logRow, rawPost, USER, waitFor } from '../../helpers/inference.ts';

const CHAT = { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] } };

t.test('every way a request ends, in the request log', async (t) => {
  const s = await startStack(t, {
    limits: { firstByteTimeoutMs: 1000, streamIdleTimeoutMs: 300, writeStallTimeoutMs: 300 },
  });
  const key = s.key('open');
  s.credit('open', '100');
  const poor = s.key('strict');
  const slow = s.key('slow'); // 3 requests a minute
  s.credit('slow', '100');

  async function ended(
    label: string,
    res: Response,
    expected: { ended: string; status: number; error_code: string | null },
  ): Promise<void> {
    await res.text().catch(() => '');
    const row = await logRow(s, res.headers.get('x-pi-trace-id'));
    t.match(row, expected, `${label}: ${expected.ended}`);
  }

  await ended('a whole answer', await s.post('/v1/chat/completions', CHAT, { key }), {
    ended: 'completed',
    status: 200,
    error_code: null,
  });
  await ended('a whole stream', await s.post('/v1/chat/completions', { ...CHAT, stream: true }, { key }), {
    ended: 'completed',
    status: 200,
    error_code: null,
  });
  await ended(
    'provider reset after content',
    await s.post('/v1/chat/completions', { ...CHAT, stream: true, sim: { chunks: 5, resetAfterChunks: 2 } }, { key }),
    {
      ended: 'upstream_cut',
      status: 200,
      error_code: 'stream_reset',
    },
  );
  await ended(
    'malformed frame after content',
    await s.post(
      '/v1/chat/completions',
      { ...CHAT, stream: true, sim: { chunks: 5, malformedAfterChunks: 2 } },
      { key },
    ),
    {
      ended: 'upstream_cut',
      status: 200,
      error_code: 'stream_malformed',
    },
  );
  await ended(
    'provider silent after content',
    await s.post('/v1/chat/completions', { ...CHAT, stream: true, sim: { chunks: 5, stallAfterChunks: 2 } }, { key }),
    {
      ended: 'idle_timeout',
      status: 200,
      error_code: 'stream_timeout',
    },
  );
  await ended(
    'provider 400 passed on',
    await s.post('/v1/chat/completions', { ...CHAT, sim: { status: 400 } }, { key }),
    { ended: 'failed', status: 400, error_code: 'provider_error' },
  );
  await ended(
    'no provider answered',
    await s.post('/v1/chat/completions', { ...CHAT, sim: { reset: 'before_head' } }, { key }),
    {
      ended: 'failed',
      status: 503,
      error_code: 'provider_unavailable',
    },
  );
  await ended('no key', await s.post('/v1/chat/completions', CHAT), {
    ended: 'rejected',
    status: 401,
    error_code: 'invalid_api_key',
  });
  await ended('invalid body', await s.post('/v1/chat/completions', { ...CHAT, messages: 'x' }, { key }), {
    ended: 'rejected',
    status: 422,
    error_code: 'validation_failed',
  });
  await ended('no balance', await s.post('/v1/chat/completions', CHAT, { key: poor }), {
    ended: 'rejected',
    status: 402,
    error_code: 'insufficient_balance',
  });
  await ended(
    'no eligible provider',
    await s.post('/v1/chat/completions', { ...CHAT, provider: { only: ['delta'] } }, { key }),
    {
      ended: 'rejected',
      status: 404,
      error_code: 'no_eligible_provider',
    },
  );
  for (let i = 0; i < 3; i++) await (await s.post('/v1/chat/completions', CHAT, { key: slow })).text();
  await ended('rate limited', await s.post('/v1/chat/completions', CHAT, { key: slow }), {
    ended: 'rejected',
    status: 429,
    error_code: 'rate_limited',
  });

  // The client goes away before anything was committed, and after.
  const before = new AbortController();
  const pending = fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...CHAT, sim: { ttfbMs: 800 } }),
    signal: before.signal,
  }).catch(() => null);
  t.ok(await waitFor(() => s.gw.ctx.inFlight.size === 1));
  before.abort();
  await pending;
  t.ok(await waitFor(() => s.gw.ctx.inFlight.size === 0));
  s.store.requestLog.flush();
  t.match(
    s.store.requestLog.query({ limit: 1 })[0],
    { ended: 'client_abort', status: 499, error_code: 'client_aborted' },
    'client gone before the commit: client_abort',
  );
  const after = new AbortController();
  const res = await fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...CHAT, stream: true, sim: { chunks: 50, chunkDelayMs: 30 } }),
    signal: after.signal,
  });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  after.abort();
  await reader.cancel().catch(() => undefined);
  t.match(
    await logRow(s, res.headers.get('x-pi-trace-id')),
    { ended: 'client_abort', status: 200, error_code: null },
    'client gone after the commit: client_abort',
  );

  // A client that stops reading: 12 MB, more than loopback's socket buffers (which autotune to a few
  // MB) can absorb whatever the machine's load.
  s.sim.script(
    'small-v1',
    { chunks: 6000, text: Array.from({ length: 6000 }, (_, i) => `${i}${'a'.repeat(2000)}`).join(' ') },
    1,
  );
  const raw = await rawPost(`${s.url}/v1/chat/completions`, JSON.stringify({ ...CHAT, stream: true }), {
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
  });
  raw.res.pause();
  t.match(
    await logRow(s, String(raw.headers['x-pi-trace-id'])),
    { ended: 'write_stall', status: 200, error_code: 'stream_write_stall' },
    'client stopped reading: write_stall',
  );
  raw.res.destroy();

  // The drain deadline (last: it closes the server).
  const drainedRes = await s.post(
    '/v1/chat/completions',
    { ...CHAT, stream: true, sim: { chunks: 100, chunkDelayMs: 30 } },
    { key },
  );
  const dr = (drainedRes.body as ReadableStream<Uint8Array>).getReader();
  await dr.read();
  const report = s.gw.drain(50);
  while (!(await dr.read()).done) {
    // to the end
  }
  await report;
  t.match(
    await logRow(s, drainedRes.headers.get('x-pi-trace-id')),
    { ended: 'drained', status: 200, error_code: 'stream_drained' },
    'drain deadline: drained',
  );
});
