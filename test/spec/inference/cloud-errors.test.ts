// A cloud's own error answers reach the client in its protocol's error shape, with the provider's
// status kept, over real servers (gateway + simulator): a Vertex 429 in Google's shape through the
// official Anthropic SDK (RateLimitError with its `type`), on a stream too, and through openai-node on
// Vertex's Chat Completions; Azure's errors (no `type`; a content filter's details kept) through
// openai-node's chat and responses. A body already in the protocol's shape passes byte for byte.
import { generateKeyPairSync } from 'node:crypto';
import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { ManualClock } from '../../../src/clock.ts';
import { DEFAULT_NOW, startStack, type Stack } from '../../helpers/stack.ts';
import { USER } from '../../helpers/inference.ts';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const EMAIL = 'pi-gateway@p.iam.gserviceaccount.com';
const SA = JSON.stringify({
  type: 'service_account',
  project_id: 'p',
  private_key_id: 'k1',
  private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
  client_email: EMAIL,
  token_uri: 'https://oauth2.googleapis.com/token',
});
const ENTRA = JSON.stringify({ tenant_id: 'tenant-1', client_id: 'client-1', client_secret: 'entra-secret' });
const QUOTA =
  'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: anthropic-claude.';
const GOOGLE_429 = { error: { code: 429, message: QUOTA, status: 'RESOURCE_EXHAUSTED' } };

async function setup(t: Test): Promise<{ s: Stack; key: string }> {
  const s = await startStack(t, {
    config: 'clouds',
    secrets: { 'vertex-sa-1': SA, 'azure-entra-1': ENTRA },
    simulator: {
      clock: new ManualClock(DEFAULT_NOW),
      serviceAccounts: { [EMAIL]: publicKey.export({ type: 'spki', format: 'pem' }).toString() },
      entraClients: { 'client-1': 'entra-secret' },
    },
  });
  s.credit('open', '100');
  return { s, key: s.key('open') };
}

const only = (p: string): Record<string, never> => ({ provider: { only: [p] } }) as unknown as Record<string, never>;

t.test("a Vertex 429 in Google's shape reaches the Anthropic SDK as a RateLimitError with its type", async (t) => {
  const { s, key } = await setup(t);
  s.sim.script('sonnet-ish@20250101', { status: 429, errorBody: GOOGLE_429, headers: { 'retry-after': '7' } });
  const anthropic = new Anthropic({ baseURL: s.url, apiKey: key, maxRetries: 0 });
  const err = await anthropic.messages
    .create({
      model: 'beta-labs/sonnet-ish',
      max_tokens: 20,
      messages: [{ role: 'user', content: 'hi' }],
      ...only('vertex-sa'),
    })
    .catch((e: unknown) => e);
  t.ok(err instanceof Anthropic.RateLimitError, `RateLimitError, got ${String(err)}`);
  if (!(err instanceof Anthropic.APIError)) return;
  t.equal(err.status, 429, "the provider's status");
  t.equal(err.type, 'rate_limit_error');
  t.equal(err.apiMessage, QUOTA, "Vertex's own message");
  t.same(err.error, { type: 'error', error: { message: QUOTA, type: 'rate_limit_error', code: 'RESOURCE_EXHAUSTED' } });
  t.equal(err.headers?.get('retry-after'), '7', 'the provider headers go with it');
  t.equal(err.headers?.get('x-pi-provider'), 'vertex-sa');

  const streamErr = await anthropic.messages
    .stream({
      model: 'beta-labs/sonnet-ish',
      max_tokens: 20,
      messages: [{ role: 'user', content: 'hi' }],
      ...only('vertex-sa'),
    })
    .finalMessage()
    .catch((e: unknown) => e);
  t.ok(streamErr instanceof Anthropic.RateLimitError, 'a stream request too');
  if (streamErr instanceof Anthropic.APIError) t.equal(streamErr.type, 'rate_limit_error');
});

t.test("Vertex Chat Completions: Google's error (also as a one-element array) in the OpenAI shape", async (t) => {
  const { s, key } = await setup(t);
  s.sim.script('google/small', { status: 429, errorBody: [GOOGLE_429] });
  const openai = new OpenAI({ baseURL: s.v1, apiKey: key, maxRetries: 0 });
  const err = await openai.chat.completions
    .create({ model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }], ...only('vertex-sa') })
    .catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.RateLimitError, `RateLimitError, got ${String(err)}`);
  if (!(err instanceof OpenAI.APIError)) return;
  t.equal(err.type, 'rate_limit_error');
  t.equal(err.code, 'RESOURCE_EXHAUSTED');
  t.equal(err.error && (err.error as { message?: string }).message, QUOTA);
});

t.test("Azure errors: no type becomes one, a content filter's details are kept, the status too", async (t) => {
  const { s, key } = await setup(t);
  const openai = new OpenAI({ baseURL: s.v1, apiKey: key, maxRetries: 0 });
  const ask = () =>
    openai.chat.completions
      .create({ model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }], ...only('azure-entra') })
      .catch((e: unknown) => e);

  // Both regions answer 429 (a 429 is retried on the next deployment).
  s.sim.script(
    'small-deploy',
    {
      status: 429,
      errorBody: {
        error: { code: '429', message: 'Requests have exceeded token rate limit. Please retry after 6 seconds.' },
      },
    },
    2,
  );
  const limited = await ask();
  t.ok(limited instanceof OpenAI.RateLimitError);
  if (limited instanceof OpenAI.APIError)
    t.same([limited.status, limited.type, limited.code], [429, 'rate_limit_error', null]);

  const filtered = {
    message: 'The response was filtered due to the prompt triggering content management policy.',
    type: null,
    param: 'prompt',
    code: 'content_filter',
    status: 400,
    innererror: {
      code: 'ResponsibleAIPolicyViolation',
      content_filter_result: { hate: { filtered: true, severity: 'high' } },
    },
  };
  s.sim.script('small-deploy', { status: 400, errorBody: { error: filtered } }, 1);
  const res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, ...only('azure-entra') },
    { key },
  );
  t.equal(res.status, 400);
  t.same(await res.json(), {
    error: {
      param: 'prompt',
      innererror: filtered.innererror,
      message: filtered.message,
      type: 'invalid_request_error',
      code: 'content_filter',
    },
  });

  const own = {
    error: {
      message: 'The API deployment for this resource does not exist.',
      type: 'invalid_request_error',
      param: null,
      code: 'DeploymentNotFound',
    },
  };
  s.sim.script('small-deploy', { status: 404, errorBody: own }, 1);
  const res404 = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, ...only('azure-entra') },
    { key },
  );
  t.equal(res404.status, 404);
  t.same(await res404.json(), own, "already the protocol's shape: byte for byte");
});

t.test("Responses on Azure: its error in the Responses client's shape", async (t) => {
  const { s, key } = await setup(t);
  s.sim.script(
    'small-deploy',
    {
      status: 429,
      errorBody: { error: { code: 'too_many_requests', message: 'Rate limit is exceeded. Try again in 6 seconds.' } },
    },
    1,
  );
  const openai = new OpenAI({ baseURL: s.v1, apiKey: key, maxRetries: 0 });
  const err = await openai.responses
    .create({ model: 'acme/chat-small', input: 'hi', ...only('azure-entra') })
    .catch((e: unknown) => e);
  t.ok(err instanceof OpenAI.RateLimitError, `RateLimitError, got ${String(err)}`);
  if (err instanceof OpenAI.APIError)
    t.same(
      [err.status, err.type, err.code, err.message],
      [429, 'rate_limit_error', 'too_many_requests', '429 Rate limit is exceeded. Try again in 6 seconds.'],
    );
});
