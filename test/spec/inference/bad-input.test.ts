// Inputs that used to end in 500 internal_error, now the client's clean 4xx on every protocol:
// integers beyond 2^53 − 1 in the fields the gateway computes with (422 naming the field), JSON nested
// deeper than the documented limit (400 invalid_request, found without recursion), and an output
// limit above what the model can write (held at what it can write, so a wallet covering that is
// admitted). Nothing reaches a provider and nothing stays held when a request is refused.
import t, { type Test } from 'tap';
import { MAX_JSON_DEPTH } from '../../../src/protocols/json-request.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { expectGatewayError, patchedFixture, spyWallet, USER } from '../../helpers/admission.ts';
import { nanoToDecimal } from '../../../src/money.ts';

/** The JSON endpoints and a valid body for each, as raw JSON text with a hole for one extra field. */
const ENDPOINTS: { path: string; field: string; body: (extra: string) => string }[] = [
  {
    path: '/v1/chat/completions',
    field: 'max_tokens',
    body: (x) => `{"model":"acme/chat-small","messages":[{"role":"user","content":"hi"}]${x}}`,
  },
  {
    path: '/v1/chat/completions',
    field: 'max_completion_tokens',
    body: (x) => `{"model":"acme/chat-small","messages":[{"role":"user","content":"hi"}]${x}}`,
  },
  { path: '/v1/responses', field: 'max_output_tokens', body: (x) => `{"model":"acme/chat-small","input":"hi"${x}}` },
  {
    path: '/v1/messages',
    field: 'max_tokens',
    body: (x) => `{"model":"beta-labs/sonnet-ish","messages":[{"role":"user","content":"hi"}]${x}}`,
  },
  { path: '/v1/images/generations', field: 'n', body: (x) => `{"model":"acme/painter","prompt":"a cat"${x}}` },
];

/** Number literals as a client may write them: all parse as integers beyond the safe range. */
const UNSAFE = ['1e300', '99999999999999999999', '9007199254740992', '1.7976931348623157e308'];

function nothingHeld(t: Test, s: Stack, label: string): void {
  t.equal(s.sim.requests.length, 0, `${label}: nothing reached a provider`);
  const w = s.store.wallets.show('open', s.clock.now());
  t.equal(w.openHolds, 0, `${label}: nothing held`);
}

t.test('integers beyond 2^53 − 1: 422 validation_failed naming the field, on every protocol', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '1000');
  for (const e of ENDPOINTS) {
    for (const literal of UNSAFE) {
      const label = `${e.path} ${e.field}: ${literal}`;
      const res = await s.post(e.path, e.body(`,"${e.field}":${literal}`), { key });
      const body = await expectGatewayError(t, res, 422, 'validation_failed', label);
      t.match(
        body.error.message,
        new RegExp(`^${e.field} must be a positive integer no larger than 9007199254740991$`),
        `${label}: names the field and the limit`,
      );
    }
    // Negative, zero and fractional values take the same answer.
    for (const literal of ['-1', '0', '2.5']) {
      const res = await s.post(e.path, e.body(`,"${e.field}":${literal}`), { key });
      await expectGatewayError(t, res, 422, 'validation_failed', `${e.path} ${e.field}: ${literal}`);
    }
  }
  nothingHeld(t, s, 'all refused');
});

t.test('the largest safe integer is a valid output limit: held at what the model can write', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '1000');
  const w = spyWallet(s);
  const body = {
    model: 'acme/chat-small',
    messages: USER,
    max_tokens: Number.MAX_SAFE_INTEGER,
    provider: { only: ['alpha'] },
  };
  const res = await s.post('/v1/chat/completions', body, { key });
  t.equal(res.status, 200, 'answered');
  await res.text();
  const hold = w.holds.get(res.headers.get('x-pi-trace-id') ?? '');
  // acme/chat-small: $0.000001 prompt, $0.000002 completion, max_completion_tokens 4096.
  t.equal(
    hold?.amount,
    BigInt(Buffer.byteLength(JSON.stringify(body))) * 1000n + 4096n * 2000n,
    'held at 4096 output tokens',
  );
});

t.test('image edits: an n beyond the safe range in the multipart prefix is 422 too', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '1000');
  for (const n of ['99999999999999999999', '9007199254740992', '0', 'two']) {
    const form = new FormData();
    form.append('n', n);
    form.append('model', 'acme/painter');
    form.append('prompt', 'blue');
    form.append('image', new Blob([Buffer.from('PNG')], { type: 'image/png' }), 'a.png');
    const res = await fetch(`${s.url}/v1/images/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    const body = await expectGatewayError(t, res, 422, 'validation_failed', `edits n=${n}`);
    t.match(body.error.message, /^n must be a positive integer/, `edits n=${n}: names n`);
  }
  nothingHeld(t, s, 'edits');
});

/** `{"model":…, "metadata": [[[…]]]}` whose deepest array is at `depth` (the top-level object is 1). */
function nested(prefix: string, depth: number): string {
  const inner = depth - 1;
  return `${prefix},"pi_test_nesting":${'['.repeat(inner)}${']'.repeat(inner)}}`;
}

t.test(`JSON nested deeper than ${MAX_JSON_DEPTH} levels: 400 invalid_request on every protocol`, async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '1000');
  const prefixes: [string, string][] = [
    ['/v1/chat/completions', '{"model":"acme/chat-small","messages":[{"role":"user","content":"hi"}]'],
    ['/v1/responses', '{"model":"acme/chat-small","input":"hi"'],
    ['/v1/messages', '{"model":"beta-labs/sonnet-ish","max_tokens":5,"messages":[{"role":"user","content":"hi"}]'],
    ['/v1/images/generations', '{"model":"acme/painter","prompt":"a cat"'],
  ];
  for (const [path, prefix] of prefixes) {
    for (const depth of [MAX_JSON_DEPTH + 1, 5_000, 30_000]) {
      const res = await s.post(path, nested(prefix, depth), { key });
      const body = await expectGatewayError(t, res, 400, 'invalid_request', `${path} depth ${depth}`);
      t.match(
        body.error.message,
        new RegExp(`more than ${MAX_JSON_DEPTH} levels deep`),
        `${path} depth ${depth}: says why`,
      );
    }
    // Objects count as much as arrays; brackets inside strings do not count at all.
    const objects = `${prefix},"pi_test_nesting":${'{"a":'.repeat(MAX_JSON_DEPTH)}1${'}'.repeat(MAX_JSON_DEPTH)}}`;
    await expectGatewayError(t, await s.post(path, objects, { key }), 400, 'invalid_request', `${path} nested objects`);
  }
  nothingHeld(t, s, 'deep bodies');
});

t.test(`JSON nested exactly ${MAX_JSON_DEPTH} levels is forwarded as sent`, async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '1000');
  const body = nested(
    '{"model":"acme/chat-small","messages":[{"role":"user","content":"hi"}],"note":"[[[[{{{{\\"[[[["',
    MAX_JSON_DEPTH,
  );
  const res = await s.post('/v1/chat/completions', body, { key });
  t.equal(res.status, 200, 'answered');
  await res.text();
  const sent = s.sim.requests.at(-1)?.body as Record<string, unknown>;
  t.same(
    sent['pi_test_nesting'],
    (JSON.parse(body) as Record<string, unknown>)['pi_test_nesting'],
    'the nested value reached the provider unchanged',
  );
  t.equal(sent['note'], '[[[[{{{{"[[[[', 'brackets inside a string are text');
});

t.test('an output limit above the model’s is held at the model’s: a wallet covering that is admitted', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  const w = spyWallet(s);
  const body = { model: 'acme/chat-small', messages: USER, max_tokens: 1_000_000, provider: { only: ['alpha'] } };
  // Exactly what 4096 output tokens (the model's max_completion_tokens) and the prompt bound cost.
  const need = BigInt(Buffer.byteLength(JSON.stringify(body))) * 1000n + 4096n * 2000n;
  s.credit('open', nanoToDecimal(need));
  const res = await s.post('/v1/chat/completions', body, { key });
  t.equal(res.status, 200, 'admitted and answered');
  await res.text();
  t.equal(w.holds.get(res.headers.get('x-pi-trace-id') ?? '')?.amount, need, 'held at the model’s 4096, not 1,000,000');
  t.equal(
    (s.sim.requests.at(-1)!.body as Record<string, unknown>)['max_tokens'],
    1_000_000,
    'the request is still forwarded as sent',
  );

  // Messages and Responses take the same cap (beta-labs/sonnet-ish writes at most 8000).
  const messages = { model: 'beta-labs/sonnet-ish', max_tokens: 64_000, messages: USER };
  s.credit('open', '1');
  const m = await s.post('/v1/messages', messages, { key });
  t.equal(m.status, 200);
  await m.text();
  const mHold = w.holds.get(m.headers.get('x-pi-trace-id') ?? '')?.amount ?? 0n;
  t.equal(
    mHold,
    BigInt(Buffer.byteLength(JSON.stringify(messages))) * 6000n + 8000n * 15_000n,
    'messages: held at 8000 output tokens',
  );
});

t.test('a deployment’s own output limit caps the hold on that deployment', async (t) => {
  // alpha serves acme/chat-small with at most 1000 output tokens (the model allows 4096).
  const config = patchedFixture(t, 'gateway', {
    'deployments/alpha.yaml': [
      [
        '{ id: alpha/chat-small, model: acme/chat-small, resource: alpha-1, upstream_model: small-v1, weight: 100, quantization: bf16, endpoints: [chat_completions, responses] }',
        '{ id: alpha/chat-small, model: acme/chat-small, resource: alpha-1, upstream_model: small-v1, weight: 100, quantization: bf16, endpoints: [chat_completions, responses], max_completion_tokens: 1000 }',
      ],
    ],
  });
  const s = await startStack(t, { config });
  const key = s.key('open');
  s.credit('open', '1000');
  const w = spyWallet(s);
  const trace = async (body: Record<string, unknown>) => {
    const res = await s.post('/v1/chat/completions', body, { key });
    await res.text();
    t.equal(res.status, 200);
    return w.holds.get(res.headers.get('x-pi-trace-id') ?? '')?.amount;
  };
  const only = { model: 'acme/chat-small', messages: USER, max_tokens: 50_000, provider: { only: ['alpha'] } };
  t.equal(
    await trace(only),
    BigInt(Buffer.byteLength(JSON.stringify(only))) * 1000n + 1000n * 2000n,
    'only alpha: 1000 tokens',
  );
  const both = { model: 'acme/chat-small', messages: USER, max_tokens: 50_000, provider: { only: ['alpha', 'gamma'] } };
  // gamma keeps the model's 4096 at half the price: 4096 × 1000 > 1000 × 2000, so gamma decides.
  t.equal(
    await trace(both),
    BigInt(Buffer.byteLength(JSON.stringify(both))) * 500n + 4096n * 1000n,
    'the worst case over both deployments',
  );
});
