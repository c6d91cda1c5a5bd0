// Credentials that refresh themselves, end to end over real servers: Vertex AI with a sealed
// service-account key (the simulator verifies the RS256 assertion with the account's public key and
// issues short-lived tokens) through the Anthropic SDK and openai-node; Azure OpenAI with Entra
// client credentials through openai-node. Clocks are injected (the gateway's and the simulator's
// separately, so a token can expire upstream before the gateway expects it): single flight under 100
// concurrent requests, refresh ahead of expiry, a 401 refreshed and retried once on the same
// deployment, a key the token endpoint refuses failing over; two Azure regions on one Entra app
// sharing one token, and when its endpoint is slow, down or refusing, waiting for it once (the
// configured token timeout), with a log line saying which; Responses on Azure's v1 API.
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

async function setup(
  t: Test,
  opts: {
    lifetime?: number;
    sa?: string;
    tokenTimeoutMs?: number;
    log?: (event: string, fields?: Record<string, unknown>) => void;
  } = {},
): Promise<{ s: Stack; key: string; simClock: ManualClock }> {
  const simClock = new ManualClock(DEFAULT_NOW);
  const s = await startStack(t, {
    config: 'clouds',
    ...(opts.tokenTimeoutMs ? { limits: { tokenTimeoutMs: opts.tokenTimeoutMs } } : {}),
    ...(opts.log ? { log: opts.log } : {}),
    secrets: { 'vertex-sa-1': opts.sa ?? SA, 'azure-entra-1': ENTRA },
    simulator: {
      clock: simClock,
      serviceAccounts: { [EMAIL]: publicKey.export({ type: 'spki', format: 'pem' }).toString() },
      entraClients: { 'client-1': 'entra-secret' },
      tokenLifetimeSec: opts.lifetime ?? 600,
    },
  });
  s.credit('open', '100');
  return { s, key: s.key('open'), simClock };
}

const tokenCalls = (s: Stack) => s.sim.requests.filter((r) => r.path.endsWith('/token'));
const inference = (s: Stack) => s.sim.requests.filter((r) => !r.path.endsWith('/token'));
const only = (p: string): Record<string, never> => ({ provider: { only: [p] } }) as unknown as Record<string, never>;

t.test('Vertex with a service account: the SDKs work, one token serves every request', async (t) => {
  const { s, key } = await setup(t);
  const anthropic = new Anthropic({ baseURL: s.url, apiKey: key, maxRetries: 0 });
  const msg = await anthropic.messages.create({
    model: 'beta-labs/sonnet-ish',
    max_tokens: 20,
    messages: [{ role: 'user', content: 'hi' }],
    ...only('vertex-sa'),
  });
  t.equal(msg.model, 'beta-labs/sonnet-ish');
  const stream = anthropic.messages.stream({
    model: 'beta-labs/sonnet-ish',
    max_tokens: 20,
    messages: [{ role: 'user', content: 'hi' }],
    ...only('vertex-sa'),
  });
  t.equal((await stream.finalMessage()).stop_reason, 'end_turn');
  const openai = new OpenAI({ baseURL: s.v1, apiKey: key, maxRetries: 0 });
  const chat = await openai.chat.completions.create({
    model: 'acme/chat-small',
    messages: [{ role: 'user', content: 'hi' }],
    ...only('vertex-sa'),
  });
  t.equal(chat.model, 'acme/chat-small');
  t.equal(tokenCalls(s).length, 1, 'one token for all three');
  const auths = new Set(inference(s).map((r) => r.headers['authorization']));
  t.equal(auths.size, 1);
  t.match([...auths][0], /^Bearer sim-token-[0-9a-f]{32}$/);
});

t.test('single flight: 100 concurrent first requests make one token request', async (t) => {
  const { s, key } = await setup(t);
  const answers = await Promise.all(
    Array.from({ length: 100 }, () =>
      s
        .post('/v1/chat/completions', { model: 'acme/chat-small', messages: USER, ...only('vertex-sa') }, { key })
        .then(async (r) => [r.status, await r.text()] as const),
    ),
  );
  t.same(
    answers.filter(([st]) => st !== 200),
    [],
    'all answered',
  );
  t.equal(tokenCalls(s).length, 1, 'exactly one token request');
});

t.test('refresh ahead of expiry, then on expiry, on the gateway clock', async (t) => {
  const { s, key, simClock } = await setup(t, { lifetime: 600 });
  const chat = () =>
    s
      .post('/v1/chat/completions', { model: 'acme/chat-small', messages: USER, ...only('vertex-sa') }, { key })
      .then((r) => r.status);
  t.equal(await chat(), 200);
  s.clock.advance(299_000);
  simClock.advance(299_000);
  t.equal(await chat(), 200);
  t.equal(tokenCalls(s).length, 1, 'before the early window: the cached token');
  s.clock.advance(2_000);
  simClock.advance(2_000);
  t.equal(await chat(), 200, 'in the window: served with the old token');
  await new Promise((r) => setTimeout(r, 50));
  t.equal(tokenCalls(s).length, 2, 'and one refresh ran');
  const [a, b] = inference(s)
    .slice(-2)
    .map((r) => r.headers['authorization']);
  t.equal(a, b, 'the request in the window used the old token');
  t.equal(await chat(), 200);
  t.not(inference(s).at(-1)?.headers['authorization'], b, 'the next one uses the new token');
});

t.test('a 401 (token expired upstream first) refreshes and retries the same deployment once', async (t) => {
  const { s, key, simClock } = await setup(t, { lifetime: 600 });
  const res1 = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, ...only('vertex-sa') },
    { key },
  );
  t.equal(res1.status, 200);
  simClock.advance(601_000); // the simulator expires it; the gateway's clock says it is fresh
  const res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, ...only('vertex-sa') },
    { key },
  );
  t.equal(res.status, 200, await res.text());
  t.equal(res.headers.get('x-pi-provider'), 'vertex-sa');
  t.equal(tokenCalls(s).length, 2, 'refreshed once');
  const calls = inference(s).slice(-2);
  t.equal(calls.length, 2, 'the refused call and its retry');
  t.not(calls[0]?.headers['authorization'], calls[1]?.headers['authorization']);
});

t.test(
  'a service account the token endpoint refuses: the attempt fails without an inference call, the next provider answers',
  async (t) => {
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    const { s, key } = await setup(t, { sa: JSON.stringify({ ...(JSON.parse(SA) as object), private_key: other }) });
    const res = await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, provider: { order: ['vertex-sa', 'azure-entra'] } },
      { key },
    );
    t.equal(res.status, 200, await res.text());
    t.equal(res.headers.get('x-pi-provider'), 'azure-entra');
    t.same(
      inference(s).map((r) => r.path.includes('/openai/deployments/')),
      [true],
      'nothing was sent to Vertex',
    );
    const only1 = await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, ...only('vertex-sa') },
      { key },
    );
    t.equal(only1.status, 503);
    t.match(await only1.text(), /provider \\"vertex-sa\\" refused the gateway's credential/);
  },
);

t.test('Azure OpenAI with Entra ID: client credentials, bearer token, openai-node', async (t) => {
  const { s, key } = await setup(t);
  const openai = new OpenAI({ baseURL: s.v1, apiKey: key, maxRetries: 0 });
  const chat = await openai.chat.completions.create({
    model: 'acme/chat-small',
    messages: [{ role: 'user', content: 'hi' }],
    ...only('azure-entra'),
  });
  t.equal(chat.model, 'acme/chat-small');
  const [tok] = tokenCalls(s);
  t.equal(tok?.path, '/tenant-1/oauth2/v2.0/token');
  const call = inference(s)[0];
  t.match(call?.headers['authorization'], /^Bearer sim-token-/);
  t.equal(call?.headers['api-key'], undefined);
  t.equal(call?.path, '/openai/deployments/small-deploy/chat/completions');
});

t.test('two Azure regions on one Entra app share one token', async (t) => {
  const { s, key } = await setup(t);
  // The first region answers 503: the request fails over to the second, on the same token.
  s.sim.script('small-deploy', { status: 503 }, 1);
  const res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, ...only('azure-entra') },
    { key },
  );
  t.equal(res.status, 200, await res.text());
  t.equal(inference(s).length, 2, 'both regions called');
  t.equal(new Set(inference(s).map((r) => r.headers['authorization'])).size, 1, 'with one token');
  t.equal(tokenCalls(s).length, 1, 'fetched once');
});

t.test('a slow Entra endpoint costs one token timeout for the two regions that share it, not two', async (t) => {
  const logs: { event: string; fields: Record<string, unknown> }[] = [];
  const { s, key } = await setup(t, { tokenTimeoutMs: 300, log: (event, fields = {}) => logs.push({ event, fields }) });
  s.sim.script('token:entra', { ttfbMs: 4000 });
  const started = performance.now();
  const res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, ...only('azure-entra') },
    { key },
  );
  const ms = performance.now() - started;
  t.equal(res.status, 503);
  t.equal(res.headers.get('x-pi-provider'), 'azure-entra');
  const body = (await res.json()) as { error: { message: string } };
  t.equal(
    body.error.message,
    'provider "azure-entra" could not authenticate the gateway: its token endpoint gave no answer within 300 ms, and no other provider could take over',
  );
  t.equal(tokenCalls(s).length, 1, 'one token request for both deployments');
  t.same(inference(s), [], 'nothing sent without a token');
  t.ok(ms >= 300 && ms < 2 * 300 + 400, `one timeout, not two (${Math.round(ms)} ms)`);
  const failed = logs.filter((l) => l.event === 'token_fetch_failed');
  t.same(
    failed.map((l) => l.fields),
    [
      {
        provider: 'azure-entra',
        reason: 'timeout',
        endpoint: 'https://login.microsoftonline.com/tenant-1/oauth2/v2.0/token',
        timeout_ms: 300,
      },
    ],
    'logged once, as slow',
  );
});

t.test('the log says whether the token endpoint was down, slow or refused', async (t) => {
  const reasons: unknown[] = [];
  const log = (event: string, fields: Record<string, unknown> = {}) => {
    if (event === 'token_fetch_failed') reasons.push(fields['reason']);
  };
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['down', { reset: 'before_head' }, /its token endpoint could not be reached/],
    ['slow', { ttfbMs: 4000 }, /its token endpoint gave no answer within 200 ms/],
    [
      'refused',
      {
        status: 401,
        errorBody: { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.' },
      },
      /provider \\"azure-entra\\" refused the gateway's credential: its token endpoint answered HTTP 401/,
    ],
  ];
  for (const [name, behaviour, message] of cases) {
    const { s, key } = await setup(t, { tokenTimeoutMs: 200, log });
    s.sim.script('token:entra', behaviour);
    const res = await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, ...only('azure-entra') },
      { key },
    );
    t.equal(res.status, 503, name);
    const text = await res.text();
    t.match(text, message, `${name}: the client is told which`);
    t.notMatch(text, /AADSTS|entra-secret/, `${name}: nothing of the endpoint's text or the secret`);
    await s.close();
  }
  t.same(reasons, ['unreachable', 'timeout', 'refused'], 'three distinct reasons');
});

t.test('Azure OpenAI serves Responses on its v1 API, JSON and stream, through openai-node', async (t) => {
  const { s, key } = await setup(t);
  const openai = new OpenAI({ baseURL: s.v1, apiKey: key, maxRetries: 0 });
  const res = await openai.responses.create({ model: 'acme/chat-small', input: 'hi', ...only('azure-entra') });
  t.equal(res.model, 'acme/chat-small');
  t.ok(res.output_text.length > 0, 'an answer');
  const stream = await openai.responses.create({
    model: 'acme/chat-small',
    input: 'hi',
    stream: true,
    ...only('azure-entra'),
  });
  const types: string[] = [];
  for await (const ev of stream) types.push(ev.type);
  t.equal(types.at(-1), 'response.completed');
  const calls = inference(s);
  t.same(
    calls.map((c) => c.path),
    ['/openai/v1/responses', '/openai/v1/responses'],
    'the v1 API, no deployment in the path',
  );
  t.same(
    calls.map((c) => c.query),
    ['', ''],
    'no api-version',
  );
  t.same(
    calls.map((c) => (c.body as { model?: string } | null)?.model),
    ['small-deploy', 'small-deploy'],
    'the deployment name as the model',
  );
  t.match(calls[0]?.headers['authorization'], /^Bearer sim-token-/);
  t.equal(tokenCalls(s).length, 1);
});
