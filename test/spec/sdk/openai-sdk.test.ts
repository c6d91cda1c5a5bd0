// The official `openai` SDK against the gateway (baseURL {base}/v1, a gateway key, slugs as model
// ids): chat, chat streaming (iterator and the stream helper), responses, responses streaming,
// images generate and edit, gateway errors as APIError, and a broken stream surfacing as an error.
// Every transformation claim is checked on what the simulator received.
import t, { type Test } from 'tap';
import OpenAI, { APIError, toFile } from 'openai';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { lastSim, simBody } from '../../helpers/inference.ts';

const MESSAGES: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Say hello' }];
const TEXT = 'This is a simulated reply from the pi-gateway upstream simulator.';

async function setup(t: Test): Promise<{ s: Stack; client: OpenAI }> {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 500, streamIdleTimeoutMs: 300 } });
  s.credit('open', '100');
  const client = new OpenAI({ baseURL: s.v1, apiKey: s.key('open'), maxRetries: 0 });
  return { s, client };
}

/** Request-body extras the SDK forwards untouched (routing and simulator fields). */
function extra(body: Record<string, unknown>): Record<string, never> {
  return body as Record<string, never>;
}

t.test('chat completions', async (t) => {
  const { s, client } = await setup(t);
  const { data, response } = await client.chat.completions
    .create({
      model: 'acme/chat-small',
      messages: MESSAGES,
      max_tokens: 100,
      seed: 3,
      ...extra({ provider: { only: ['alpha'] }, sim: { requestId: 'req_sdk' } }),
    })
    .withResponse();
  t.equal(data.model, 'acme/chat-small');
  t.equal(data.object, 'chat.completion');
  t.equal(data.choices[0]?.message.content, TEXT);
  t.equal(data.usage?.completion_tokens, 10);
  t.equal(response.headers.get('x-pi-model'), data.model, 'X-Pi-Model equals the body model');
  t.equal(response.headers.get('x-pi-provider'), 'alpha');
  t.equal(response.headers.get('x-pi-upstream-model'), 'small-v1');
  t.equal(response.headers.get('x-pi-upstream-request-id'), 'req_sdk');
  t.equal(
    response.headers.get('x-request-id'),
    null,
    "the provider's x-request-id header is not forwarded (only the five provider headers are)",
  );
  t.same(simBody(s), {
    model: 'small-v1',
    messages: MESSAGES,
    max_tokens: 100,
    seed: 3,
    sim: { requestId: 'req_sdk' },
  });
  const h = lastSim(s).headers;
  t.equal(h['authorization'], 'Bearer upstream-secret-alpha-1');
  t.notOk('x-stainless-lang' in h, 'SDK telemetry headers are not forwarded');
});

t.test('chat completions streaming: usage forced, usage chunk last, slug in every chunk', async (t) => {
  const { s, client } = await setup(t);
  const stream = await client.chat.completions.create({
    model: 'acme/chat-small',
    messages: MESSAGES,
    stream: true,
    ...extra({ provider: { only: ['beta'] }, sim: { chunks: 4 } }),
  });
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  let text = '';
  for await (const c of stream) {
    chunks.push(c);
    text += c.choices[0]?.delta.content ?? '';
  }
  t.equal(text, TEXT);
  t.equal(chunks.length, 1 + 4 + 1 + 1);
  for (const c of chunks) t.equal(c.model, 'acme/chat-small');
  const last = chunks.at(-1);
  t.same(last?.choices, []);
  t.equal(last?.usage?.completion_tokens, 10, 'the usage chunk arrived although the client did not ask for it');
  t.same(simBody(s)['stream_options'], { include_usage: true });

  // The stream helper accumulates a final completion.
  const runner = client.chat.completions.stream({
    model: 'acme/chat-small',
    messages: MESSAGES,
    stream_options: { include_usage: false },
    ...extra({ provider: { only: ['alpha'] } }),
  });
  const final = await runner.finalChatCompletion();
  t.equal(final.choices[0]?.message.content, TEXT);
  t.equal(final.model, 'acme/chat-small');
  t.same(simBody(s)['stream_options'], { include_usage: true }, 'include_usage false is overridden');
});

t.test('chat transformations through the SDK', async (t) => {
  const { s, client } = await setup(t);
  await client.chat.completions.create({
    model: 'acme/reasoner',
    messages: MESSAGES,
    max_tokens: 2000,
    reasoning_effort: 'low',
    ...extra({ provider: { only: ['gamma'] } }),
  });
  t.same(
    simBody(s),
    { model: 'reasoner-gamma', messages: MESSAGES, max_tokens: 976, reasoning: { max_tokens: 1024 } },
    'gamma: level → budget, limit split',
  );
  await client.chat.completions.create({
    model: 'acme/reasoner',
    messages: MESSAGES,
    temperature: 0.1,
    frequency_penalty: 1,
    ...extra({ provider: { only: ['beta'] } }),
  });
  t.same(
    simBody(s),
    { model: 'reasoner-beta', messages: MESSAGES, temperature: 0.1, reasoning_effort: 'medium' },
    'beta: default level, unaccepted sampling removed',
  );
  await client.chat.completions.create({
    model: 'acme/reasoner',
    messages: MESSAGES,
    ...extra({ thinking: { type: 'disabled' }, provider: { only: ['alpha'] } }),
  });
  t.same(
    simBody(s),
    { model: 'reasoner-v1', messages: MESSAGES, reasoning_effort: 'none' },
    'thinking disabled → reasoning_effort none',
  );
  const r = await client.chat.completions.create({
    model: 'acme/reasoner',
    messages: MESSAGES,
    ...extra({ provider: { only: ['alpha'] }, sim: { usage: { prompt: 5, completion: 30, reasoning: 20 } } }),
  });
  t.equal(r.usage?.completion_tokens_details?.reasoning_tokens, 20, 'reasoning tokens reported');
  await client.chat.completions.create({
    model: 'acme/chat-small',
    messages: MESSAGES,
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }],
    tool_choice: 'required',
    response_format: { type: 'json_object' },
    ...extra({ provider: { only: ['alpha'] } }),
  });
  t.match(
    simBody(s),
    {
      tools: [{ type: 'function', function: { name: 'get_weather' } }],
      tool_choice: 'required',
      response_format: { type: 'json_object' },
    },
    'tools and formats forwarded',
  );
});

t.test('responses and responses streaming', async (t) => {
  const { s, client } = await setup(t);
  const res = await client.responses.create({
    model: 'acme/reasoner',
    input: 'Say hello',
    reasoning: { effort: 'low' },
    ...extra({ provider: { only: ['alpha'] } }),
  });
  t.equal(res.model, 'acme/reasoner');
  t.equal(res.output_text, TEXT);
  t.same(simBody(s), { model: 'reasoner-v1', input: 'Say hello', reasoning: { effort: 'low' } });

  const stream = client.responses.stream({
    model: 'acme/chat-small',
    input: 'Say hello',
    ...extra({ provider: { only: ['beta'] } }),
  });
  let deltas = '';
  const models: string[] = [];
  for await (const e of stream) {
    if (e.type === 'response.output_text.delta') deltas += e.delta;
    if ('response' in e) models.push(e.response.model);
  }
  const final = await stream.finalResponse();
  t.equal(deltas, TEXT);
  t.equal(final.model, 'acme/chat-small');
  t.ok(models.length >= 3);
  t.same([...new Set(models)], ['acme/chat-small'], 'every response snapshot names the slug');
  t.same(simBody(s), { model: 'small-beta', input: 'Say hello', stream: true }, 'stream left as sent');
});

t.test('images generate and edit', async (t) => {
  const { s, client } = await setup(t);
  const gen = await client.images.generate({
    model: 'acme/painter',
    prompt: 'a cat',
    n: 2,
    ...extra({ provider: { only: ['alpha'] } }),
  });
  t.equal(gen.data?.length, 2);
  t.match(gen.data?.[0]?.b64_json, /^iVBOR/);
  t.equal(simBody(s)['model'], 'painter-v1');

  const edit = await client.images.edit({
    model: 'acme/painter',
    prompt: 'make it blue',
    image: await toFile(Buffer.alloc(2048, 7), 'in.png', { type: 'image/png' }),
  });
  t.equal(edit.data?.length, 1);
  const rec = lastSim(s);
  t.match(rec.path, /images\/edits$/);
  t.match(rec.body, { fields: { prompt: 'make it blue' }, files: [{ filename: 'in.png', size: 2048 }] });
  t.ok(
    ['painter-v1', 'painter-deployment'].includes((rec.body as { fields: { model: string } }).fields.model),
    'the upstream model id',
  );
});

t.test('errors reach the SDK as APIError with the gateway error object', async (t) => {
  const { client } = await setup(t);
  const bare = await client.chat.completions.create({ model: 'gpt-4o', messages: MESSAGES }).catch((e: unknown) => e);
  t.ok(bare instanceof APIError);
  if (bare instanceof APIError) {
    t.equal(bare.status, 404);
    t.equal(bare.code, 'model_not_found');
    t.equal(bare.type, 'not_found_error');
    t.ok(bare.headers?.get('x-pi-trace-id'));
  }
  const unavailable = await client.chat.completions
    .create({
      model: 'acme/chat-small',
      messages: MESSAGES,
      ...extra({ provider: { only: ['alpha'] }, sim: { status: 403 } }),
    })
    .catch((e: unknown) => e);
  t.ok(unavailable instanceof APIError);
  if (unavailable instanceof APIError) {
    t.equal(unavailable.status, 503);
    t.equal(unavailable.code, 'provider_unavailable');
    t.equal(unavailable.headers?.get('x-pi-provider'), 'alpha');
  }
});

t.test('a stream broken after it started surfaces as an error, not a normal end', async (t) => {
  const { client } = await setup(t);
  for (const sim of [{ resetAfterChunks: 2 }, { stallAfterChunks: 2 }, { malformedAfterChunks: 2 }]) {
    const stream = await client.chat.completions.create({
      model: 'acme/chat-small',
      messages: MESSAGES,
      stream: true,
      ...extra({ provider: { only: ['alpha'] }, sim: { chunks: 5, ...sim } }),
    });
    let text = '';
    const err = await (async () => {
      for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    })().catch((e: unknown) => e);
    t.ok(err instanceof APIError, `chat ${JSON.stringify(sim)}: the SDK throws`);
    t.match(String((err as Error).message), /incomplete/);
    t.ok(text.length > 0, 'after the content that did arrive');
  }
  const rs = client.responses.stream({
    model: 'acme/chat-small',
    input: 'x',
    ...extra({ provider: { only: ['alpha'] }, sim: { chunks: 5, resetAfterChunks: 2 } }),
  });
  const types: string[] = [];
  const err = await (async () => {
    for await (const e of rs) types.push(e.type);
  })().catch((e: unknown) => e);
  t.equal(types.at(-1) ?? (err ? 'error' : ''), 'error', 'responses: the last event is an error event');
  t.notOk(types.includes('response.completed'));
  // The SDK finalizes whatever snapshot it holds when the stream ends: never a completed one here.
  const final = await rs.finalResponse().catch((e: unknown) => e);
  t.not(
    final instanceof Error ? 'error' : (final as OpenAI.Responses.Response).status,
    'completed',
    'responses: no completed response',
  );
});

t.test('models.list and models.retrieve: the catalog through the SDK', async (t) => {
  const { s, client } = await setup(t);
  const page = await client.models.list();
  const ids = page.data.map((m) => m.id);
  t.ok(ids.includes('acme/chat-small'), 'models.list reads {data: [...]}');
  // retrieve('acme/chat-small') sends GET /v1/models/acme%2Fchat-small and returns the body as the model.
  const { data: model, response } = await client.models.retrieve('acme/chat-small').withResponse();
  t.equal(
    new URL(response.url).pathname,
    '/v1/models/acme%2Fchat-small',
    'the SDK sends the slug as one encoded segment',
  );
  t.equal(model.id, 'acme/chat-small', 'id at the top level');
  t.equal((model as unknown as Record<string, unknown>)['name'], 'Acme: Chat Small', 'the catalog model’s own fields');
  const listed = (await (await fetch(`${s.v1}/models`)).json()) as { data: Record<string, unknown>[] };
  t.strictSame(
    model,
    listed.data.find((m) => m['id'] === 'acme/chat-small'),
    'the same object the list carries',
  );
  const missing = await client.models.retrieve('acme/nope').then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(missing instanceof APIError && missing.status === 404, 'an unknown slug is the catalog 404');
  t.match((missing as APIError).error, { code: 'model_not_found' });
});
