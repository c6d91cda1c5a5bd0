// LangChain's chat models against the gateway, set up as docs/clients.md's table says: ChatOpenAI with
// `configuration.baseURL` {base}/v1, ChatAnthropic with `anthropicApiUrl` {base} (it wraps
// @anthropic-ai/sdk, which adds /v1 itself), each with a gateway key and a slug as the model.
// invoke, stream, usage metadata, the slug as the response's model, and gateway errors.
import t, { type Test } from 'tap';
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { lastSim } from '../../helpers/inference.ts';

const TEXT = 'This is a simulated reply from the pi-gateway upstream simulator.';

async function setup(t: Test): Promise<{ s: Stack; key: string }> {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 500, streamIdleTimeoutMs: 300 } });
  s.credit('open', '100');
  return { s, key: s.key('open') };
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => new Error('the call succeeded'),
    (e: unknown) => e,
  );
}

t.test('ChatOpenAI: invoke and stream through chat completions', async (t) => {
  const { s, key } = await setup(t);
  const llm = new ChatOpenAI({
    model: 'acme/chat-small',
    apiKey: key,
    configuration: { baseURL: s.v1 },
    maxRetries: 0,
    maxTokens: 50,
  });
  const msg = await llm.invoke('Say hello');
  t.equal(msg.content, TEXT);
  t.equal(msg.response_metadata['model_name'], 'acme/chat-small', 'the slug is the response model');
  t.ok((msg.usage_metadata?.output_tokens ?? 0) > 0, 'usage metadata');
  t.match(lastSim(s).path, /\/chat\/completions$/);
  let text = '';
  for await (const chunk of await llm.stream('Say hello'))
    text += typeof chunk.content === 'string' ? chunk.content : '';
  t.equal(text, TEXT, 'streamed');
});

t.test('ChatOpenAI on the Responses API', async (t) => {
  const { s, key } = await setup(t);
  const llm = new ChatOpenAI({
    model: 'acme/chat-small',
    apiKey: key,
    configuration: { baseURL: s.v1 },
    maxRetries: 0,
    useResponsesApi: true,
  });
  const msg = await llm.invoke('Say hello');
  t.match(lastSim(s).path, /\/responses$/);
  t.equal(msg.text, TEXT);
});

t.test('ChatAnthropic: invoke and stream through messages', async (t) => {
  const { s, key } = await setup(t);
  const llm = new ChatAnthropic({
    model: 'beta-labs/sonnet-ish',
    apiKey: key,
    anthropicApiUrl: s.url,
    maxRetries: 0,
    maxTokens: 64,
  });
  const msg = await llm.invoke('Say hello');
  t.equal(msg.text, TEXT);
  t.equal(msg.response_metadata['model'], 'beta-labs/sonnet-ish');
  t.ok((msg.usage_metadata?.output_tokens ?? 0) > 0);
  let text = '';
  for await (const chunk of await llm.stream('Say hello')) text += chunk.text;
  t.equal(text, TEXT, 'streamed');
});

t.test('gateway errors reach LangChain with their status and message', async (t) => {
  const { s } = await setup(t);
  const bad = 'sk-pi-' + 'Z'.repeat(43);
  const o = (await failure(
    new ChatOpenAI({ model: 'acme/chat-small', apiKey: bad, configuration: { baseURL: s.v1 }, maxRetries: 0 }).invoke(
      'hi',
    ),
  )) as { status?: number; message: string };
  t.equal(o.status, 401);
  t.match(o.message, /unknown API key/);
  const a = (await failure(
    new ChatAnthropic({
      model: 'beta-labs/sonnet-ish',
      apiKey: bad,
      anthropicApiUrl: s.url,
      maxRetries: 0,
      maxTokens: 8,
    }).invoke('hi'),
  )) as { status?: number; message: string };
  t.equal(a.status, 401);
  t.match(a.message, /unknown API key/);
});
