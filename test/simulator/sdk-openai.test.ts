// The official OpenAI SDK pointed straight at the simulator: chat (JSON and stream), responses (JSON
// and stream), images generate and edit all parse, and the simulator records what the SDK sent.
import t from 'tap';
import OpenAI, { toFile } from 'openai';
import { CHAT, startSim } from './helpers.ts';

const KEY = 'sk-sim-test';

t.test('chat completions', async (t) => {
  const sim = await startSim(t, { apiKey: KEY });
  const client = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });
  const res = await client.chat.completions.create({ ...CHAT, max_tokens: 100 });
  t.match(res.id, /^chatcmpl-[A-Za-z0-9]{29}$/);
  t.equal(res.object, 'chat.completion');
  t.equal(res.model, 'gpt-4o-mini');
  t.equal(res.choices[0]?.message.content, 'This is a simulated reply from the pi-gateway upstream simulator.');
  t.equal(res.choices[0]?.finish_reason, 'stop');
  t.equal(res.usage?.completion_tokens, 10);
  t.equal(res.usage?.total_tokens, (res.usage?.prompt_tokens ?? 0) + 10);
  t.match(res._request_id, /^req_[0-9a-f]{32}$/);
  t.equal(sim.requests.length, 1);
  t.equal(sim.requests[0]?.path, '/v1/chat/completions');
  t.equal(sim.requests[0]?.headers['authorization'], `Bearer ${KEY}`);
  t.same(sim.requests[0]?.body, { ...CHAT, max_tokens: 100 });
});

t.test('chat completions stream with include_usage', async (t) => {
  const sim = await startSim(t);
  const client = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    ...CHAT,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const c of stream) {
    chunks.push(c);
    text += c.choices[0]?.delta.content ?? '';
  }
  t.equal(text, 'This is a simulated reply from the pi-gateway upstream simulator.');
  t.equal(chunks[0]?.choices[0]?.delta.role, 'assistant');
  const last = chunks[chunks.length - 1];
  t.same(last?.choices, []);
  t.equal(last?.usage?.completion_tokens, 10);
  t.equal(chunks.length, 1 + 3 + 1 + 1, 'role, 3 deltas, finish, usage');
});

t.test('chat completions stream helper (runTools-free) finalContent', async (t) => {
  const sim = await startSim(t);
  const client = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });
  const runner = client.chat.completions.stream({ ...CHAT, stream_options: { include_usage: true } });
  const final = await runner.finalChatCompletion();
  t.equal(final.choices[0]?.message.content, 'This is a simulated reply from the pi-gateway upstream simulator.');
});

t.test('responses', async (t) => {
  const sim = await startSim(t, { apiKey: KEY });
  const client = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });
  const res = await client.responses.create({ model: 'gpt-4.1', input: 'Say hello', temperature: 0.5 });
  t.match(res.id, /^resp_[0-9a-f]{48}$/);
  t.equal(res.status, 'completed');
  t.equal(res.output_text, 'This is a simulated reply from the pi-gateway upstream simulator.');
  t.equal(res.usage?.output_tokens, 10);
  t.equal(res.temperature, 0.5);
  t.same(sim.requests[0]?.body, { model: 'gpt-4.1', input: 'Say hello', temperature: 0.5 });
});

t.test('responses stream', async (t) => {
  const sim = await startSim(t);
  const client = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });
  const stream = client.responses.stream({ model: 'gpt-4.1', input: 'Say hello' });
  const types: string[] = [];
  let deltas = '';
  for await (const e of stream) {
    types.push(e.type);
    if (e.type === 'response.output_text.delta') deltas += e.delta;
  }
  const final = await stream.finalResponse();
  t.equal(deltas, 'This is a simulated reply from the pi-gateway upstream simulator.');
  const item = final.output[0];
  t.equal(
    item?.type === 'message' && item.content[0]?.type === 'output_text' ? item.content[0].text : undefined,
    deltas,
  );
  t.equal(final.status, 'completed');
  t.equal(final.usage?.total_tokens, (final.usage?.input_tokens ?? 0) + 10);
  t.same(types, [
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.content_part.added',
    'response.output_text.delta',
    'response.output_text.delta',
    'response.output_text.delta',
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    'response.completed',
  ]);
});

t.test('images generate', async (t) => {
  const sim = await startSim(t, { apiKey: KEY });
  const client = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });
  const res = await client.images.generate({ model: 'gpt-image-1', prompt: 'a red square', n: 2 });
  t.equal(res.data?.length, 2);
  const png = Buffer.from(res.data?.[0]?.b64_json ?? '', 'base64');
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG');
  t.equal(res.usage?.output_tokens, 544);
  t.equal(res.usage?.input_tokens_details.text_tokens, res.usage?.input_tokens);
});

t.test('images edit (multipart) is parsed and recorded', async (t) => {
  const sim = await startSim(t, { apiKey: KEY });
  const client = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });
  const image = await toFile(Buffer.alloc(1234, 7), 'input.png', { type: 'image/png' });
  const res = await client.images.edit({ model: 'gpt-image-1', image, prompt: 'make it blue' });
  t.equal(res.data?.length, 1);
  t.equal(res.usage?.input_tokens_details.image_tokens, 194);
  const rec = sim.requests[0];
  t.equal(rec?.path, '/v1/images/edits');
  t.match(rec?.headers['content-type'], /^multipart\/form-data; boundary=/);
  t.same(rec?.body, {
    fields: { model: 'gpt-image-1', prompt: 'make it blue' },
    files: [{ name: 'image', filename: 'input.png', size: 1234, contentType: 'image/png' }],
  });
  t.ok((rec?.rawBody.length ?? 0) > 1234, 'raw multipart body kept');
});

t.test('wrong key: the SDK sees an AuthenticationError', async (t) => {
  const sim = await startSim(t, { apiKey: KEY });
  const client = new OpenAI({ baseURL: sim.url + '/v1', apiKey: 'sk-wrong', maxRetries: 0 });
  const err = await client.chat.completions.create(CHAT).catch((e: unknown) => e);
  t.type(err, OpenAI.AuthenticationError);
  t.equal((err as InstanceType<typeof OpenAI.AuthenticationError>).code, 'invalid_api_key');
});

t.test('scripted 429 reaches the SDK as RateLimitError with the headers', async (t) => {
  const sim = await startSim(t);
  sim.script('gpt-4o-mini', { status: 429, headers: { 'retry-after': '7' } }, 1);
  const client = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });
  const err = await client.chat.completions.create(CHAT).catch((e: unknown) => e);
  t.type(err, OpenAI.RateLimitError);
  t.equal((err as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after'), '7');
  const ok = await client.chat.completions.create(CHAT);
  t.equal(ok.choices[0]?.finish_reason, 'stop', 'script used up after one request');
});

t.test('in-band stream error surfaces as an SDK error', async (t) => {
  const sim = await startSim(t);
  const client = new OpenAI({ baseURL: sim.url + '/v1', apiKey: KEY, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    ...CHAT,
    stream: true,
    sim: { inbandError: true },
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  const err = await (async () => {
    for await (const _ of stream) {
      /* drain */
    }
  })().catch((e: unknown) => e);
  t.type(err, OpenAI.APIError);
});
