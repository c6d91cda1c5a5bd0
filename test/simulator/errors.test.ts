// Error replies: scripted status per wire with the wire's own body and request-id header,
// errorBody override, extra headers (retry-after), requestId/reportModel knobs, auth (apiKey) in
// every accepted header, request validation, unknown paths.
import t from 'tap';
import { CHAT, MESSAGES, post, startSim } from './helpers.ts';

interface OpenAIError {
  error: { message: string; type: string; param: string | null; code: string | number | null };
}
interface AnthropicError {
  type: string;
  error: { type: string; message: string };
  request_id: string | null;
}

t.test('OpenAI-wire status errors: body shape, formatting and headers', async (t) => {
  const sim = await startSim(t);
  const cases: [string, unknown][] = [
    ['/v1/chat/completions', CHAT],
    ['/v1/responses', { model: 'gpt-4o-mini', input: 'hi' }],
    ['/v1/images/generations', { model: 'gpt-4o-mini', prompt: 'a cat' }],
  ];
  for (const [path, body] of cases) {
    for (const [status, type, code] of [
      [400, 'invalid_request_error', null],
      [401, 'invalid_request_error', 'invalid_api_key'],
      [403, 'invalid_request_error', 'model_not_found'],
      [404, 'invalid_request_error', 'model_not_found'],
      [429, 'requests', 'rate_limit_exceeded'],
      [500, 'server_error', null],
      [503, 'server_error', null],
    ] as const) {
      const res = await post(sim.url + path, body, { 'x-sim': JSON.stringify({ status }) });
      t.equal(res.status, status, `${path} ${status}`);
      t.equal(res.headers.get('content-type'), 'application/json');
      t.match(res.headers.get('x-request-id'), /^req_[0-9a-f]{32}$/);
      t.equal(res.headers.get('openai-version'), '2020-10-01');
      const text = await res.text();
      const parsed = JSON.parse(text) as OpenAIError;
      t.equal(text, JSON.stringify(parsed, null, 4) + '\n', 'indented four spaces, newline-terminated');
      t.same(Object.keys(parsed.error), ['message', 'type', 'param', 'code']);
      t.equal(parsed.error.type, type);
      t.equal(parsed.error.code, code);
      if (status === 404)
        t.equal(parsed.error.message, 'The model `gpt-4o-mini` does not exist or you do not have access to it.');
    }
  }
});

t.test('Anthropic-wire status errors', async (t) => {
  const sim = await startSim(t);
  for (const [status, type] of [
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [529, 'overloaded_error'],
  ] as const) {
    const res = await post(sim.url + '/v1/messages', { ...MESSAGES, sim: { status } });
    t.equal(res.status, status);
    const requestId = res.headers.get('request-id');
    t.match(requestId, /^req_011C[1-9A-HJ-NP-Za-km-z]{20}$/);
    t.ok(res.headers.get('anthropic-organization-id'));
    const body = (await res.json()) as AnthropicError;
    t.same(Object.keys(body), ['type', 'error', 'request_id']);
    t.equal(body.type, 'error');
    t.equal(body.error.type, type);
    t.equal(body.request_id, requestId);
  }
});

t.test('errorBody verbatim, extra headers replace defaults, requestId null omits the header', async (t) => {
  const sim = await startSim(t);
  const custom = { error: { message: 'quota', type: 'insufficient_quota', param: null, code: 'insufficient_quota' } };
  let res = await post(sim.url + '/v1/chat/completions', {
    ...CHAT,
    sim: { status: 429, errorBody: custom, headers: { 'retry-after': '12', 'x-request-id': 'req_fixed' } },
  });
  t.equal(res.status, 429);
  t.equal(res.headers.get('retry-after'), '12');
  t.equal(res.headers.get('x-request-id'), 'req_fixed');
  t.same(await res.json(), custom);

  res = await post(sim.url + '/v1/chat/completions', {
    ...CHAT,
    sim: { status: 502, errorBody: '<html>bad gateway</html>', requestId: null },
  });
  t.equal(res.status, 502);
  t.equal(res.headers.get('x-request-id'), null);
  t.equal(await res.text(), '<html>bad gateway</html>');

  res = await post(sim.url + '/v1/messages', { ...MESSAGES, sim: { requestId: 'req_011Cmine' } });
  t.equal(res.headers.get('request-id'), 'req_011Cmine');
  res = await post(sim.url + '/v1/messages', {
    ...MESSAGES,
    sim: { requestId: null, headers: { 'content-length': '1' } },
  });
  t.equal(res.headers.get('request-id'), null);
  t.equal(res.status, 200, 'framing headers in `headers` are ignored');
  await res.text();
});

t.test('reportModel: another id, or null to omit the field', async (t) => {
  const sim = await startSim(t);
  let res = await post(sim.url + '/v1/chat/completions', { ...CHAT, sim: { reportModel: 'gpt-4o-mini-2024-07-18' } });
  t.equal(((await res.json()) as { model: string }).model, 'gpt-4o-mini-2024-07-18');
  res = await post(sim.url + '/v1/chat/completions', { ...CHAT, sim: { reportModel: null } });
  const body = (await res.json()) as Record<string, unknown>;
  t.notOk('model' in body);
  t.same(Object.keys(body), ['id', 'object', 'created', 'choices', 'usage', 'service_tier', 'system_fingerprint']);
  res = await post(sim.url + '/v1/messages', { ...MESSAGES, stream: true, sim: { reportModel: null } });
  t.notMatch(await res.text(), /"model"/);
  res = await post(sim.url + '/v1/responses', {
    model: 'gpt-4.1',
    input: 'x',
    stream: true,
    sim: { reportModel: 'gpt-4.1-2025-04-14' },
  });
  t.match(await res.text(), /"model":"gpt-4\.1-2025-04-14"/);
});

t.test('apiKey: Bearer, x-api-key and api-key authenticate; others get the wire 401', async (t) => {
  const sim = await startSim(t, { apiKey: 'sk-up' });
  for (const h of [{ authorization: 'Bearer sk-up' }, { 'x-api-key': 'sk-up' }, { 'api-key': 'sk-up' }] as Record<
    string,
    string
  >[]) {
    const res = await post(sim.url + '/v1/chat/completions', CHAT, h);
    t.equal(res.status, 200, JSON.stringify(h));
    await res.text();
  }
  let res = await post(sim.url + '/v1/chat/completions', CHAT);
  t.equal(res.status, 401);
  const missing = (await res.json()) as OpenAIError;
  t.match(missing.error.message, /^You didn't provide an API key/);
  t.equal(missing.error.code, null);
  res = await post(sim.url + '/v1/responses', { model: 'x', input: 'y' }, { authorization: 'Bearer sk-other' });
  t.equal(res.status, 401);
  t.equal(((await res.json()) as OpenAIError).error.code, 'invalid_api_key');
  res = await post(sim.url + '/v1/messages', MESSAGES, { 'x-api-key': 'sk-other' });
  t.equal(res.status, 401);
  t.same(((await res.json()) as AnthropicError).error, { type: 'authentication_error', message: 'invalid x-api-key' });
  t.equal(sim.requests.length, 6, 'rejected requests are recorded too');
});

t.test('missing required fields and bad JSON: the wire 400', async (t) => {
  const sim = await startSim(t);
  let res = await post(sim.url + '/v1/chat/completions', { messages: [] });
  t.equal(res.status, 400);
  t.same(((await res.json()) as OpenAIError).error, {
    message: "Missing required parameter: 'model'.",
    type: 'invalid_request_error',
    param: 'model',
    code: 'missing_required_parameter',
  });
  res = await post(sim.url + '/v1/messages', { model: 'claude-sim-1', messages: [] });
  t.equal(res.status, 400);
  t.same(((await res.json()) as AnthropicError).error, {
    type: 'invalid_request_error',
    message: 'max_tokens: Field required',
  });
  res = await post(sim.url + '/v1/chat/completions', '{"model": ');
  t.equal(res.status, 400);
  t.match(((await res.json()) as OpenAIError).error.message, /^We could not parse the JSON body/);
  t.equal(sim.requests[2]?.body, null, 'unparseable body recorded as null');
  t.equal(sim.requests[2]?.rawBody.toString(), '{"model": ');
});

t.test('invalid sim values are a 400 naming the problem', async (t) => {
  const sim = await startSim(t);
  let res = await post(sim.url + '/v1/chat/completions', { ...CHAT, sim: { ttfbMS: 5 } });
  t.equal(res.status, 400);
  t.equal(((await res.json()) as OpenAIError).error.message, 'simulator: sim: unknown key "ttfbMS"');
  res = await post(sim.url + '/v1/messages', MESSAGES, { 'x-sim': '{bad' });
  t.equal(res.status, 400);
  t.equal(((await res.json()) as AnthropicError).error.message, 'simulator: x-sim header is not valid JSON');
  res = await post(sim.url + '/v1/chat/completions', { ...CHAT, sim: { reset: 'sometimes' } });
  t.match(((await res.json()) as OpenAIError).error.message, /sim\.reset must be one of/);
  t.throws(() => sim.script('m', { chunks: -1 }), /behaviour\.chunks must be/);
});

t.test('unknown paths and non-POST inference calls: 404 in the OpenAI shape', async (t) => {
  const sim = await startSim(t);
  let res = await post(sim.url + '/v1/embeddings', { model: 'x', input: 'y' });
  t.equal(res.status, 404);
  t.same(((await res.json()) as OpenAIError).error, {
    message: 'Invalid URL (POST /v1/embeddings)',
    type: 'invalid_request_error',
    param: null,
    code: null,
  });
  res = await fetch(sim.url + '/v1/chat/completions');
  t.equal(res.status, 404);
  t.equal(((await res.json()) as OpenAIError).error.message, 'Invalid URL (GET /v1/chat/completions)');
  t.equal(sim.requests.length, 0);
});
