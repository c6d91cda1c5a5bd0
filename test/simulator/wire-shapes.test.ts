// Byte-level shape of each wire: field order, indentation, stream framing, include_usage on/off,
// obfuscation, max_tokens caps, usage knobs, chunks/text/echo, and the Azure path form.
import t from 'tap';
import { CHAT, MESSAGES, parseSse, post, startSim, sseJson } from './helpers.ts';

const TEXT = 'This is a simulated reply from the pi-gateway upstream simulator.';

t.test('chat JSON: OpenAI field order and two-space indentation', async (t) => {
  const sim = await startSim(t);
  const res = await post(sim.url + '/v1/chat/completions', {
    ...CHAT,
    sim: { usage: { prompt: 11, completion: 7, cached: 4, reasoning: 2 } },
  });
  t.equal(res.headers.get('content-type'), 'application/json');
  t.match(res.headers.get('openai-processing-ms'), /^\d+$/);
  const text = await res.text();
  const body = JSON.parse(text) as Record<string, unknown>;
  t.equal(text, JSON.stringify(body, null, 2), 'indented exactly as JSON.stringify(…, 2)');
  t.same(Object.keys(body), [
    'id',
    'object',
    'created',
    'model',
    'choices',
    'usage',
    'service_tier',
    'system_fingerprint',
  ]);
  t.same(body['choices'], [
    {
      index: 0,
      message: { role: 'assistant', content: TEXT, refusal: null, annotations: [] },
      logprobs: null,
      finish_reason: 'stop',
    },
  ]);
  t.same(body['usage'], {
    prompt_tokens: 11,
    completion_tokens: 7,
    total_tokens: 18,
    prompt_tokens_details: { cached_tokens: 4, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 2,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  });
  t.match(body['system_fingerprint'], /^fp_[0-9a-f]{10}$/);
});

t.test('chat stream without include_usage: no usage anywhere, ends with [DONE]', async (t) => {
  const sim = await startSim(t);
  const res = await post(sim.url + '/v1/chat/completions', { ...CHAT, stream: true });
  t.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  t.equal(res.headers.get('content-length'), null);
  const text = await res.text();
  t.ok(text.endsWith('data: [DONE]\n\n'));
  t.notOk(/^event:/m.test(text), 'data-only frames');
  const chunks = sseJson(text);
  t.equal(chunks.length, 5);
  for (const c of chunks) {
    t.same(Object.keys(c), [
      'id',
      'object',
      'created',
      'model',
      'service_tier',
      'system_fingerprint',
      'choices',
      'obfuscation',
    ]);
    t.equal(c['object'], 'chat.completion.chunk');
  }
  t.equal(new Set(chunks.map((c) => c['id'])).size, 1, 'one id per stream');
  const choices = chunks.map((c) => (c['choices'] as Record<string, unknown>[])[0]);
  t.same(choices[0], {
    index: 0,
    delta: { role: 'assistant', content: '', refusal: null },
    logprobs: null,
    finish_reason: null,
  });
  t.same(choices[4], { index: 0, delta: {}, logprobs: null, finish_reason: 'stop' });
  t.equal(
    choices
      .slice(1, 4)
      .map((c) => (c!['delta'] as { content: string }).content)
      .join(''),
    TEXT,
  );
});

t.test('chat stream with include_usage: usage:null on every chunk, usage chunk with empty choices', async (t) => {
  const sim = await startSim(t);
  let res = await post(sim.url + '/v1/chat/completions', {
    ...CHAT,
    stream: true,
    stream_options: { include_usage: true, include_obfuscation: false },
  });
  let chunks = sseJson(await res.text());
  t.equal(chunks.length, 6);
  for (const c of chunks.slice(0, 5))
    t.same(Object.keys(c), [
      'id',
      'object',
      'created',
      'model',
      'service_tier',
      'system_fingerprint',
      'choices',
      'usage',
    ]);
  for (const c of chunks.slice(0, 5)) t.equal(c['usage'], null);
  t.same(chunks[5]?.['choices'], []);
  t.equal((chunks[5]!['usage'] as { completion_tokens: number }).completion_tokens, 10);

  res = await post(sim.url + '/v1/chat/completions', {
    ...CHAT,
    stream: true,
    stream_options: { include_usage: true },
    sim: { noUsageInStream: true },
  });
  chunks = sseJson(await res.text());
  t.equal(chunks.length, 5, 'noUsageInStream drops the usage chunk');
});

t.test('max_tokens / max_completion_tokens cap the words; finish_reason length', async (t) => {
  const sim = await startSim(t);
  let res = await post(sim.url + '/v1/chat/completions', { ...CHAT, max_completion_tokens: 2, stream: true });
  const chunks = sseJson(await res.text());
  t.equal(chunks.length, 1 + 2 + 1, 'two words → two deltas');
  t.equal((chunks[3]!['choices'] as { finish_reason: string }[])[0]?.finish_reason, 'length');
  res = await post(sim.url + '/v1/chat/completions', { ...CHAT, max_tokens: 3 });
  const body = (await res.json()) as {
    choices: { message: { content: string }; finish_reason: string }[];
    usage: { completion_tokens: number };
  };
  t.equal(body.choices[0]?.message.content, 'This is a ');
  t.equal(body.choices[0]?.finish_reason, 'length');
  t.equal(body.usage.completion_tokens, 3);
});

t.test('chunks, text and echo', async (t) => {
  const sim = await startSim(t);
  let res = await post(sim.url + '/v1/messages', { ...MESSAGES, stream: true, sim: { chunks: 25 } });
  let deltas = parseSse(await res.text()).filter((e) => e.event === 'content_block_delta');
  t.equal(deltas.length, 25, 'default text grows to the chunk count');
  res = await post(sim.url + '/v1/messages', { ...MESSAGES, stream: true, sim: { chunks: 4, text: 'ab' } });
  deltas = parseSse(await res.text()).filter((e) => e.event === 'content_block_delta');
  t.same(
    deltas.map((e) => (JSON.parse(e.data) as { delta: { text: string } }).delta.text),
    ['a', 'b'],
    'short text split by characters, at most one per chunk',
  );
  res = await post(sim.url + '/v1/chat/completions', { ...CHAT, stream: true, sim: { text: '' } });
  t.equal(sseJson(await res.text()).length, 2, 'empty reply: role chunk and finish chunk');
  const sent = { ...CHAT, max_tokens: 1, extra: { nested: [1, 2] }, sim: { echo: true, chunks: 7 } };
  res = await post(sim.url + '/v1/chat/completions', sent);
  const echoed = (await res.json()) as { choices: { message: { content: string } }[] };
  t.same(JSON.parse(echoed.choices[0]?.message.content ?? ''), sent, 'echo is the body received, never capped');
});

t.test('responses JSON: field order, echoed parameters, Python-style floats', async (t) => {
  const sim = await startSim(t);
  const res = await post(sim.url + '/v1/responses', {
    model: 'gpt-4.1',
    input: 'hi',
    temperature: 1,
    top_p: 0.9,
    instructions: 'be brief',
    reasoning: { effort: 'low' },
  });
  const text = await res.text();
  t.match(text, /\n {2}"temperature": 1\.0,\n/);
  t.match(text, /\n {2}"top_p": 0\.9,\n/);
  const body = JSON.parse(text) as Record<string, unknown>;
  t.same(Object.keys(body), [
    'id',
    'object',
    'created_at',
    'status',
    'background',
    'error',
    'incomplete_details',
    'instructions',
    'max_output_tokens',
    'max_tool_calls',
    'model',
    'output',
    'parallel_tool_calls',
    'previous_response_id',
    'prompt_cache_key',
    'reasoning',
    'safety_identifier',
    'service_tier',
    'store',
    'temperature',
    'text',
    'tool_choice',
    'tools',
    'top_logprobs',
    'top_p',
    'truncation',
    'usage',
    'user',
    'metadata',
  ]);
  t.equal(body['instructions'], 'be brief');
  t.same(body['reasoning'], { effort: 'low', summary: null });
  const output = body['output'] as Record<string, unknown>[];
  t.same(Object.keys(output[0] ?? {}), ['id', 'type', 'status', 'content', 'role']);
  t.match(output[0]?.['id'], /^msg_[0-9a-f]{48}$/);
  t.same((output[0]!['content'] as unknown[])[0], { type: 'output_text', annotations: [], logprobs: [], text: TEXT });
  t.same(Object.keys(body['usage'] as object), [
    'input_tokens',
    'input_tokens_details',
    'output_tokens',
    'output_tokens_details',
    'total_tokens',
  ]);
});

t.test('responses stream: named events, sequence numbers, usage knobs', async (t) => {
  const sim = await startSim(t);
  const res = await post(sim.url + '/v1/responses', {
    model: 'gpt-4.1',
    input: 'hi',
    stream: true,
    sim: { usage: { prompt: 5, completion: 9, cached: 1, reasoning: 4 } },
  });
  const events = parseSse(await res.text());
  events.forEach((e, i) => {
    const data = JSON.parse(e.data) as { type: string; sequence_number: number };
    t.equal(data.type, e.event);
    t.equal(data.sequence_number, i);
  });
  const completed = JSON.parse(events[events.length - 1]?.data ?? '') as {
    response: { status: string; usage: unknown };
  };
  t.equal(completed.response.status, 'completed');
  t.same(completed.response.usage, {
    input_tokens: 5,
    input_tokens_details: { cached_tokens: 1 },
    output_tokens: 9,
    output_tokens_details: { reasoning_tokens: 4 },
    total_tokens: 14,
  });
  const capped = parseSse(
    await (
      await post(sim.url + '/v1/responses', { model: 'gpt-4.1', input: 'hi', stream: true, max_output_tokens: 2 })
    ).text(),
  );
  t.equal(capped[capped.length - 1]?.event, 'response.incomplete');
});

t.test('messages JSON: Anthropic field order, compact, usage knobs', async (t) => {
  const sim = await startSim(t);
  const res = await post(sim.url + '/v1/messages', {
    ...MESSAGES,
    sim: { usage: { prompt: 20, completion: 6, cached: 5, cacheWrite: 8 } },
  });
  t.equal(res.headers.get('content-type'), 'application/json');
  const text = await res.text();
  const body = JSON.parse(text) as Record<string, unknown>;
  t.equal(text, JSON.stringify(body), 'compact');
  t.same(Object.keys(body), ['id', 'type', 'role', 'model', 'content', 'stop_reason', 'stop_sequence', 'usage']);
  t.same(body['usage'], {
    input_tokens: 20,
    cache_creation_input_tokens: 8,
    cache_read_input_tokens: 5,
    cache_creation: { ephemeral_5m_input_tokens: 8, ephemeral_1h_input_tokens: 0 },
    output_tokens: 6,
    service_tier: 'standard',
  });
});

t.test('messages stream: event order, data.type, index, final usage', async (t) => {
  const sim = await startSim(t);
  const res = await post(sim.url + '/v1/messages', { ...MESSAGES, stream: true });
  t.equal(res.headers.get('cache-control'), 'no-cache');
  const text = await res.text();
  t.match(text, /^event: message_start\ndata: \{"type":"message_start"/);
  t.match(text, /\nevent: ping\ndata: \{"type": "ping"\}\n\n/);
  const events = parseSse(text);
  for (const e of events) {
    const data = JSON.parse(e.data) as { type: string; index?: number };
    t.equal(data.type, e.event);
    if (e.event?.startsWith('content_block')) t.equal(data.index, 0);
  }
  const delta = JSON.parse(events[events.length - 2]?.data ?? '') as {
    delta: unknown;
    usage: { output_tokens: number };
  };
  t.same(delta.delta, { stop_reason: 'end_turn', stop_sequence: null });
  t.equal(delta.usage.output_tokens, 10);
  const start = JSON.parse(events[0]?.data ?? '') as {
    message: { usage: { output_tokens: number }; content: unknown[]; stop_reason: null };
  };
  t.equal(start.message.usage.output_tokens, 1);
  t.same(start.message.content, []);
  const noUsage = parseSse(
    await (await post(sim.url + '/v1/messages', { ...MESSAGES, stream: true, sim: { noUsageInStream: true } })).text(),
  );
  t.notOk(
    'usage' in (JSON.parse(noUsage[noUsage.length - 2]?.data ?? '{}') as object),
    'noUsageInStream drops message_delta usage',
  );
});

t.test('Azure path form: the deployment is the model', async (t) => {
  const sim = await startSim(t, { apiKey: 'azure-key' });
  const res = await post(
    sim.url + '/openai/deployments/my%20gpt/chat/completions?api-version=2024-10-21',
    { messages: CHAT.messages },
    { 'api-key': 'azure-key' },
  );
  t.equal(res.status, 200);
  t.equal(((await res.json()) as { model: string }).model, 'my gpt');
  t.equal(sim.requests[0]?.query, 'api-version=2024-10-21');
  const img = await post(
    sim.url + '/openai/deployments/img/images/generations?api-version=2024-10-21',
    { prompt: 'x' },
    { 'api-key': 'azure-key' },
  );
  t.equal(img.status, 200);
  await img.text();
});
