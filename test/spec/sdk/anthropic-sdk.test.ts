// The official `@anthropic-ai/sdk` against the gateway (baseURL {base}, the gateway key in
// X-Api-Key): messages, messages streaming with the SDK's own accumulation (finalMessage, text
// events), through the Anthropic, Vertex and OpenAI-style adapters; the model is the slug in the
// body and in message_start; errors and broken streams surface as the SDK's errors.
import t, { type Test } from 'tap';
import Anthropic, { APIError } from '@anthropic-ai/sdk';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { lastSim, simBody } from '../../helpers/inference.ts';

const TEXT = 'This is a simulated reply from the pi-gateway upstream simulator.';
const MESSAGES: Anthropic.MessageParam[] = [{ role: 'user', content: 'Say hello' }];

async function setup(t: Test): Promise<{ s: Stack; client: Anthropic; key: string }> {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 500, streamIdleTimeoutMs: 300 } });
  s.credit('open', '100');
  const key = s.key('open');
  return { s, key, client: new Anthropic({ baseURL: s.url, apiKey: key, maxRetries: 0 }) };
}

/** Fields the SDK forwards as they are (routing and simulator fields). */
function extra(body: Record<string, unknown>): Record<string, never> {
  return body as Record<string, never>;
}

const ROUTES = [
  ['delta', 'beta-labs/sonnet-ish', 'sonnet-ish-20250101'],
  ['gcp', 'beta-labs/sonnet-ish', 'sonnet-ish@20250101'],
  ['alpha', 'acme/chat-big', 'big-v1'],
] as const;

t.test('messages', async (t) => {
  const { s, client, key } = await setup(t);
  for (const [provider, model, upstream] of ROUTES) {
    const { data, response } = await client.messages
      .create({
        model,
        max_tokens: 100,
        system: 'be brief',
        messages: MESSAGES,
        ...extra({ provider: { only: [provider] }, sim: { usage: { prompt: 12, completion: 10 } } }),
      })
      .withResponse();
    t.equal(data.type, 'message');
    t.equal(data.model, model, `${provider}: the body names the slug`);
    t.equal(response.headers.get('x-pi-model'), data.model);
    t.equal(response.headers.get('x-pi-provider'), provider);
    t.equal(response.headers.get('x-pi-upstream-model'), upstream);
    t.equal(data.content[0]?.type === 'text' ? data.content[0].text : '', TEXT);
    t.equal(data.usage.input_tokens, 12);
    t.equal(data.stop_reason, 'end_turn');
    const rec = lastSim(s);
    const sent = simBody(s);
    t.notOk('provider' in sent, 'provider consumed');
    t.equal(sent['system'], 'be brief', 'everything else forwarded');
    t.notMatch(JSON.stringify(rec.headers), key, 'the gateway key never reaches the provider');
    if (provider === 'delta') {
      t.equal(rec.headers['x-api-key'], 'upstream-secret-delta-1');
      t.equal(
        rec.headers['anthropic-version'],
        '2026-10-21',
        "the SDK's own version header (1.12 sends 2026-10-21) is forwarded, not the adapter default",
      );
    }
  }
});

t.test('messages streaming with the SDK accumulation', async (t) => {
  const { s, client } = await setup(t);
  for (const [provider, model] of ROUTES) {
    const stream = client.messages.stream({
      model,
      max_tokens: 100,
      messages: MESSAGES,
      ...extra({ provider: { only: [provider] }, sim: { chunks: 5, usage: { prompt: 9, completion: 10 } } }),
    });
    let text = '';
    let startModel = '';
    stream.on('text', (d) => (text += d));
    stream.on('streamEvent', (e) => {
      if (e.type === 'message_start') startModel = e.message.model;
    });
    const final = await stream.finalMessage();
    t.equal(text, TEXT, `${provider}: text deltas`);
    t.equal(startModel, model, `${provider}: message_start names the slug`);
    t.equal(final.model, model);
    t.equal(final.content[0]?.type === 'text' ? final.content[0].text : '', TEXT);
    t.equal(final.stop_reason, 'end_turn');
    t.equal(final.usage.input_tokens, 9);
    t.equal(final.usage.output_tokens, 10, 'the output count from message_delta');
    const sent = simBody(s);
    if (provider === 'gcp') {
      t.match(lastSim(s).path, /:streamRawPredict$/);
      t.notOk('model' in sent);
    } else t.equal(sent['stream'], true);
  }
});

t.test('errors and broken streams', async (t) => {
  const { client } = await setup(t);
  const wrong = await client.messages
    .create({ model: 'acme/chat-small', max_tokens: 5, messages: MESSAGES })
    .catch((e: unknown) => e);
  t.ok(wrong instanceof APIError);
  if (wrong instanceof APIError) {
    t.equal(wrong.status, 422, 'a model not served on /v1/messages');
    t.match(JSON.stringify(wrong.error), /validation_failed/);
    t.match(JSON.stringify(wrong.error), /\/v1\/chat\/completions/);
  }
  const noMax = await client.messages
    .create({
      model: 'beta-labs/sonnet-ish',
      messages: MESSAGES,
    } as unknown as Anthropic.MessageCreateParamsNonStreaming)
    .catch((e: unknown) => e);
  t.ok(noMax instanceof APIError && noMax.status === 400, 'max_tokens is required');

  const upstream = await client.messages
    .create({
      model: 'beta-labs/sonnet-ish',
      max_tokens: 5,
      messages: MESSAGES,
      ...extra({ provider: { only: ['delta'] }, sim: { status: 400 } }),
    })
    .catch((e: unknown) => e);
  t.ok(upstream instanceof APIError);
  if (upstream instanceof APIError) {
    t.equal(upstream.status, 400, 'the provider error passes through');
    t.match(upstream.error, { type: 'error', error: { type: 'invalid_request_error' } });
    t.equal(upstream.headers?.get('x-pi-provider'), 'delta');
  }

  for (const sim of [{ resetAfterChunks: 2 }, { stallAfterChunks: 2 }, { malformedAfterChunks: 2 }]) {
    const stream = client.messages.stream({
      model: 'beta-labs/sonnet-ish',
      max_tokens: 100,
      messages: MESSAGES,
      ...extra({ provider: { only: ['delta'] }, sim: { chunks: 5, ...sim } }),
    });
    let text = '';
    stream.on('text', (d) => (text += d));
    const err = await stream.finalMessage().catch((e: unknown) => e);
    t.ok(err instanceof Error, `${JSON.stringify(sim)}: finalMessage rejects`);
    t.match(String((err as Error).message), /incomplete/, 'with the gateway error event message');
    t.ok(text.length > 0, 'after the text that did arrive');
  }
});
