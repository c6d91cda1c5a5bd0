// The Vercel AI SDK (`ai` with `@ai-sdk/openai` and `@ai-sdk/anthropic`) against the gateway, set up
// as the table of docs/clients.md says: the OpenAI provider with baseURL {base}/v1 (chat completions and
// responses), the Anthropic provider with baseURL {base}/v1 (it appends /messages itself, unlike
// @anthropic-ai/sdk), each with a gateway key. Text, streams, usage, the slug as the response's model,
// and gateway errors surfacing with the gateway's own message (the Anthropic provider reads it only
// from the Messages envelope's top-level "type": "error").
import t, { type Test } from 'tap';
import { APICallError, generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { lastSim } from '../../helpers/inference.ts';

const TEXT = 'This is a simulated reply from the pi-gateway upstream simulator.';

async function setup(t: Test): Promise<{ s: Stack; key: string }> {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 500, streamIdleTimeoutMs: 300 } });
  s.credit('open', '100');
  return { s, key: s.key('open') };
}

/** The error a call failed with (anything but a rejection fails the test). */
async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => new Error('the call succeeded'),
    (e: unknown) => e,
  );
}

t.test('@ai-sdk/openai: chat completions, generate and stream', async (t) => {
  const { s, key } = await setup(t);
  const openai = createOpenAI({ baseURL: s.v1, apiKey: key });
  const out = await generateText({
    model: openai.chat('acme/chat-small'),
    prompt: 'Say hello',
    maxOutputTokens: 50,
    maxRetries: 0,
  });
  t.equal(out.text, TEXT);
  t.equal(out.response.modelId, 'acme/chat-small', 'the slug is the response model');
  t.equal(out.response.headers?.['x-pi-model'], 'acme/chat-small');
  t.ok((out.usage.outputTokens ?? 0) > 0, 'usage reached the SDK');
  t.match(lastSim(s).path, /\/chat\/completions$/, 'a chat completions call upstream');

  const stream = streamText({ model: openai.chat('acme/chat-small'), prompt: 'Say hello', maxRetries: 0 });
  let text = '';
  for await (const part of stream.textStream) text += part;
  t.equal(text, TEXT, 'the streamed text');
  const usage = await stream.usage;
  t.ok((usage.outputTokens ?? 0) > 0, 'the stream’s usage frame (the gateway always asks for it)');
  t.equal((await stream.response).modelId, 'acme/chat-small');
});

t.test('@ai-sdk/openai: the Responses API (the provider’s default model factory)', async (t) => {
  const { s, key } = await setup(t);
  const openai = createOpenAI({ baseURL: s.v1, apiKey: key });
  const out = await generateText({ model: openai('acme/chat-small'), prompt: 'Say hello', maxRetries: 0 });
  t.match(lastSim(s).path, /\/responses$/, 'openai(id) speaks Responses');
  t.equal(out.text, TEXT);
  t.equal(out.response.modelId, 'acme/chat-small');
  const stream = streamText({ model: openai.responses('acme/chat-small'), prompt: 'Say hello', maxRetries: 0 });
  let text = '';
  for await (const part of stream.textStream) text += part;
  t.equal(text, TEXT, 'streamed');
});

t.test('@ai-sdk/anthropic: messages, generate and stream', async (t) => {
  const { s, key } = await setup(t);
  const anthropic = createAnthropic({ baseURL: s.v1, apiKey: key });
  const out = await generateText({
    model: anthropic('beta-labs/sonnet-ish'),
    prompt: 'Say hello',
    maxOutputTokens: 64,
    maxRetries: 0,
  });
  t.equal(out.text, TEXT);
  t.equal(out.response.modelId, 'beta-labs/sonnet-ish');
  t.equal(
    lastSim(s).path.endsWith('/messages') || lastSim(s).path.includes(':rawPredict'),
    true,
    'a Messages call upstream',
  );
  const stream = streamText({
    model: anthropic('beta-labs/sonnet-ish'),
    prompt: 'Say hello',
    maxOutputTokens: 64,
    maxRetries: 0,
  });
  let text = '';
  for await (const part of stream.textStream) text += part;
  t.equal(text, TEXT, 'streamed');
  t.ok(((await stream.usage).outputTokens ?? 0) > 0);
});

t.test('gateway errors reach both providers with the gateway’s message', async (t) => {
  const { s } = await setup(t);
  const bad = 'sk-pi-' + 'Z'.repeat(43);
  const anthropic = createAnthropic({ baseURL: s.v1, apiKey: bad });
  const a = await failure(
    generateText({ model: anthropic('beta-labs/sonnet-ish'), prompt: 'hi', maxOutputTokens: 8, maxRetries: 0 }),
  );
  t.ok(APICallError.isInstance(a), 'an APICallError');
  t.equal((a as APICallError).statusCode, 401);
  t.equal((a as APICallError).message, 'unknown API key', 'the gateway’s message, not "Unauthorized"');

  const openai = createOpenAI({ baseURL: s.v1, apiKey: bad });
  const o = await failure(generateText({ model: openai.chat('acme/chat-small'), prompt: 'hi', maxRetries: 0 }));
  t.ok(APICallError.isInstance(o));
  t.equal((o as APICallError).statusCode, 401);
  t.equal((o as APICallError).message, 'unknown API key');

  // A workspace with an empty wallet: 402 with the gateway's message.
  const empty = await startStack(t);
  const unpaid = await failure(
    generateText({
      model: createAnthropic({ baseURL: empty.v1, apiKey: empty.key('open') })('beta-labs/sonnet-ish'),
      prompt: 'hi',
      maxOutputTokens: 8,
      maxRetries: 0,
    }),
  );
  t.equal((unpaid as APICallError).statusCode, 402);
  t.match((unpaid as APICallError).message, /^insufficient balance/, '402 with its message');
});
