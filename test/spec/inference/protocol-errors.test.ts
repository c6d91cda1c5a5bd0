// Gateway-raised errors in each protocol's own envelope: on /v1/messages the body is the Messages
// protocol's `{"type":"error","error":{…}}` (its SDKs check the top-level type) with the spec's whole
// error object inside; every other endpoint answers the spec's error object alone. Provider errors
// still pass through byte for byte.
import t from 'tap';
import { startStack } from '../../helpers/stack.ts';
import { expectGatewayError, USER } from '../../helpers/admission.ts';

const SONNET = { model: 'beta-labs/sonnet-ish', max_tokens: 16, messages: USER };

t.test('every gateway error on /v1/messages carries "type": "error" beside the error object', async (t) => {
  const s = await startStack(t, { limits: { maxBodyBytes: 2048 } });
  const key = s.key('open');
  const limited = s.key('open', { rpm: 1 });
  const post = (body: unknown, k: string | null = key) => s.post('/v1/messages', body, k === null ? {} : { key: k });
  const cases: [string, () => Promise<Response>, number, string][] = [
    ['no key', () => post(SONNET, null), 401, 'invalid_api_key'],
    ['unknown key', () => post(SONNET, `sk-pi-${'A'.repeat(43)}`), 401, 'api_key_not_found'],
    ['empty wallet', () => post(SONNET), 402, 'insufficient_balance'],
    ['no model', () => post({ max_tokens: 16, messages: USER }), 400, 'invalid_request'],
    ['missing max_tokens', () => post({ model: 'beta-labs/sonnet-ish', messages: USER }), 400, 'invalid_request'],
    ['unsafe max_tokens', () => post({ ...SONNET, max_tokens: 1e300 }), 422, 'validation_failed'],
    ['bare model name', () => post({ ...SONNET, model: 'sonnet-ish' }), 404, 'model_not_found'],
    ['wrong endpoint', () => post({ ...SONNET, model: 'acme/chat-small' }), 422, 'validation_failed'],
    ['too large', () => post({ ...SONNET, pad: 'x'.repeat(4096) }), 413, 'request_too_large'],
    [
      'too deep',
      () =>
        post(`{"model":"beta-labs/sonnet-ish","max_tokens":5,"messages":[],"x":${'['.repeat(200)}${']'.repeat(200)}}`),
      400,
      'invalid_request',
    ],
  ];
  for (const [label, send, status, code] of cases) {
    const res = await send();
    const clone = res.clone();
    await expectGatewayError(t, res, status, code, label);
    const body = (await clone.json()) as Record<string, unknown>;
    t.same(Object.keys(body), ['type', 'error'], `${label}: {type, error}, in the protocol's order`);
    t.equal(body['type'], 'error', `${label}: top-level type "error"`);
  }
  // A 429 too (after the rate-limited key's one request of the minute).
  s.credit('open', '10');
  await (await post(SONNET, limited)).text();
  const res = await post(SONNET, limited);
  const clone = res.clone();
  await expectGatewayError(t, res, 429, 'rate_limited', '429');
  t.equal(((await clone.json()) as Record<string, unknown>)['type'], 'error', '429: top-level type "error"');
});

t.test('the other endpoints keep the spec’s error object alone', async (t) => {
  const s = await startStack(t);
  for (const path of ['/v1/chat/completions', '/v1/responses', '/v1/images/generations', '/v1/embeddings']) {
    const res = await s.post(path, {});
    t.ok(res.status >= 400 && res.status < 500, `${path}: ${res.status}`);
    t.same(Object.keys((await res.json()) as object), ['error'], `${path}: {error}`);
  }
  const catalog = await fetch(`${s.url}/v1/models/acme/nope`);
  t.same(Object.keys((await catalog.json()) as object), ['error'], 'catalog 404: {error}');
});

t.test('a provider’s Messages error passes through unchanged', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const res = await s.post('/v1/messages', { ...SONNET, provider: { only: ['alpha'] }, sim: { status: 400 } }, { key });
  t.equal(res.status, 400);
  t.ok(res.headers.get('x-pi-provider'), 'a provider answer');
  const body = (await res.json()) as Record<string, unknown>;
  t.equal(body['type'], 'error', 'the provider’s own envelope');
  t.notOk(
    body['error'] && (body['error'] as Record<string, unknown>)['code'] === 'validation_failed',
    'not rewritten into a gateway error',
  );
});
