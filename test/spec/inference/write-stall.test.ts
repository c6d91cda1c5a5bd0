// Slow readers: a client that takes no bytes of a committed stream for the write-stall limit
// (gateway.yaml limits.write_stall_timeout_ms, short here) is cut. The upstream is cancelled, the
// protocol's error event is queued behind what the client has not read — it gets it, and no normal end
// marker, if it reads again — and the request is logged as `write_stall`, billed like a client abort
// (the estimate where the platform cancels streams, the hold where it does not). A client that is
// merely slow (it drains within the limit) is never cut.
import t from 'tap';
import type { IncomingMessage } from 'node:http';
import { startStack } from '../../helpers/stack.ts';
import { logRow, parseSse, rawPost, spyUpstream, spyWallet, USER, waitFor } from '../../helpers/inference.ts';

const WORD = 'a'.repeat(2000);

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.resume();
  });
}

t.test('a client that stops reading is cut after the write-stall limit, on every protocol', async (t) => {
  const s = await startStack(t, {
    config: 'proxy',
    limits: { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 2000, writeStallTimeoutMs: 300 },
  });
  const key = s.key('open');
  s.credit('open', '100');
  const spy = spyUpstream(s);
  const w = spyWallet(s);
  const n = 6000;
  const text = Array.from({ length: n }, (_, i) => `${i}${WORD}`).join(' ');
  for (const [path, body, upstreamModel, endEvent] of [
    [
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, stream: true, provider: { only: ['alpha'] } },
      'small-v1',
      /"code":"write_stall"/,
    ],
    [
      '/v1/messages',
      {
        model: 'beta-labs/sonnet-ish',
        max_tokens: 100_000,
        messages: USER,
        stream: true,
        provider: { only: ['delta'] },
      },
      'sonnet-ish-20250101',
      /^event: error/,
    ],
    [
      '/v1/responses',
      { model: 'acme/chat-small', input: 'x', stream: true, provider: { only: ['alpha'] } },
      'small-v1',
      /"code":"write_stall"/,
    ],
  ] as const) {
    const abortsBefore = spy.aborts.length;
    // About 12 MB in one burst: more than loopback's socket buffers (which autotune to a few MB) hold.
    s.sim.script(upstreamModel, { chunks: n, text }, 1);
    const raw = await rawPost(`${s.url}${path}`, JSON.stringify(body), {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
    });
    t.equal(raw.status, 200);
    raw.res.pause();
    const trace = String(raw.headers['x-pi-trace-id']);
    const row = await logRow(s, trace, 5000);
    t.equal(row?.ended, 'write_stall', `${path}: logged as a write stall`);
    t.equal(row?.status, 200);
    t.equal(row?.error_code, 'stream_write_stall');
    t.ok(spy.aborts.length > abortsBefore, `${path}: the upstream was cancelled`);
    t.match(spy.aborts.at(-1)?.reason ?? '', /the client took no bytes for 300 ms/);
    const settled = w.settles.get(trace);
    t.equal(settled?.details['estimated'], true, `${path}: billed on the estimate (the platform cancels streams)`);
    t.ok((settled?.cost ?? 0n) < (w.holds.get(trace) ?? 0n), `${path}: less than the hold`);
    // The client reads again before the server library drops it: everything, then the error event.
    const got = await readAll(raw.res);
    const events = parseSse(got);
    const last = events.at(-1);
    t.match(
      `${last?.event === null ? '' : `event: ${last?.event}\n`}data: ${last?.data ?? ''}`,
      endEvent,
      `${path}: the protocol's error event is the last thing it gets`,
    );
    t.match(last?.data ?? '', /took no bytes for 300 ms; the answer is incomplete/);
    t.notMatch(got, /\[DONE\]|message_stop|response\.completed/, `${path}: never presented as complete`);
  }
});

t.test('a write stall on a platform that cannot cancel streams is billed at the hold', async (t) => {
  const s = await startStack(t, {
    config: 'proxy',
    limits: { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 2000, writeStallTimeoutMs: 300 },
  });
  const key = s.key('open');
  s.credit('open', '100');
  const w = spyWallet(s);
  s.sim.script(
    'small-beta',
    { chunks: 6000, text: Array.from({ length: 6000 }, (_, i) => `${i}${WORD}`).join(' ') },
    1,
  );
  const raw = await rawPost(
    `${s.url}/v1/chat/completions`,
    JSON.stringify({ model: 'acme/chat-small', messages: USER, stream: true, provider: { only: ['beta'] } }),
    {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
    },
  );
  raw.res.pause();
  const trace = String(raw.headers['x-pi-trace-id']);
  t.equal((await logRow(s, trace))?.ended, 'write_stall');
  t.ok(await waitFor(() => w.settles.has(trace)));
  t.equal(w.settles.get(trace)?.cost, w.holds.get(trace), 'the hold: the provider keeps generating');
  t.equal(w.settles.get(trace)?.details['basis'], 'hold_uncancellable_abort');
  raw.res.destroy();
});

t.test('a slow reader that keeps draining within the limit is never cut', async (t) => {
  const s = await startStack(t, {
    config: 'proxy',
    limits: { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 2000, writeStallTimeoutMs: 1500 },
  });
  const key = s.key('open');
  s.credit('open', '100');
  const spy = spyUpstream(s);
  // About 12 MB: more than loopback's socket buffers can absorb (send buffers grow to 4 MB, receive
  // buffers further), so the gateway's writes really wait on this reader.
  s.sim.script('small-v1', { chunks: 6000, text: Array.from({ length: 6000 }, (_, i) => `${i}${WORD}`).join(' ') }, 1);
  const raw = await rawPost(
    `${s.url}/v1/chat/completions`,
    JSON.stringify({ model: 'acme/chat-small', messages: USER, stream: true, provider: { only: ['alpha'] } }),
    {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
    },
  );
  // Stop reading for 250 ms (under the limit) at the start, before the receive buffer has grown, and
  // after every megabyte.
  const chunks: Buffer[] = [];
  let sincePause = 0;
  let pauses = 0;
  await new Promise<void>((resolve) => {
    raw.res.on('data', (c: Buffer) => {
      chunks.push(c);
      sincePause += c.length;
      if (pauses === 0 || sincePause > 1 << 20) {
        sincePause = 0;
        pauses++;
        raw.res.pause();
        setTimeout(() => raw.res.resume(), 250);
      }
    });
    raw.res.on('end', () => resolve());
  });
  t.ok(pauses >= 3 && spy.pauses > 0, `the client paused ${pauses} times and the gateway waited on it`);
  const got = Buffer.concat(chunks).toString('utf8');
  t.equal(parseSse(got).at(-1)?.data, '[DONE]', 'the normal end');
  const row = await logRow(s, String(raw.headers['x-pi-trace-id']));
  t.equal(row?.ended, 'completed');
});
