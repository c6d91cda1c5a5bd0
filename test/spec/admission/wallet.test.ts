// Wallets over HTTP: admission refuses with 402 before any provider is called; the hold is the worst
// case (prompt bound = body bytes, output bound = the request's limit or the model's max completion
// tokens, at the highest price of every deployment the request may reach); the hold settles to the
// exact cost when the answer ends and is released when nothing billable came back; and 200
// concurrent requests on a small wallet admit exactly floor(available / hold).
import t, { type Test } from 'tap';
import { nanoToDecimal } from '../../../src/money.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { expectGatewayError, spyWallet, USER, type WalletSpy } from '../../helpers/admission.ts';

/** Fixture prices in nano-USD per token (test/fixtures/config/gateway/models). */
const P = {
  small: { prompt: 1000n, completion: 2000n, cacheRead: 500n },
  smallGamma: { prompt: 500n, completion: 1000n },
  smallBeta: { prompt: 750n, completion: 1500n },
  big: { prompt: 10_000n, completion: 30_000n },
  bracketedTop: { prompt: 2000n, completion: 8000n },
  sonnet: { prompt: 3000n, completion: 15_000n, cacheWrite1h: 6000n },
};

const bytes = (body: unknown) => BigInt(Buffer.byteLength(typeof body === 'string' ? body : JSON.stringify(body)));

/** The wallet as the ledger has it, once the gateway's wallet book wrote what it has pending. */
function balanceOf(s: Stack, ws = 'open') {
  s.gw.ctx.wallets.flush();
  return s.store.wallets.show(ws, s.clock.now());
}

async function sendAndDrain(
  s: Stack,
  path: string,
  body: unknown,
  key: string,
): Promise<{ status: number; trace: string; text: string; res: Response }> {
  const res = await s.post(path, body, { key });
  const text = await res.text();
  return { status: res.status, trace: res.headers.get('x-pi-trace-id') ?? '', text, res };
}

/** Waits until the handler of `trace` has closed its hold (settle or release happen after the reply). */
async function closed(w: WalletSpy, trace: string): Promise<void> {
  const until = performance.now() + 5000;
  while (performance.now() < until && !w.settles.has(trace) && !w.releases.has(trace))
    await new Promise((r) => setTimeout(r, 5));
}

t.test('402 insufficient_balance before any provider is called', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  const w = spyWallet(s);
  const body = { model: 'acme/chat-small', messages: USER, max_tokens: 100 };
  const need = bytes(body) * P.small.prompt + 100n * P.small.completion;
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', body, { key }),
    402,
    'insufficient_balance',
    'no wallet at all',
  );
  s.credit('open', '0.000000001');
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', body, { key }),
    402,
    'insufficient_balance',
    'one nano-USD',
  );
  // One nano short of the hold is still refused; exactly the hold is admitted.
  s.credit('open', nanoToDecimal(need - 2n));
  t.equal(balanceOf(s).available, need - 1n);
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', { ...body, stream: true }, { key }),
    402,
    'insufficient_balance',
    'one nano short (stream)',
  );
  await expectGatewayError(
    t,
    await s.post('/v1/messages', { model: 'beta-labs/sonnet-ish', max_tokens: 100, messages: USER }, { key }),
    402,
    'insufficient_balance',
    'messages',
  );
  await expectGatewayError(
    t,
    await s.post('/v1/responses', { model: 'acme/chat-small', input: 'hi' }, { key }),
    402,
    'insufficient_balance',
    'responses',
  );
  t.equal(s.sim.requests.length, 0, 'the simulator received nothing');
  t.equal([...w.holds.values()].filter((h) => h.ok).length, 0, 'no hold was granted');
  t.equal(balanceOf(s).openHolds, 0);
  s.credit('open', '0.000000001');
  const ok = await sendAndDrain(s, '/v1/chat/completions', body, key);
  t.equal(ok.status, 200, 'a wallet of exactly the hold is admitted');
  t.equal(w.holds.get(ok.trace)?.amount, need, 'and the hold was exactly that');
  t.equal(s.sim.requests.length, 1);
});

t.test('the hold is the worst case over every reachable deployment and model', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '1000');
  const w = spyWallet(s);
  const chat = (extra: Record<string, unknown>) => ({ model: 'acme/chat-small', messages: USER, ...extra });
  const cases: [string, string, Record<string, unknown>, (b: bigint) => bigint][] = [
    [
      'no output limit: the model’s max completion tokens (4096)',
      '/v1/chat/completions',
      chat({}),
      (b) => b * P.small.prompt + 4096n * P.small.completion,
    ],
    [
      'max_tokens',
      '/v1/chat/completions',
      chat({ max_tokens: 100 }),
      (b) => b * P.small.prompt + 100n * P.small.completion,
    ],
    [
      'max_completion_tokens',
      '/v1/chat/completions',
      chat({ max_completion_tokens: 50 }),
      (b) => b * P.small.prompt + 50n * P.small.completion,
    ],
    [
      'streamed: the same rule',
      '/v1/chat/completions',
      chat({ max_tokens: 100, stream: true }),
      (b) => b * P.small.prompt + 100n * P.small.completion,
    ],
    [
      'only the cheaper gamma channel',
      '/v1/chat/completions',
      chat({ max_tokens: 100, provider: { only: ['gamma'] } }),
      (b) => b * P.smallGamma.prompt + 100n * P.smallGamma.completion,
    ],
    [
      'only beta, 25% off while the discount runs',
      '/v1/chat/completions',
      chat({ max_tokens: 100, provider: { only: ['beta'] } }),
      (b) => b * P.smallBeta.prompt + 100n * P.smallBeta.completion,
    ],
    [
      'a pricier fallback model is covered too',
      '/v1/chat/completions',
      chat({ models: ['acme/chat-big'] }),
      (b) => b * P.big.prompt + 8192n * P.big.completion,
    ],
    [
      'fallback with max_tokens',
      '/v1/chat/completions',
      chat({ models: ['acme/chat-big'], max_tokens: 10 }),
      (b) => b * P.big.prompt + 10n * P.big.completion,
    ],
    [
      'the dearest context bracket',
      '/v1/chat/completions',
      { model: 'acme/bracketed', messages: USER },
      (b) => b * P.bracketedTop.prompt + 1000n * P.bracketedTop.completion,
    ],
    [
      'responses: max_output_tokens',
      '/v1/responses',
      { model: 'acme/chat-small', input: 'hi', max_output_tokens: 64, provider: { only: ['alpha'] } },
      (b) => b * P.small.prompt + 64n * P.small.completion,
    ],
    [
      'messages: the dearest input class (1h cache write)',
      '/v1/messages',
      { model: 'beta-labs/sonnet-ish', max_tokens: 100, messages: USER },
      (b) => b * P.sonnet.cacheWrite1h + 100n * P.sonnet.completion,
    ],
  ];
  for (const [label, path, body, want] of cases) {
    const r = await sendAndDrain(s, path, body, key);
    t.equal(r.status, 200, `${label}: answered`);
    const hold = w.holds.get(r.trace);
    t.equal(hold?.amount, want(bytes(body)), `${label}: hold`);
    await closed(w, r.trace);
    const settled = w.settles.get(r.trace)?.[0];
    t.ok(settled && settled.cost <= (hold?.amount ?? 0n), `${label}: the cost stayed within the hold`);
  }
  // The discount is over on 2026-02-01: the beta hold is at list price again.
  s.clock.set('2026-02-01T00:00:00Z');
  const body = chat({ max_tokens: 100, provider: { only: ['beta'] } });
  const r = await sendAndDrain(s, '/v1/chat/completions', body, key);
  t.equal(
    w.holds.get(r.trace)?.amount,
    bytes(body) * P.small.prompt + 100n * P.small.completion,
    'beta after the discount: list price',
  );
  t.equal(balanceOf(s).held, 0n, 'every hold closed');
});

t.test('settled to the actual cost when the answer ends', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const w = spyWallet(s);
  const start = balanceOf(s).balance;
  let spent = 0n;
  for (const stream of [false, true]) {
    const body = {
      model: 'acme/chat-small',
      messages: USER,
      max_tokens: 200,
      stream,
      provider: { only: ['alpha'] },
      sim: { usage: { prompt: 120, completion: 80 } },
    };
    const r = await sendAndDrain(s, '/v1/chat/completions', body, key);
    t.equal(r.status, 200);
    await closed(w, r.trace);
    const cost = 120n * P.small.prompt + 80n * P.small.completion;
    t.same(
      w.settles.get(r.trace)?.map((x) => x.cost),
      [cost],
      `${stream ? 'stream' : 'JSON'}: one settle at the exact cost`,
    );
    spent += cost;
    t.equal(balanceOf(s).balance, start - spent, 'the balance fell by exactly the cost');
    t.equal(balanceOf(s).held, 0n, 'nothing stays held');
  }
  t.same(s.store.wallets.verify(), { ok: true, problems: [] });
});

t.test('released, wallet unchanged, when nothing billable came back', async (t) => {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 400 } });
  const key = s.key('open');
  s.credit('open', '10');
  const w = spyWallet(s);
  const start = balanceOf(s);
  const chat = (extra: Record<string, unknown>) => ({
    model: 'acme/chat-small',
    messages: USER,
    max_tokens: 50,
    ...extra,
  });
  // Failures after the hold: the hold must be released.
  const afterHold: [string, Record<string, unknown>, number, string | null][] = [
    ['provider 400 passed through', chat({ provider: { only: ['alpha'] }, sim: { status: 400 } }), 400, null],
    [
      'provider 400 passed through (stream)',
      chat({ stream: true, provider: { only: ['alpha'] }, sim: { status: 400 } }),
      400,
      null,
    ],
    ['provider 503 on every attempt', chat({ sim: { status: 503 } }), 503, null],
    ['no answer from any provider', chat({ sim: { reset: 'before_head' } }), 503, 'provider_unavailable'],
    ['stream that never commits', chat({ stream: true, sim: { inbandError: true } }), 503, 'provider_unavailable'],
    [
      'first-byte timeout everywhere',
      chat({ provider: { only: ['alpha', 'gamma'] }, sim: { ttfbMs: 1000 } }),
      503,
      'provider_unavailable',
    ],
    [
      'provider refuses our credential',
      chat({ provider: { only: ['alpha'] }, sim: { status: 401 } }),
      503,
      'provider_unavailable',
    ],
  ];
  for (const [label, body, status, code] of afterHold) {
    const r = await sendAndDrain(s, '/v1/chat/completions', body, key);
    t.equal(r.status, status, `${label}: ${status}`);
    if (code) t.equal((JSON.parse(r.text) as { error: { code: string } }).error.code, code, `${label}: ${code}`);
    t.ok(w.holds.get(r.trace)?.ok, `${label}: a hold was taken`);
    await closed(w, r.trace);
    t.ok(w.releases.has(r.trace), `${label}: and released`);
    t.notOk(w.settles.has(r.trace), `${label}: nothing settled`);
    t.same(balanceOf(s), start, `${label}: wallet unchanged, no open hold`);
  }
  // Client abort before the first byte: released too.
  const ac = new AbortController();
  const pending = fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(chat({ provider: { only: ['alpha'] }, sim: { ttfbMs: 300 } })),
    signal: ac.signal,
  }).catch(() => null);
  const until = performance.now() + 3000;
  while (w.holds.size === afterHold.length && performance.now() < until) await new Promise((r) => setTimeout(r, 5));
  ac.abort();
  await pending;
  const abortTrace = [...w.holds.keys()].at(-1) as string;
  await closed(w, abortTrace);
  t.ok(w.releases.has(abortTrace), 'client abort before the first byte: released');
  t.notOk(w.settles.has(abortTrace));
  // Failures before the hold: never held at all.
  const holdsBefore = w.holds.size;
  const beforeHold: [string, unknown, number, string][] = [
    ['invalid JSON', '{"model": ', 400, 'invalid_request'],
    ['no model', { messages: USER }, 400, 'invalid_request'],
    ['unknown model', { model: 'acme/nope', messages: USER }, 404, 'model_not_found'],
    ['preset', chat({ preset: 'x' }), 422, 'validation_failed'],
    ['unknown provider name', chat({ provider: { only: ['nope'] } }), 422, 'validation_failed'],
    ['no eligible provider', chat({ provider: { only: ['delta'] } }), 404, 'no_eligible_provider'],
    ['wrong endpoint', { model: 'acme/painter', messages: USER }, 422, 'validation_failed'],
  ];
  for (const [label, body, status, code] of beforeHold) {
    const r = await s.post('/v1/chat/completions', body, { key });
    await expectGatewayError(t, r, status, code, label);
  }
  t.equal(w.holds.size, holdsBefore, 'validation errors take no hold');
  await new Promise((r) => setTimeout(r, 50));
  t.same(balanceOf(s), start, 'the wallet is exactly as credited');
  t.same(s.store.wallets.verify(), { ok: true, problems: [] });
});

async function concurrentRound(
  t: Test,
  s: Stack,
  key: string,
  w: WalletSpy,
  n: number,
  available: bigint,
  hold: bigint,
  body: Record<string, unknown>,
): Promise<void> {
  const admitted = Number(available / hold);
  const simBefore = s.sim.requests.length;
  const eventsBefore = w.events.length;
  const answers = await Promise.all(
    Array.from({ length: n }, async () => {
      const res = await s.post('/v1/chat/completions', body, { key });
      const text = await res.text();
      return { status: res.status, trace: res.headers.get('x-pi-trace-id') as string, text };
    }),
  );
  const ok = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status === 402);
  t.equal(ok.length, admitted, `exactly floor(available / hold) = ${admitted} admitted`);
  t.equal(refused.length, n - admitted, 'every other request got 402');
  t.ok(refused.every((a) => (JSON.parse(a.text) as { error: { code: string } }).error.code === 'insufficient_balance'));
  t.equal(s.sim.requests.length - simBefore, admitted, 'only admitted requests reached the provider');
  for (const a of ok) await closed(w, a.trace);
  // Every admission was decided while the admitted requests still held their money.
  const events = w.events.slice(eventsBefore);
  t.equal(events.filter((e) => e.startsWith('hold')).length, n, 'every request asked for a hold');
  const firstClose = events.findIndex((e) => e === 'settle' || e === 'release');
  const lastHold = events.findLastIndex((e) => e.startsWith('hold'));
  t.ok(firstClose === -1 || lastHold < firstClose, 'all holds were decided before the first settlement');
  t.ok(
    ok.every((a) => w.settles.get(a.trace)?.length === 1),
    'each admitted request settled once',
  );
}

t.test('200 concurrent requests on a wallet worth a few never overdraw it', async (t) => {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 15_000 } });
  const key = s.key('open');
  const w = spyWallet(s);
  // The simulator holds every admitted answer back, so admitted requests keep their hold while the
  // other 199 are decided: the number admitted depends only on the arithmetic.
  const body = {
    model: 'acme/chat-small',
    messages: USER,
    max_tokens: 100,
    provider: { only: ['alpha'] },
    sim: { ttfbMs: 2500 },
  };
  const hold = bytes(body) * P.small.prompt + 100n * P.small.completion;
  const credit = hold * 3n + hold / 2n;
  s.credit('open', nanoToDecimal(credit));
  t.equal(balanceOf(s).balance, credit);
  await concurrentRound(t, s, key, w, 200, credit, hold, body);
  const v = balanceOf(s);
  t.ok(v.balance >= 0n, 'the balance is not negative');
  t.ok(w.lowest.balance >= 0n && w.lowest.available >= 0n, 'never negative at any point');
  t.equal(v.held, 0n);
  t.same(s.store.wallets.verify(), { ok: true, problems: [] }, 'verify() passes');
  // What is left (balance minus three small charges) still admits floor(left / hold).
  await concurrentRound(t, s, key, w, 200, v.available, hold, body);
  t.ok(balanceOf(s).balance >= 0n);
  t.same(s.store.wallets.verify(), { ok: true, problems: [] });
});
