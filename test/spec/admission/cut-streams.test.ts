// Billing of streams that did not reach their normal end, on all three protocols: a provider cut after
// content and a client abort after content are billed on the documented estimate (one output token per
// content event; the prompt from the provider's own input count when it stated one — Messages'
// message_start — else request bytes / 4), flagged `estimated`; a provisional figure from a stream's
// first event (message_start's `output_tokens: 1`) is never taken as the answer's count. The request
// log says how each ended.
import t, { type Test } from 'tap';
import { estimatedPromptTokens } from '../../../src/billing/settlement.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { logRow, spyWallet, USER, waitFor, type WalletSpy } from '../../helpers/inference.ts';

interface Case {
  name: string;
  path: string;
  body: Record<string, unknown>;
  /** Nano-USD per prompt / completion token of the deployment the case is pinned to. */
  price: { prompt: bigint; completion: bigint };
  /** Whether the provider states its input count at the start of the stream (Messages). */
  inputAtStart: boolean;
}

// Proxy fixture prices: alpha chat-small prompt 1000, completion 2000 nano per token; sonnet-ish on
// delta prompt 3000, completion 15000, cache read 300, cache write 3750.
const CASES: Case[] = [
  {
    name: 'chat',
    path: '/v1/chat/completions',
    body: { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] } },
    price: { prompt: 1000n, completion: 2000n },
    inputAtStart: false,
  },
  {
    name: 'responses',
    path: '/v1/responses',
    body: { model: 'acme/chat-small', input: 'hello there', provider: { only: ['alpha'] } },
    price: { prompt: 1000n, completion: 2000n },
    inputAtStart: false,
  },
  {
    name: 'messages',
    path: '/v1/messages',
    body: { model: 'beta-labs/sonnet-ish', max_tokens: 1000, messages: USER, provider: { only: ['delta'] } },
    price: { prompt: 3000n, completion: 15000n },
    inputAtStart: true,
  },
];

/** What the simulator reports: input 100 (+50 cache read, +20 cache write on Messages), output 40. */
const USAGE = { prompt: 100, completion: 40, cached: 50, cacheWrite: 20 };
/** Messages' input side at these counts: 100 × 3000 + 50 × 300 + 20 × 3750 nano. */
const MESSAGES_INPUT_COST = 100n * 3000n + 50n * 300n + 20n * 3750n;

async function stack(t: Test): Promise<{ s: Stack; key: string; w: WalletSpy }> {
  const s = await startStack(t, { config: 'proxy', limits: { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 2000 } });
  const key = s.key('open');
  s.credit('open', '100');
  return { s, key, w: spyWallet(s) };
}

/** The estimate's expected cost: its prompt side (the provider's, or bytes / 4) plus `events` output tokens. */
function expectedCost(c: Case, requestBytes: number, events: number): bigint {
  const input = c.inputAtStart ? MESSAGES_INPUT_COST : BigInt(estimatedPromptTokens(requestBytes)) * c.price.prompt;
  return input + BigInt(events) * c.price.completion;
}

t.test('a stream the provider cuts after content is billed on the estimate, on every protocol', async (t) => {
  const { s, key, w } = await stack(t);
  for (const c of CASES) {
    const body = { ...c.body, stream: true, sim: { chunks: 6, resetAfterChunks: 3, usage: USAGE } };
    const res = await s.post(c.path, body, { key });
    const text = await res.text();
    const trace = res.headers.get('x-pi-trace-id') ?? '';
    t.equal(res.status, 200, `${c.name}: committed`);
    t.match(text, /incomplete/, `${c.name}: the stream ended with the protocol's error event`);
    const row = await logRow(s, trace);
    t.ok(await waitFor(() => w.settles.has(trace)), `${c.name}: settled`);
    const settled = w.settles.get(trace);
    t.equal(settled?.details['estimated'], true, `${c.name}: flagged as an estimate`);
    t.equal(
      settled?.details['completionTokens'],
      3,
      `${c.name}: one output token per content event, not a provisional count`,
    );
    const bytes = Buffer.byteLength(JSON.stringify(body));
    if (c.inputAtStart) {
      t.equal(
        settled?.details['promptTokens'],
        170,
        `${c.name}: the prompt the provider stated in message_start (input + cache read + cache write)`,
      );
      t.equal(settled?.details['cachedTokens'], 50, `${c.name}: cache reads at their own price`);
    } else {
      t.equal(
        settled?.details['promptTokens'],
        estimatedPromptTokens(bytes),
        `${c.name}: the prompt estimated from the request bytes`,
      );
    }
    t.equal(settled?.cost, expectedCost(c, bytes, 3), `${c.name}: cost of the estimate`);
    t.equal(row?.ended, 'upstream_cut', `${c.name}: logged as an upstream cut`);
    t.equal(row?.status, 200);
    t.equal(row?.error_code, 'stream_reset');
    t.equal(row?.completion_tokens, 3);
    t.equal(row?.cost_nano, settled?.cost);
  }
});

t.test('a client abort after content is billed on the estimate where the platform cancels streams', async (t) => {
  const { s, key, w } = await stack(t);
  for (const c of CASES) {
    const body = { ...c.body, stream: true, sim: { chunks: 60, chunkDelayMs: 40, usage: USAGE } };
    const ac = new AbortController();
    const res = await fetch(`${s.url}${c.path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: ac.signal,
    });
    const trace = res.headers.get('x-pi-trace-id') ?? '';
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let seen = '';
    // Read until two content events arrived, then go away.
    while (
      (seen.match(/event: (content_block_delta|response\.output_text\.delta)\n|"content":"[^"]/g) ?? []).length < 2
    )
      seen += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    await reader.cancel().catch(() => undefined);
    t.ok(await waitFor(() => w.settles.has(trace)), `${c.name}: settled after the abort`);
    const settled = w.settles.get(trace);
    const events = settled?.details['completionTokens'] ?? 0;
    t.equal(settled?.details['estimated'], true, `${c.name}: flagged as an estimate`);
    t.ok(events >= 2 && events < 60, `${c.name}: output = content events relayed (${events})`);
    if (c.inputAtStart) t.equal(settled?.details['promptTokens'], 170, `${c.name}: the prompt from message_start`);
    t.equal(
      settled?.cost,
      expectedCost(c, Buffer.byteLength(JSON.stringify(body)), events),
      `${c.name}: cost of the estimate`,
    );
    const row = await logRow(s, trace);
    t.equal(row?.ended, 'client_abort', `${c.name}: logged as a client abort`);
    t.equal(row?.error_code, null);
  }
});

t.test('a Messages stream that ends without a final usage is not billed on message_start', async (t) => {
  const { s, key, w } = await stack(t);
  const c = CASES[2] as Case;
  const body = { ...c.body, stream: true, sim: { chunks: 5, usage: USAGE, noUsageInStream: true } };
  const res = await s.post(c.path, body, { key });
  t.match(await res.text(), /message_stop/, 'a complete answer');
  const trace = res.headers.get('x-pi-trace-id') ?? '';
  t.ok(await waitFor(() => w.settles.has(trace)));
  const settled = w.settles.get(trace);
  t.equal(settled?.details['estimated'], true, 'message_delta carried no usage: an estimate');
  t.equal(settled?.details['completionTokens'], 5, 'five content events, not message_start’s output_tokens: 1');
  t.equal(settled?.details['promptTokens'], 170);
  t.equal(settled?.cost, MESSAGES_INPUT_COST + 5n * 15000n);
  t.equal((await logRow(s, trace))?.ended, 'completed');
});

t.test('a client abort on a platform without stream cancellation is billed at the hold', async (t) => {
  const { s, key, w } = await stack(t);
  for (const c of [CASES[0], CASES[1]] as Case[]) {
    const body = { ...c.body, provider: { only: ['beta'] }, stream: true, sim: { chunks: 60, chunkDelayMs: 40 } };
    const ac = new AbortController();
    const res = await fetch(`${s.url}${c.path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: ac.signal,
    });
    const trace = res.headers.get('x-pi-trace-id') ?? '';
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let seen = '';
    while (!/output_text\.delta|"content":"[^"]/.test(seen))
      seen += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    await reader.cancel().catch(() => undefined);
    t.ok(await waitFor(() => w.settles.has(trace)), `${c.name}: settled`);
    const settled = w.settles.get(trace);
    t.equal(settled?.cost, w.holds.get(trace), `${c.name}: the hold`);
    t.equal(settled?.details['basis'], 'hold_uncancellable_abort');
    t.equal((await logRow(s, trace))?.ended, 'client_abort');
  }
});
