// POST /v1/messages/count_tokens over real servers (gateway + simulator on 127.0.0.1): the official
// Anthropic SDK's `messages.countTokens()` (and the beta form, `?beta=true`) through Anthropic's API,
// Vertex AI's count-tokens:rawPredict and Bedrock's CountTokens (SigV4-signed, and with an API key);
// failover from a failing first deployment; keys, errors and the rate limit as for inference, in the
// Messages error shape; a model no eligible provider can count (400 count_tokens_unsupported, no
// upstream call); nothing held or billed, one request-log row; unserved paths under /v1/messages in
// the Messages error shape.
import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { ManualClock } from '../../../src/clock.ts';
import { DEFAULT_NOW, startStack, type Stack } from '../../helpers/stack.ts';
import { logRow, spyWallet } from '../../helpers/admission.ts';

/** 42 + 9 characters of message and system text: the simulator counts ceil(51 / 4) = 13 tokens. */
const MESSAGES = [{ role: 'user' as const, content: 'Count the tokens of this sentence, please.' }];
const SYSTEM = 'Be brief.';
const COUNT = 13;
const SLUG = 'beta-labs/sonnet-ish';

/** Routing fields the SDK's types do not know: sent as they are. */
const only = (...providers: string[]): Record<string, never> =>
  ({ provider: { only: providers } }) as unknown as Record<string, never>;
const order = (...providers: string[]): Record<string, never> =>
  ({ provider: { order: providers } }) as unknown as Record<string, never>;

function sdk(s: Stack, key: string): Anthropic {
  return new Anthropic({ baseURL: s.url, apiKey: key, maxRetries: 0 });
}

const counts = (s: Stack) => s.sim.requests.filter((r) => /count_tokens|count-tokens/.test(r.path));

t.test(
  "the Anthropic SDK's countTokens through Anthropic's API: the count, the call upstream, nothing billed, one log row",
  async (t) => {
    const s = await startStack(t);
    const key = s.key('open');
    const wallet = spyWallet(s);
    // No credit at all: counting holds nothing, so an empty wallet counts too.
    const res = await sdk(s, key)
      .messages.countTokens({ model: SLUG, messages: MESSAGES, system: SYSTEM, ...only('delta') })
      .withResponse();
    t.same(res.data, { input_tokens: COUNT });
    t.equal(res.response.headers.get('x-pi-provider'), 'delta');
    t.equal(res.response.headers.get('x-pi-model'), SLUG);
    const [call] = counts(s);
    t.equal(call?.path, '/v1/messages/count_tokens');
    t.equal(call?.headers['x-api-key'], 'upstream-secret-delta-1', "the platform's credential, never the client's key");
    t.ok(call?.headers['anthropic-version'], 'the version header');
    t.same(
      call?.body,
      { model: 'sonnet-ish-20250101', messages: MESSAGES, system: SYSTEM },
      'the upstream model; routing fields removed',
    );
    t.equal(wallet.holds.size, 0, 'nothing held');
    t.equal(wallet.settles.size, 0, 'nothing settled');
    const row = await logRow(s, res.response.headers.get('x-pi-trace-id'));
    t.match(row, {
      endpoint: 'count_tokens',
      status: 200,
      model_requested: SLUG,
      model_served: SLUG,
      provider: 'delta',
      deployment: 'delta/sonnet-ish',
      cost_nano: null,
      ended: 'completed',
      attempts: 1,
    });
    t.same(s.store.wallets.verify().problems, [], 'the books stay consistent: an answered count needs no settlement');
  },
);

t.test('the beta form (`?beta=true`, anthropic-beta) is accepted and the beta header forwarded', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  const n = await sdk(s, key).beta.messages.countTokens({
    model: SLUG,
    messages: MESSAGES,
    system: SYSTEM,
    betas: ['context-1m-2025-08-07'],
    ...only('delta'),
  });
  t.same(n, { input_tokens: COUNT });
  t.equal(
    counts(s)[0]?.headers['anthropic-beta'],
    'context-1m-2025-08-07,token-counting-2024-11-01',
    "the client's beta list, as sent",
  );
  // What Claude Code sends: the beta marker in the query string, which the gateway ignores.
  const raw = await s.post(
    '/v1/messages/count_tokens?beta=true',
    { model: SLUG, messages: MESSAGES, system: SYSTEM, ...only('delta') },
    { key, headers: { 'x-api-key': key, 'anthropic-beta': 'token-counting-2024-11-01' } },
  );
  t.equal(raw.status, 200, '?beta=true is accepted');
  t.same(await raw.json(), { input_tokens: COUNT });
  t.equal(counts(s)[1]?.path, '/v1/messages/count_tokens', 'the marker is not sent on');
});

t.test(
  "Vertex AI: the publisher's count-tokens:rawPredict with the model in the body and Vertex's version",
  async (t) => {
    const s = await startStack(t);
    const n = await sdk(s, s.key('open')).messages.countTokens({
      model: SLUG,
      messages: MESSAGES,
      system: SYSTEM,
      ...only('gcp'),
    });
    t.same(n, { input_tokens: COUNT });
    const [call] = counts(s);
    t.match(
      call?.path,
      /^\/v1\/projects\/[^/]+\/locations\/[^/]+\/publishers\/anthropic\/models\/count-tokens:rawPredict$/,
    );
    t.equal(call?.headers['authorization'], 'Bearer upstream-secret-gcp-1');
    t.same(call?.body, {
      model: 'sonnet-ish@20250101',
      messages: MESSAGES,
      system: SYSTEM,
      anthropic_version: 'vertex-2023-10-16',
    });
  },
);

const AKID = 'AKIDEXAMPLESIM00001';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYSIMEXAMPLEKEY';

async function clouds(t: Test): Promise<{ s: Stack; key: string }> {
  // One clock for both: SigV4 allows five minutes between the signer's time and the verifier's.
  const clock = new ManualClock(DEFAULT_NOW);
  const s = await startStack(t, {
    config: 'clouds',
    clock,
    secrets: { 'bedrock-use1': JSON.stringify({ access_key_id: AKID, secret_access_key: SECRET }) },
    simulator: { clock, awsKeys: { [AKID]: { secretAccessKey: SECRET } } },
  });
  return { s, key: s.key('open') };
}

t.test(
  "Bedrock's CountTokens: SigV4 over the wrapped InvokeModel body, the foundation model id, the count in Messages' shape",
  async (t) => {
    const { s, key } = await clouds(t);
    const res = await sdk(s, key)
      .messages.countTokens({ model: SLUG, messages: MESSAGES, system: SYSTEM, ...only('bedrock') })
      .withResponse();
    t.same(res.data, { input_tokens: COUNT });
    t.equal(res.response.headers.get('x-pi-provider'), 'bedrock');
    const [call] = counts(s);
    t.equal(
      call?.path,
      `/model/${encodeURIComponent('beta-labs.sonnet-ish-v1:0')}/count-tokens`,
      "the inference profile's us. prefix dropped",
    );
    t.match(
      call?.headers['authorization'],
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLESIM00001\/20260115\/us-east-1\/bedrock\/aws4_request/,
    );
    const wrapped = call?.body as { input: { invokeModel: { body: string } } };
    t.same(Object.keys(wrapped), ['input']);
    t.same(
      JSON.parse(Buffer.from(wrapped.input.invokeModel.body, 'base64').toString('utf8')),
      { messages: MESSAGES, system: SYSTEM, anthropic_version: 'bedrock-2023-05-31', max_tokens: 1 },
      'the InvokeModel body, max_tokens filled in',
    );

    // With a Bedrock API key instead (bearer), on the other Bedrock platform.
    const viaKey = await sdk(s, key).messages.countTokens({
      model: SLUG,
      messages: MESSAGES,
      system: SYSTEM,
      ...only('bedrock-key'),
    });
    t.same(viaKey, { input_tokens: COUNT });
    t.equal(counts(s)[1]?.headers['authorization'], 'Bearer upstream-secret-bedrock-key-usw2');
  },
);

t.test(
  'a Bedrock error reaches the client in the Messages shape; a throttled first deployment fails over',
  async (t) => {
    const { s, key } = await clouds(t);
    s.sim.script('beta-labs.sonnet-ish-v1:0', { status: 400 }, 1);
    const bad = await s.post(
      '/v1/messages/count_tokens',
      { model: SLUG, messages: MESSAGES, ...only('bedrock') },
      { key },
    );
    t.equal(bad.status, 400, 'a client error is passed on, not retried');
    t.match(await bad.json(), {
      type: 'error',
      error: { type: 'invalid_request_error', message: /Malformed input request/ },
    });
    s.sim.script('beta-labs.sonnet-ish-v1:0', { status: 429 }, 1);
    const res = await s.post(
      '/v1/messages/count_tokens',
      { model: SLUG, messages: MESSAGES, system: SYSTEM, ...order('bedrock', 'delta') },
      { key },
    );
    t.equal(res.status, 200);
    t.equal(res.headers.get('x-pi-provider'), 'delta');
    t.same(await res.json(), { input_tokens: COUNT });
  },
);

t.test(
  'failover: a failing first deployment, then the next one that can count; one that cannot is never called',
  async (t) => {
    const s = await startStack(t);
    const key = s.key('open');
    s.sim.script('sonnet-ish-20250101', { status: 503 }, 1);
    // alpha (an OpenAI-style platform) serves the model's Messages but cannot count: left out.
    const res = await s.post(
      '/v1/messages/count_tokens',
      { model: SLUG, messages: MESSAGES, system: SYSTEM, ...order('alpha', 'delta', 'gcp') },
      { key },
    );
    t.equal(res.status, 200);
    t.equal(res.headers.get('x-pi-provider'), 'gcp');
    t.same(await res.json(), { input_tokens: COUNT });
    t.same(
      counts(s).map((r) => (r.path.endsWith('/v1/messages/count_tokens') ? 'delta' : 'gcp')),
      ['delta', 'gcp'],
    );
    t.equal(s.sim.requests.length, 2, 'nothing sent to alpha');
    const row = await logRow(s, res.headers.get('x-pi-trace-id'));
    t.match(row?.attempts_json, [
      { provider: 'delta', outcome: 'status_503' },
      { provider: 'gcp', outcome: 'ok' },
    ]);

    s.sim.script('sonnet-ish-20250101', { reset: 'before_head' }, 1);
    const reset = await s.post(
      '/v1/messages/count_tokens',
      { model: SLUG, messages: MESSAGES, ...order('delta', 'gcp') },
      { key },
    );
    t.equal(reset.status, 200, 'no answer at all: the next deployment');
    t.equal(reset.headers.get('x-pi-provider'), 'gcp');
  },
);

t.test('keys as for inference, refused in the Messages error shape the SDK reads', async (t) => {
  const s = await startStack(t);
  const none = await s.post('/v1/messages/count_tokens', { model: SLUG, messages: MESSAGES });
  t.equal(none.status, 401);
  t.match(await none.json(), { type: 'error', error: { type: 'authentication_error', code: 'invalid_api_key' } });
  const err = await sdk(s, `sk-pi-${'A'.repeat(43)}`)
    .messages.countTokens({ model: SLUG, messages: MESSAGES })
    .catch((e: unknown) => e);
  t.ok(err instanceof Anthropic.AuthenticationError, 'the SDK raises AuthenticationError');
  t.match((err as InstanceType<typeof Anthropic.AuthenticationError>).error, {
    type: 'error',
    error: { type: 'authentication_error', code: 'api_key_not_found' },
  });
  t.equal(counts(s).length, 0, 'nothing went upstream');
});

t.test("the workspace's rate limit counts counting requests: 429 in the Messages shape with Retry-After", async (t) => {
  const s = await startStack(t);
  const key = s.key('slow'); // 3 requests per minute
  for (let i = 0; i < 3; i++) {
    const ok = await s.post(
      '/v1/messages/count_tokens',
      { model: SLUG, messages: MESSAGES, ...only('delta') },
      { key },
    );
    t.equal(ok.status, 200, `request ${i + 1}`);
  }
  const limited = await s.post(
    '/v1/messages/count_tokens',
    { model: SLUG, messages: MESSAGES, ...only('delta') },
    { key },
  );
  t.equal(limited.status, 429);
  t.ok(Number(limited.headers.get('retry-after')) >= 1, 'Retry-After');
  t.match(await limited.json(), { type: 'error', error: { type: 'rate_limit_error', code: 'rate_limited' } });
  t.equal(counts(s).length, 3);
});

t.test('a model no eligible provider can count: 400 count_tokens_unsupported, nothing sent upstream', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  // acme/chat-big is served on Messages only by an OpenAI-style platform.
  const res = await s.post('/v1/messages/count_tokens', { model: 'acme/chat-big', messages: MESSAGES }, { key });
  t.equal(res.status, 400);
  t.match(await res.json(), {
    type: 'error',
    error: {
      type: 'invalid_request_error',
      code: 'count_tokens_unsupported',
      message: /token counting is not available for "acme\/chat-big"/,
    },
  });
  // A provider preference that leaves only such a platform: the same answer.
  const excluded = await s.post(
    '/v1/messages/count_tokens',
    { model: SLUG, messages: MESSAGES, ...only('alpha') },
    { key },
  );
  t.equal(excluded.status, 400);
  t.match(await excluded.json(), { error: { code: 'count_tokens_unsupported' } });
  // A model not served on Messages at all is refused as /v1/messages refuses it.
  const chat = await s.post('/v1/messages/count_tokens', { model: 'acme/chat-small', messages: MESSAGES }, { key });
  t.equal(chat.status, 422);
  t.match(await chat.json(), {
    type: 'error',
    error: { code: 'validation_failed', message: /not served on POST \/v1\/messages/ },
  });
  t.equal(s.sim.requests.length, 0);
  const err = await sdk(s, key)
    .messages.countTokens({ model: 'acme/chat-big', messages: MESSAGES })
    .catch((e: unknown) => e);
  t.ok(err instanceof Anthropic.BadRequestError, 'the SDK raises BadRequestError');
});

t.test('request checks: messages and model required, in the Messages shape', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  const noMessages = await s.post('/v1/messages/count_tokens', { model: SLUG }, { key });
  t.equal(noMessages.status, 400);
  t.match(await noMessages.json(), {
    type: 'error',
    error: { code: 'invalid_request', message: 'messages is required' },
  });
  const noModel = await s.post('/v1/messages/count_tokens', { messages: MESSAGES }, { key });
  t.equal(noModel.status, 400);
  t.match(await noModel.json(), { type: 'error', error: { message: 'model is required' } });
});

t.test('unserved paths under /v1/messages answer in the Messages error shape; others in the API shape', async (t) => {
  const s = await startStack(t);
  for (const [method, path] of [
    ['POST', '/v1/messages/batches'],
    ['GET', '/v1/messages/batches/msgbatch_1'],
    ['POST', '/v1/messages/xyz'],
    ['GET', '/v1/messages'],
    ['GET', '/v1/messages/count_tokens'],
    ['DELETE', '/v1/messages/'],
  ] as const) {
    const res = await fetch(`${s.url}${path}`, { method });
    t.equal(res.status, 400, `${method} ${path}`);
    t.match(
      await res.json(),
      {
        type: 'error',
        error: { type: 'invalid_request_error', code: 'invalid_request', message: 'model is required' },
      },
      `${method} ${path}: the Messages envelope`,
    );
  }
  const err = await sdk(s, s.key('open'))
    .messages.batches.list()
    .catch((e: unknown) => e);
  t.ok(err instanceof Anthropic.BadRequestError, 'the SDK reads it as a BadRequestError');
  for (const path of ['/v1/embeddings', '/v1/messagesx']) {
    const res = await fetch(`${s.url}${path}`, { method: 'POST' });
    const body = (await res.json()) as Record<string, unknown>;
    t.equal(res.status, 400);
    t.notOk('type' in body, `${path}: the API's error object, no Messages envelope`);
  }
});
