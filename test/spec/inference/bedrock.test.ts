// Claude on Amazon Bedrock natively, end to end over real servers (gateway + simulator on 127.0.0.1):
// SigV4-signed InvokeModel / InvokeModelWithResponseStream accepted by the simulator's independent
// verifier, a wrong secret refused (403) and never retried on the same deployment; the body as Bedrock
// wants it; the binary event stream relayed as byte-faithful Messages SSE, also when every write is
// split; the official Anthropic SDK on top; throttling (HTTP 429 and an in-stream exception) failing
// over before the commit; an exception after the commit ending the stream with the error event;
// settlement from the stream's usage; Bedrock API keys as bearer tokens; anthropic-beta in the body,
// only the betas the platform accepts (the adapter's documented default, or the platform's YAML).
import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { ManualClock } from '../../../src/clock.ts';
import { DEFAULT_NOW, startStack, type Stack } from '../../helpers/stack.ts';
import { logRow, spyWallet, USER } from '../../helpers/inference.ts';

const AKID = 'AKIDEXAMPLESIM00001';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYSIMEXAMPLEKEY';
const KEYS = JSON.stringify({ access_key_id: AKID, secret_access_key: SECRET });
const MODEL = 'us.beta-labs.sonnet-ish-v1:0';
const SLUG = 'beta-labs/sonnet-ish';
const BEDROCK = { only: ['bedrock'] };

async function setup(t: Test, sealed = KEYS, session?: string): Promise<{ s: Stack; key: string }> {
  // One clock for both: SigV4 allows five minutes between the signer's time and the verifier's.
  const clock = new ManualClock(DEFAULT_NOW);
  const s = await startStack(t, {
    config: 'clouds',
    clock,
    // Generous: a stream split every few bytes, 1 ms apart, takes seconds on a loaded machine.
    limits: { firstByteTimeoutMs: 15000, streamIdleTimeoutMs: 5000 },
    secrets: { 'bedrock-use1': sealed },
    simulator: {
      clock,
      awsKeys: { [AKID]: { secretAccessKey: SECRET, ...(session ? { sessionToken: session } : {}) } },
    },
  });
  s.credit('open', '100');
  return { s, key: s.key('open') };
}

function bedrockCalls(s: Stack) {
  return s.sim.requests.filter((r) => r.path.startsWith('/model/'));
}

t.test('a signed InvokeModel: Bedrock body and path, SigV4 over the exact bytes, the Messages JSON back', async (t) => {
  const { s, key } = await setup(t);
  const res = await s.post(
    '/v1/messages',
    { model: SLUG, max_tokens: 20, messages: USER, provider: BEDROCK },
    { key, headers: { 'anthropic-beta': 'computer-use-2024-10-22, Interleaved-Thinking-2025-05-14' } },
  );
  const text = await res.text();
  t.equal(res.status, 200, text);
  t.equal(res.headers.get('x-pi-provider'), 'bedrock');
  const body = JSON.parse(text) as { model: string; content: { text: string }[] };
  t.equal(body.model, SLUG, 'the model is the slug');
  const [r] = bedrockCalls(s);
  t.equal(r?.path, `/model/${encodeURIComponent(MODEL)}/invoke`);
  t.match(
    r?.headers['authorization'],
    new RegExp(
      `^AWS4-HMAC-SHA256 Credential=${AKID}/\\d{8}/us-east-1/bedrock/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$`,
    ),
  );
  t.equal(r?.headers['x-amz-date']?.slice(0, 8), '20260115', 'signed at the gateway clock');
  t.same(
    r?.body,
    {
      max_tokens: 20,
      messages: USER,
      anthropic_version: 'bedrock-2023-05-31',
      anthropic_beta: ['computer-use-2024-10-22', 'Interleaved-Thinking-2025-05-14'],
    },
    'no model, no stream; betas in the body',
  );
  t.notOk(JSON.stringify(r?.headers).includes(SECRET), 'the secret never travels');
});

t.test('temporary credentials: the session token is sent and signed', async (t) => {
  const { s, key } = await setup(
    t,
    JSON.stringify({ access_key_id: AKID, secret_access_key: SECRET, session_token: 'IQoJb3JpZ2luX2VjESIM' }),
    'IQoJb3JpZ2luX2VjESIM',
  );
  const res = await s.post('/v1/messages', { model: SLUG, max_tokens: 20, messages: USER, provider: BEDROCK }, { key });
  t.equal(res.status, 200, await res.text());
  t.match(bedrockCalls(s)[0]?.headers['authorization'], /SignedHeaders=[^,]*x-amz-security-token/);
});

t.test(
  'a wrong secret: the simulator refuses the signature (403), the gateway does not retry that deployment',
  async (t) => {
    const { s, key } = await setup(t, JSON.stringify({ access_key_id: AKID, secret_access_key: 'not-the-secret' }));
    const res = await s.post(
      '/v1/messages',
      { model: SLUG, max_tokens: 20, messages: USER, provider: BEDROCK },
      { key },
    );
    const text = await res.text();
    t.equal(res.status, 503, 'the credential was refused everywhere');
    t.match(text, /provider \\?"bedrock\\?" refused the gateway's credential/);
    t.equal(bedrockCalls(s).length, 1, 'one call, no retry (a signature is not a stale token)');
    const direct = await fetch(`${s.sim.url}/model/x/invoke`, {
      method: 'POST',
      headers: {
        authorization: `AWS4-HMAC-SHA256 Credential=${AKID}/20260115/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'0'.repeat(64)}`,
        'x-amz-date': '20260115T120000Z',
      },
      body: '{}',
    });
    t.equal(direct.status, 403);
    t.match(direct.headers.get('x-amzn-errortype'), /^InvalidSignatureException|^InvalidSignature/);
    t.match(await direct.text(), /signature we calculated does not match/);
  },
);

t.test('a credential that is not AWS keys fails the attempt without a call; the next deployment answers', async (t) => {
  const { s, key } = await setup(t, JSON.stringify({ access_key_id: AKID }));
  const res = await s.post(
    '/v1/messages',
    { model: SLUG, max_tokens: 20, messages: USER, provider: { order: ['bedrock', 'delta'] } },
    { key },
  );
  t.equal(res.status, 200, await res.text());
  t.equal(res.headers.get('x-pi-provider'), 'delta');
  t.equal(bedrockCalls(s).length, 0);
});

/** The SSE the gateway relays for a default simulated reply (message_start's id and model vary). */
async function streamText(
  s: Stack,
  key: string,
  sim: Record<string, unknown> = {},
): Promise<{ res: Response; text: string }> {
  const res = await s.post(
    '/v1/messages',
    { model: SLUG, max_tokens: 50, messages: USER, stream: true, provider: BEDROCK, sim },
    { key },
  );
  return { res, text: await res.text() };
}

t.test('the event stream is relayed as Messages SSE, byte for byte, however its frames are split', async (t) => {
  const { s, key } = await setup(t);
  const whole = await streamText(s, key, { usage: { prompt: 12, completion: 9 } });
  t.equal(whole.res.status, 200);
  t.equal(whole.res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const events = whole.text.split('\n\n').filter((e) => e !== '');
  t.same(
    events.map((e) => e.split('\n')[0]),
    [
      'event: message_start',
      'event: content_block_start',
      'event: ping',
      'event: content_block_delta',
      'event: content_block_delta',
      'event: content_block_delta',
      'event: content_block_stop',
      'event: message_delta',
      'event: message_stop',
    ],
  );
  t.match(events[0], new RegExp(`"model":"${SLUG.replace('/', '\\/')}"`), 'the slug in message_start');
  t.equal(
    events[8],
    'event: message_stop\ndata: {"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":12,"outputTokenCount":9,"invocationLatency":5,"firstByteLatency":1}}',
    'data as Bedrock sent it',
  );
  t.equal(events[2], 'event: ping\ndata: {"type": "ping"}', 'byte for byte, spaces included');
  const tail = (text: string) => text.slice(text.indexOf('event: content_block_start'));
  for (const split of [2, 7, 64]) {
    const r = await streamText(s, key, { usage: { prompt: 12, completion: 9 }, splitFrameBytes: split });
    t.equal(r.res.status, 200);
    t.equal(tail(r.text), tail(whole.text), `frames split every ${split} bytes: the same SSE`);
  }
});

/** Fields the SDK forwards as they are (routing and simulator fields). */
function extraFields(body: Record<string, unknown>): Record<string, never> {
  return body as Record<string, never>;
}

t.test('the official Anthropic SDK streams and reads JSON through Bedrock', async (t) => {
  const { s, key } = await setup(t);
  const client = new Anthropic({ baseURL: s.url, apiKey: key, maxRetries: 0 });
  const extra = extraFields({ provider: BEDROCK });
  const msg = await client.messages.create({
    model: SLUG,
    max_tokens: 50,
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  });
  t.equal(msg.model, SLUG);
  t.match(msg.content[0], { type: 'text', text: /simulated reply/ });
  const stream = client.messages.stream({
    model: SLUG,
    max_tokens: 50,
    messages: [{ role: 'user', content: 'hi' }],
    ...extraFields({ provider: BEDROCK, sim: { splitFrameBytes: 3 } }),
  });
  let text = '';
  stream.on('text', (d) => (text += d));
  const final = await stream.finalMessage();
  t.equal(text, 'This is a simulated reply from the pi-gateway upstream simulator.');
  t.equal(final.model, SLUG);
  t.equal(final.stop_reason, 'end_turn');
});

t.test('settlement uses the usage in the decoded stream', async (t) => {
  const { s, key } = await setup(t);
  const w = spyWallet(s);
  const { res } = await streamText(s, key, { usage: { prompt: 1000, completion: 500 } });
  const trace = res.headers.get('x-pi-trace-id') ?? '';
  const row = await logRow(s, trace);
  t.equal(row?.prompt_tokens, 1000);
  t.equal(row?.completion_tokens, 500);
  // sonnet-ish list price: prompt $0.000003, completion $0.000015 per token.
  t.equal(w.settles.get(trace)?.cost, 1000n * 3000n + 500n * 15000n);
  t.notOk(w.settles.get(trace)?.details['estimated'], 'exact, not an estimate');
});

t.test('throttling before the commit fails over: HTTP 429 and an in-stream throttlingException', async (t) => {
  const { s, key } = await setup(t);
  const order = { order: ['bedrock', 'delta'] };
  for (const stream of [false, true]) {
    s.sim.script(MODEL, { status: 429 }, 1);
    const res = await s.post(
      '/v1/messages',
      { model: SLUG, max_tokens: 20, messages: USER, stream, provider: order },
      { key },
    );
    t.equal(res.status, 200, await res.text());
    t.equal(res.headers.get('x-pi-provider'), 'delta', `429 (stream=${stream}) → the next provider`);
  }
  s.sim.script(MODEL, { inbandError: true }, 1);
  const res = await s.post(
    '/v1/messages',
    { model: SLUG, max_tokens: 20, messages: USER, stream: true, provider: order },
    { key },
  );
  const text = await res.text();
  t.equal(res.headers.get('x-pi-provider'), 'delta', 'an exception message before any content → the next provider');
  t.notMatch(text, /event: error/);
});

t.test('Bedrock errors passed to the client are in the Messages error shape', async (t) => {
  const { s, key } = await setup(t);
  s.sim.script(MODEL, { status: 400 }, 1);
  const res = await s.post('/v1/messages', { model: SLUG, max_tokens: 20, messages: USER, provider: BEDROCK }, { key });
  t.equal(res.status, 400);
  t.same(await res.json(), {
    type: 'error',
    error: {
      message: 'Malformed input request, please reformat your input and try again.',
      type: 'invalid_request_error',
      code: 'ValidationException',
    },
  });
});

t.test('an exception after the commit ends the stream with the Messages error event', async (t) => {
  const { s, key } = await setup(t);
  const { res, text } = await streamText(s, key, { exceptionAfterChunks: 1 });
  t.equal(res.status, 200);
  const events = text.split('\n\n').filter((e) => e !== '');
  t.match(events.at(-2), /^event: content_block_delta/);
  t.equal(
    events.at(-1),
    'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"The model stream was interrupted."}}',
  );
  t.notMatch(text, /message_stop/);
});

t.test('a Bedrock API key is a bearer token; nothing is signed', async (t) => {
  const { s, key } = await setup(t);
  const res = await s.post(
    '/v1/messages',
    { model: SLUG, max_tokens: 20, messages: USER, stream: true, provider: { only: ['bedrock-key'] } },
    { key },
  );
  t.equal(res.status, 200);
  t.match(await res.text(), /event: message_stop/);
  const r = bedrockCalls(s)[0];
  t.equal(r?.headers['authorization'], 'Bearer upstream-secret-bedrock-key-usw2');
  t.equal(r?.headers['x-amz-date'], undefined);
  t.equal(r?.path, `/model/${encodeURIComponent(MODEL)}/invoke-with-response-stream`);
  t.equal(r?.headers['accept'], 'application/vnd.amazon.eventstream');
});

t.test("only the betas Bedrock accepts reach it: the documented default, or the platform's own list", async (t) => {
  const { s, key } = await setup(t);
  const claudeCode =
    'claude-code-20250219,interleaved-thinking-2025-05-14,prompt-caching-scope-2026-01-05,effort-2025-11-24';
  const betas = () => (bedrockCalls(s).at(-1)?.body as Record<string, unknown> | undefined)?.['anthropic_beta'];
  const send = (provider: string, beta: string) =>
    s.post(
      '/v1/messages',
      { model: SLUG, max_tokens: 20, messages: USER, provider: { only: [provider] } },
      { key, headers: { 'anthropic-beta': beta } },
    );

  t.equal((await send('bedrock', claudeCode)).status, 200);
  t.same(betas(), ['interleaved-thinking-2025-05-14'], "the default: Bedrock's documented betas only");
  t.equal(
    (await send('bedrock', 'prompt-caching-scope-2026-01-05')).status,
    200,
    'a request whose betas are all dropped is still served',
  );
  t.equal(betas(), undefined, 'without the field');

  t.equal((await send('bedrock-key', claudeCode)).status, 200);
  t.same(
    betas(),
    ['claude-code-20250219', 'interleaved-thinking-2025-05-14', 'effort-2025-11-24'],
    'a deny list in the platform YAML: all but the denied',
  );

  t.equal((await send('delta', claudeCode)).status, 200);
  t.equal(s.sim.requests.at(-1)?.headers['anthropic-beta'], claudeCode, "Anthropic's own API gets the header as sent");
});
