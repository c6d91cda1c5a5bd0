// Billing effects of inference requests, seen through the wallet and the request log: usage read
// from the JSON body or the stream's usage frame (Messages: message_start + message_delta) settles
// the hold exactly; reasoning tokens are billed at internal_reasoning; a failed request costs
// nothing; a cut stream is billed on an estimate; a client abort follows the platform's
// supports_stream_cancellation (src/billing/settlement.ts).
import t, { type Test } from 'tap';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { logRow, parseSse, spyWallet, USER, waitFor, type WalletSpy } from '../../helpers/inference.ts';

const CREDIT = 100_000_000_000n; // $100 in nano-USD

async function stack(t: Test, limits: Record<string, number> = {}): Promise<{ s: Stack; key: string; w: WalletSpy }> {
  const s = await startStack(t, {
    config: 'proxy',
    limits: { firstByteTimeoutMs: 500, streamIdleTimeoutMs: 300, ...limits },
  });
  const key = s.key('open');
  s.credit('open', '100');
  return { s, key, w: spyWallet(s) };
}

/** Runs one request to its end and returns its trace id, the body text and its settled cost. */
async function run(
  s: Stack,
  w: WalletSpy,
  path: string,
  body: Record<string, unknown>,
  key: string,
): Promise<{ res: Response; text: string; trace: string; cost: bigint | null }> {
  const res = await s.post(path, body, { key });
  const text = await res.text();
  const trace = res.headers.get('x-pi-trace-id') ?? '';
  await logRow(s, trace);
  return { res, text, trace, cost: w.settles.get(trace)?.cost ?? null };
}

function spent(s: Stack): bigint {
  const v = s.store.wallets.show('open', s.clock.now());
  return CREDIT - v.balance;
}

t.test('usage from the JSON body and from the stream usage frame settles the hold exactly', async (t) => {
  const { s, key, w } = await stack(t);
  const usage = { prompt: 1000, completion: 500 };
  // alpha list price: prompt $0.000001 (1000 nano), completion $0.000002 (2000 nano) per token.
  const expected = 1000n * 1000n + 500n * 2000n;
  let before = spent(s);
  for (const stream of [false, true]) {
    const r = await run(
      s,
      w,
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, stream, provider: { only: ['alpha'] }, sim: { usage } },
      key,
    );
    t.equal(r.res.status, 200);
    t.equal(r.cost, expected, `chat ${stream ? 'stream' : 'JSON'}: exact cost`);
    t.equal(spent(s) - before, expected, 'the wallet paid exactly that');
    before = spent(s);
    t.ok((w.holds.get(r.trace) ?? 0n) >= expected, 'the hold covered it');
    const row = await logRow(s, r.trace);
    t.equal(row?.prompt_tokens, 1000);
    t.equal(row?.completion_tokens, 500);
    t.equal(row?.cost_nano, expected);
    t.notOk(w.settles.get(r.trace)?.details['estimated'], 'not an estimate');
  }
  // Responses: usage from the body and from response.completed.
  for (const stream of [false, true]) {
    const r = await run(
      s,
      w,
      '/v1/responses',
      { model: 'acme/chat-small', input: 'hi', stream, provider: { only: ['alpha'] }, sim: { usage } },
      key,
    );
    t.equal(r.cost, expected, `responses ${stream ? 'stream' : 'JSON'}`);
  }
  // Discounted channel: beta lists chat-small 25% off until 2026-02-01.
  const r = await run(
    s,
    w,
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, provider: { only: ['beta'] }, sim: { usage } },
    key,
  );
  t.equal(r.cost, (expected * 75n) / 100n, 'the channel price in effect');
  const v = s.store.wallets.show('open', s.clock.now());
  t.equal(v.held, 0n);
  t.equal(v.openHolds, 0);
});

t.test('Messages: message_start and message_delta usage, cache reads and writes', async (t) => {
  const { s, key, w } = await stack(t);
  // sonnet-ish: prompt 3000, completion 15000, cache read 300, cache write 3750 nano per token.
  const usage = { prompt: 100, completion: 40, cached: 50, cacheWrite: 20 };
  const expected = 100n * 3000n + 50n * 300n + 20n * 3750n + 40n * 15000n;
  for (const stream of [false, true]) {
    for (const provider of ['delta', 'gcp']) {
      const r = await run(
        s,
        w,
        '/v1/messages',
        {
          model: 'beta-labs/sonnet-ish',
          max_tokens: 100,
          messages: USER,
          stream,
          provider: { only: [provider] },
          sim: { usage },
        },
        key,
      );
      t.equal(r.res.status, 200);
      t.equal(
        r.cost,
        expected,
        `${provider} ${stream ? 'stream' : 'JSON'}: input from message_start, output from message_delta`,
      );
      const row = await logRow(s, r.trace);
      t.equal(row?.prompt_tokens, 170, 'input + cache read + cache write');
      t.equal(row?.completion_tokens, 40, 'the final output count, not message_start’s');
      t.equal(row?.cached_tokens, 50);
    }
  }
});

t.test('reasoning tokens are reported and billed at internal_reasoning', async (t) => {
  const { s, key, w } = await stack(t);
  // reasoner (proxy fixture): prompt 2000, completion 8000, internal_reasoning 16000 nano per token.
  const usage = { prompt: 100, completion: 300, reasoning: 200 };
  const expected = 100n * 2000n + 100n * 8000n + 200n * 16000n;
  for (const stream of [false, true]) {
    const r = await run(
      s,
      w,
      '/v1/chat/completions',
      { model: 'acme/reasoner', messages: USER, stream, provider: { only: ['alpha'] }, sim: { usage } },
      key,
    );
    t.equal(r.cost, expected, `chat ${stream ? 'stream' : 'JSON'}`);
    const u = stream
      ? (
          JSON.parse(parseSse(r.text).at(-2)?.data ?? '{}') as {
            usage: { completion_tokens_details: { reasoning_tokens: number } };
          }
        ).usage
      : (JSON.parse(r.text) as { usage: { completion_tokens_details: { reasoning_tokens: number } } }).usage;
    t.equal(
      u.completion_tokens_details.reasoning_tokens,
      200,
      'usage.completion_tokens_details.reasoning_tokens reaches the client',
    );
    const row = await logRow(s, r.trace);
    t.equal(row?.reasoning_tokens, 200);
    t.equal(w.settles.get(r.trace)?.details['reasoningTokens'], 200);
  }
  const r = await run(
    s,
    w,
    '/v1/responses',
    { model: 'acme/reasoner', input: 'x', stream: true, provider: { only: ['alpha'] }, sim: { usage } },
    key,
  );
  t.equal(r.cost, expected, 'responses stream: output_tokens_details.reasoning_tokens');
});

t.test('a failed request with no billable answer costs nothing', async (t) => {
  const { s, key, w } = await stack(t);
  const cases: [string, Record<string, unknown>, number][] = [
    ['provider 400', { status: 400 }, 400],
    ['provider 500 everywhere', { status: 500 }, 500],
    ['provider 401', { status: 401 }, 503],
    ['reset before head', { reset: 'before_head' }, 503],
    ['in-band error', { inbandError: true }, 503],
    ['preamble only', { preambleOnly: true }, 503],
    ['too slow', { ttfbMs: 1500 }, 503],
  ];
  for (const [what, sim, status] of cases) {
    for (const stream of [false, true]) {
      if (!stream && (what === 'in-band error' || what === 'preamble only')) continue;
      const r = await run(
        s,
        w,
        '/v1/chat/completions',
        { model: 'acme/chat-small', messages: USER, stream, provider: { only: ['alpha'] }, sim },
        key,
      );
      t.equal(r.res.status, status, `${what}${stream ? ' (stream)' : ''}`);
      t.equal(r.cost, null, `${what}: nothing settled`);
      t.ok(w.releases.has(r.trace), `${what}: the hold was released`);
      const row = await logRow(s, r.trace);
      t.equal(row?.cost_nano, null);
    }
  }
  t.equal(spent(s), 0n, 'the wallet is untouched');
  s.gw.ctx.wallets.flush(); // the wallet book writes in batches
  t.equal(s.store.wallets.show('open', s.clock.now()).held, 0n);
});

t.test('a stream cut after it started is billed on an estimate', async (t) => {
  const { s, key, w } = await stack(t);
  const r = await run(
    s,
    w,
    '/v1/chat/completions',
    {
      model: 'acme/chat-small',
      messages: USER,
      stream: true,
      provider: { only: ['alpha'] },
      sim: { chunks: 6, resetAfterChunks: 3 },
    },
    key,
  );
  t.equal(r.res.status, 200);
  const settled = w.settles.get(r.trace);
  t.ok(settled, 'settled');
  t.equal(settled?.details['estimated'], true, 'flagged as an estimate');
  t.equal(settled?.details['completionTokens'], 3, 'one token per relayed content event');
  t.ok((settled?.cost ?? 0n) > 0n && (settled?.cost ?? 0n) < (w.holds.get(r.trace) ?? 0n));
});

t.test('client abort mid-stream: billed per supports_stream_cancellation', async (t) => {
  const { s, key, w } = await stack(t, { streamIdleTimeoutMs: 5000 });
  for (const [provider, cancellable] of [
    ['alpha', true],
    ['beta', false],
  ] as const) {
    const ac = new AbortController();
    const res = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'acme/chat-small',
        messages: USER,
        stream: true,
        provider: { only: [provider] },
        sim: { chunks: 40, chunkDelayMs: 50 },
      }),
      signal: ac.signal,
    });
    const trace = res.headers.get('x-pi-trace-id') ?? '';
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let seen = '';
    while (!/"content":"[^"]/.test(seen)) seen += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    await reader.cancel().catch(() => undefined);
    t.ok(await waitFor(() => w.settles.has(trace)), `${provider}: settled after the abort`);
    const settled = w.settles.get(trace);
    const hold = w.holds.get(trace) ?? 0n;
    if (cancellable) {
      t.ok(
        (settled?.cost ?? 0n) < hold,
        `${provider} stops billing on abort: billed for what was relayed, not the hold`,
      );
      t.equal(settled?.details['estimated'], true);
    } else {
      t.equal(settled?.cost, hold, `${provider} keeps generating after an abort: billed the hold`);
      t.equal(settled?.details['basis'], 'hold_uncancellable_abort');
    }
    const row = await logRow(s, trace);
    t.equal(row?.status, 200);
    t.equal(row?.error_code, null, 'a client abort is not a stream error');
  }
});
