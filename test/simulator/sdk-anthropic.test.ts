// The official Anthropic SDK pointed straight at the simulator: messages.create, messages.stream
// with finalMessage(), errors in Anthropic's shape, and the Vertex rawPredict path form.
import t from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { MESSAGES, parseSse, post, startSim } from './helpers.ts';

const KEY = 'sk-ant-sim';
const TEXT = 'This is a simulated reply from the pi-gateway upstream simulator.';

t.test('messages.create', async (t) => {
  const sim = await startSim(t, { apiKey: KEY });
  const client = new Anthropic({ baseURL: sim.url, apiKey: KEY, maxRetries: 0 });
  const msg = await client.messages.create({ ...MESSAGES });
  t.match(msg.id, /^msg_01[1-9A-HJ-NP-Za-km-z]{22}$/);
  t.equal(msg.type, 'message');
  t.equal(msg.role, 'assistant');
  t.equal(msg.model, 'claude-sim-1');
  t.same(msg.content, [{ type: 'text', text: TEXT }]);
  t.equal(msg.stop_reason, 'end_turn');
  t.equal(msg.stop_sequence, null);
  t.equal(msg.usage.output_tokens, 10);
  t.match(msg._request_id, /^req_011C/);
  const rec = sim.requests[0];
  t.equal(rec?.path, '/v1/messages');
  // SDK 1.12 sends the key as a Bearer token; older ones used x-api-key. Both authenticate.
  t.ok(rec?.headers['x-api-key'] === KEY || rec?.headers['authorization'] === `Bearer ${KEY}`, 'key sent');
  t.ok(rec?.headers['anthropic-version'], 'SDK version header recorded');
});

t.test('messages.stream finalMessage', async (t) => {
  const sim = await startSim(t);
  const client = new Anthropic({ baseURL: sim.url, apiKey: KEY, maxRetries: 0 });
  const stream = client.messages.stream({
    ...MESSAGES,
    sim: { chunks: 5, usage: { prompt: 42, completion: 17, cached: 3, cacheWrite: 2 } },
  } as Anthropic.MessageStreamParams);
  const deltas: string[] = [];
  stream.on('text', (d) => deltas.push(d));
  const final = await stream.finalMessage();
  t.equal(deltas.length, 5);
  t.equal(deltas.join(''), TEXT);
  t.equal(final.content.length, 1);
  t.equal(final.content[0]?.type === 'text' ? final.content[0].text : undefined, TEXT);
  t.equal(final.usage.input_tokens, 42);
  t.equal(final.usage.output_tokens, 17);
  t.equal(final.usage.cache_read_input_tokens, 3);
  t.equal(final.usage.cache_creation_input_tokens, 2);
  t.equal(final.stop_reason, 'end_turn');
});

t.test('max_tokens caps the reply: stop_reason max_tokens', async (t) => {
  const sim = await startSim(t);
  const client = new Anthropic({ baseURL: sim.url, apiKey: KEY, maxRetries: 0 });
  const msg = await client.messages.create({ ...MESSAGES, max_tokens: 4 });
  t.equal(msg.stop_reason, 'max_tokens');
  t.equal(msg.content[0]?.type === 'text' ? msg.content[0].text : '', 'This is a simulated ');
  t.equal(msg.usage.output_tokens, 4);
});

t.test('wrong and missing key: 401 authentication_error', async (t) => {
  const sim = await startSim(t, { apiKey: KEY });
  const client = new Anthropic({ baseURL: sim.url, apiKey: 'nope', maxRetries: 0 });
  const err = await client.messages.create(MESSAGES).catch((e: unknown) => e);
  t.type(err, Anthropic.AuthenticationError);
  const res = await post(sim.url + '/v1/messages', MESSAGES);
  t.equal(res.status, 401);
  const body = (await res.json()) as { type: string; error: { type: string; message: string }; request_id: string };
  t.equal(body.type, 'error');
  t.same(body.error, { type: 'authentication_error', message: 'x-api-key header is required' });
  t.equal(body.request_id, res.headers.get('request-id'));
});

t.test('scripted 529 and in-band stream error reach the SDK', async (t) => {
  const sim = await startSim(t);
  const client = new Anthropic({ baseURL: sim.url, apiKey: KEY, maxRetries: 0 });
  sim.script('claude-sim-1', { status: 529 }, 1);
  const err = await client.messages.create(MESSAGES).catch((e: unknown) => e);
  t.type(err, Anthropic.APIError);
  t.equal((err as InstanceType<typeof Anthropic.APIError>).status, 529);
  sim.script('claude-sim-1', { inbandError: true }, 1);
  const streamErr = await client.messages
    .stream(MESSAGES)
    .finalMessage()
    .catch((e: unknown) => e);
  t.type(streamErr, Anthropic.APIError);
  t.match(String(streamErr), /Overloaded/);
});

t.test('Vertex rawPredict / streamRawPredict: model from the URL, stream from the verb', async (t) => {
  const sim = await startSim(t);
  const base = `${sim.url}/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4%405`;
  const body = { anthropic_version: 'vertex-2023-10-16', max_tokens: 64, messages: MESSAGES.messages };
  const res = await post(`${base}:rawPredict`, body);
  t.equal(res.status, 200);
  const msg = (await res.json()) as { model: string; content: { text: string }[] };
  t.equal(msg.model, 'claude-sonnet-4@5');
  t.equal(msg.content[0]?.text, TEXT);

  const s = await post(`${base}:streamRawPredict`, body);
  t.match(s.headers.get('content-type'), /^text\/event-stream/);
  const events = parseSse(await s.text());
  t.same(
    events.map((e) => e.event),
    [
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ],
  );
  for (const e of events) t.equal((JSON.parse(e.data) as { type: string }).type, e.event, `data.type = ${e.event}`);

  const missing = await post(`${base}:rawPredict`, { max_tokens: 5, messages: [] });
  t.equal(missing.status, 400);
  t.same(((await missing.json()) as { error: unknown }).error, {
    type: 'invalid_request_error',
    message: 'anthropic_version: Field required',
  });

  sim.script('claude-sonnet-4@5', { status: 503 }, 1);
  const scripted = await post(`${base}:rawPredict`, body);
  t.equal(scripted.status, 503, 'scripts match the model named in the URL');
});
