// OpenRouter's own clients against the gateway, set up as docs/clients.md says: `@openrouter/sdk`
// (`new OpenRouter({ serverURL: '{base}/v1', apiKey })`, whose zod schemas check every answer and
// every streamed chunk) and the Vercel AI SDK's OpenRouter provider (`createOpenRouter({ baseURL:
// '{base}/v1', apiKey })`). Chat, streams (the gateway turns usage on for a client that did not
// ask, and must not put `"usage": null` in its chunks then), usage and the slug as the model.
import t, { type Test } from 'tap';
import { OpenRouter } from '@openrouter/sdk';
import type { ChatResult, ChatStreamChunk } from '@openrouter/sdk/models';
import { createOpenRouter } from '@openrouter/ai-sdk-provider';
import { generateText, streamText } from 'ai';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { simBody } from '../../helpers/inference.ts';

const TEXT = 'This is a simulated reply from the pi-gateway upstream simulator.';

async function setup(t: Test): Promise<{ s: Stack; key: string }> {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 500, streamIdleTimeoutMs: 300 } });
  s.credit('open', '100');
  return { s, key: s.key('open') };
}

function client(s: Stack, key: string): OpenRouter {
  return new OpenRouter({ serverURL: s.v1, apiKey: key, retryConfig: { strategy: 'none' } });
}

t.test('@openrouter/sdk: chat.send', async (t) => {
  const { s, key } = await setup(t);
  const out = (await client(s, key).chat.send({
    chatRequest: { model: 'acme/chat-small', messages: [{ role: 'user', content: 'Say hello' }], maxTokens: 50 },
  })) as ChatResult;
  t.equal(out.model, 'acme/chat-small', 'the slug is the model');
  t.equal(out.choices[0]?.message.content, TEXT);
  t.ok((out.usage?.completionTokens ?? 0) > 0, 'usage parsed');
});

t.test('@openrouter/sdk: a stream parses chunk by chunk and ends with its usage', async (t) => {
  const { s, key } = await setup(t);
  const stream = (await client(s, key).chat.send({
    chatRequest: { model: 'acme/chat-small', messages: [{ role: 'user', content: 'Say hello' }], stream: true },
  })) as AsyncIterable<ChatStreamChunk>;
  let text = '';
  const chunks: ChatStreamChunk[] = [];
  for await (const chunk of stream) {
    chunks.push(chunk);
    text += chunk.choices[0]?.delta.content ?? '';
  }
  t.equal(text, TEXT, 'the streamed text');
  t.ok(
    chunks.every((c) => c.model === 'acme/chat-small'),
    'the slug in every chunk',
  );
  const withUsage = chunks.filter((c) => c.usage !== undefined);
  t.equal(withUsage.length, 1, 'one chunk carries usage: the final frame');
  t.equal(withUsage[0], chunks.at(-1), 'and it is the last');
  t.ok((withUsage[0]?.usage?.completionTokens ?? 0) > 0);
  t.match(
    simBody(s),
    { stream: true, stream_options: { include_usage: true } },
    'the gateway asked the provider for usage',
  );
});

t.test('Vercel AI SDK with @openrouter/ai-sdk-provider: generateText and streamText', async (t) => {
  const { s, key } = await setup(t);
  const openrouter = createOpenRouter({ baseURL: s.v1, apiKey: key });
  const out = await generateText({
    model: openrouter.chat('acme/chat-small'),
    prompt: 'Say hello',
    maxOutputTokens: 50,
    maxRetries: 0,
  });
  t.equal(out.text, TEXT);
  t.equal(out.response.modelId, 'acme/chat-small');
  t.ok((out.usage.outputTokens ?? 0) > 0, 'usage reached the SDK');

  const errors: unknown[] = [];
  const stream = streamText({
    model: openrouter.chat('acme/chat-small'),
    prompt: 'Say hello',
    maxRetries: 0,
    onError: ({ error }) => void errors.push(error),
  });
  let text = '';
  for await (const part of stream.textStream) text += part;
  t.equal(text, TEXT, 'the streamed text');
  t.same(errors, [], 'no stream part failed to parse');
  t.ok(((await stream.usage).outputTokens ?? 0) > 0, 'the stream’s usage frame');
  t.equal((await stream.response).modelId, 'acme/chat-small');
});
