// Response headers (spec: Response headers rules 1–4) and the response `model` rewrite, through raw
// fetch: X-Pi-* on provider answers, only five provider headers, no Content-Length on streams,
// gateway errors with the gateway's headers only, provider errors passed through with theirs, and a
// refused credential turned into 503 naming the provider.
import t, { type Test } from 'tap';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { GATEWAY_HEADERS, headerNames, parseSse, sseJson, USER } from '../../helpers/inference.ts';

const SECURITY: [string, string][] = [
  ['x-content-type-options', 'nosniff'],
  ['x-frame-options', 'DENY'],
  ['referrer-policy', 'strict-origin-when-cross-origin'],
  ['content-security-policy', "frame-ancestors 'none'"],
  ['permissions-policy', 'camera=(), microphone=(), geolocation=()'],
  ['strict-transport-security', 'max-age=31536000; includeSubDomains'],
];

function fixedHeaders(t: Test, res: Response): void {
  t.match(res.headers.get('x-pi-trace-id'), /^[0-9a-f-]{36}$/, 'X-Pi-Trace-Id');
  t.equal(res.headers.get('access-control-allow-origin'), '*');
  const exposed = (res.headers.get('access-control-expose-headers') ?? '').split(/,\s*/).map((h) => h.toLowerCase());
  for (const h of [
    'x-pi-trace-id',
    'x-pi-provider',
    'x-pi-model',
    'x-pi-upstream-model',
    'x-pi-upstream-request-id',
    'retry-after',
    'content-encoding',
  ]) {
    t.ok(exposed.includes(h), `exposes ${h}`);
  }
  for (const [k, v] of SECURITY) t.equal(res.headers.get(k), v, k);
}

function noProviderHeaders(t: Test, res: Response, what: string): void {
  for (const h of ['x-pi-provider', 'x-pi-model', 'x-pi-upstream-model', 'x-pi-upstream-request-id'])
    t.equal(res.headers.get(h), null, `${what}: no ${h}`);
}

function onlyAllowedHeaders(t: Test, res: Response): void {
  const extra = headerNames(res).filter((h) => !GATEWAY_HEADERS.has(h));
  t.same(extra, [], 'no provider header beyond the five');
}

async function errorOf(res: Response): Promise<{ message: string; type: string; code: string }> {
  const body = (await res.json()) as { error: { message: string; type: string; code: string } };
  return body.error;
}

async function stackWithKey(t: Test, opts: Parameters<typeof startStack>[1] = {}): Promise<{ s: Stack; key: string }> {
  const s = await startStack(t, opts);
  const key = s.key('open');
  s.credit('open', '100');
  return { s, key };
}

t.test('provider answers: X-Pi-* headers and the model rewrite, JSON and stream, all three protocols', async (t) => {
  const { s, key } = await stackWithKey(t);

  t.test('chat JSON', async (t) => {
    const sim = {
      requestId: 'req_up_1',
      headers: {
        'x-ratelimit-remaining-requests': '9',
        'set-cookie': 'a=b',
        'cache-control': 'no-store',
        'retry-after': '3',
        'openai-project': 'p',
      },
    };
    const res = await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] }, sim },
      { key },
    );
    t.equal(res.status, 200);
    const text = await res.text();
    fixedHeaders(t, res);
    t.equal(res.headers.get('x-pi-provider'), 'alpha');
    t.equal(res.headers.get('x-pi-model'), 'acme/chat-small');
    t.equal(res.headers.get('x-pi-upstream-model'), 'small-v1', 'the model the provider reported, verbatim');
    t.equal(res.headers.get('x-pi-upstream-request-id'), 'req_up_1');
    t.equal(res.headers.get('content-type'), 'application/json');
    t.equal(res.headers.get('cache-control'), 'no-store', 'Cache-Control forwarded');
    t.equal(res.headers.get('retry-after'), '3', 'Retry-After forwarded');
    t.equal(
      res.headers.get('content-length'),
      String(Buffer.byteLength(text)),
      'Content-Length is the rewritten body length',
    );
    onlyAllowedHeaders(t, res);
    const body = JSON.parse(text) as { model: string; id: string; object: string };
    t.equal(body.model, res.headers.get('x-pi-model'), 'X-Pi-Model equals the body model');
    t.match(body.id, /^chatcmpl-/, 'provider id unchanged');
  });

  t.test(
    'chat stream: no Content-Length, model rewritten in every chunk, upstream model from the first data event',
    async (t) => {
      const res = await s.post(
        '/v1/chat/completions',
        {
          model: 'acme/chat-small',
          messages: USER,
          stream: true,
          provider: { only: ['alpha'] },
          sim: { requestId: 'req_up_2', chunks: 5 },
        },
        { key },
      );
      t.equal(res.status, 200);
      t.equal(res.headers.get('content-length'), null);
      t.match(res.headers.get('content-type'), /^text\/event-stream/);
      t.equal(res.headers.get('x-pi-upstream-model'), 'small-v1');
      t.equal(res.headers.get('x-pi-upstream-request-id'), 'req_up_2');
      onlyAllowedHeaders(t, res);
      fixedHeaders(t, res);
      const chunks = sseJson(await res.text());
      t.equal(chunks.length, 1 + 5 + 1 + 1);
      for (const c of chunks) t.equal(c['model'], 'acme/chat-small');
    },
  );

  t.test('no reported model → no X-Pi-Upstream-Model, and the body model is still the slug', async (t) => {
    const res = await s.post(
      '/v1/chat/completions',
      {
        model: 'acme/chat-small',
        messages: USER,
        provider: { only: ['alpha'] },
        sim: { reportModel: null, requestId: null },
      },
      { key },
    );
    t.equal(res.status, 200);
    t.equal(res.headers.get('x-pi-upstream-model'), null);
    t.equal(res.headers.get('x-pi-upstream-request-id'), null);
    t.equal(res.headers.get('x-pi-model'), 'acme/chat-small');
    const body = (await res.json()) as { model?: string };
    t.equal(body.model, 'acme/chat-small', 'X-Pi-Model equals the body model even when the provider sent none');

    const st = await s.post(
      '/v1/chat/completions',
      {
        model: 'acme/chat-small',
        messages: USER,
        stream: true,
        provider: { only: ['alpha'] },
        sim: { reportModel: null },
      },
      { key },
    );
    t.equal(st.headers.get('x-pi-upstream-model'), null);
    for (const c of sseJson(await st.text())) t.equal(c['model'], 'acme/chat-small', 'every chunk names the slug');
  });

  t.test('responses JSON and stream', async (t) => {
    let res = await s.post(
      '/v1/responses',
      { model: 'acme/chat-small', input: 'hi', provider: { only: ['alpha'] } },
      { key },
    );
    t.equal(res.status, 200);
    t.equal(res.headers.get('x-pi-upstream-model'), 'small-v1');
    const body = (await res.json()) as { model: string };
    t.equal(body.model, 'acme/chat-small');

    res = await s.post(
      '/v1/responses',
      { model: 'acme/chat-small', input: 'hi', stream: true, provider: { only: ['beta'] } },
      { key },
    );
    t.equal(res.status, 200);
    t.equal(res.headers.get('content-length'), null);
    t.equal(res.headers.get('x-pi-upstream-model'), 'small-beta');
    const events = sseJson(await res.text());
    const withResponse = events.filter((e) => typeof e['response'] === 'object');
    t.ok(withResponse.length >= 3, 'created, in_progress, completed carry the response');
    for (const e of withResponse)
      t.equal((e['response'] as { model: string }).model, 'acme/chat-small', `${String(e['type'])} model is the slug`);
    t.notMatch(JSON.stringify(events), 'small-beta', 'the upstream id appears nowhere in the stream');

    res = await s.post(
      '/v1/responses',
      { model: 'acme/chat-small', input: 'hi', stream: true, provider: { only: ['beta'] }, sim: { reportModel: null } },
      { key },
    );
    const created = sseJson(await res.text()).find((e) => e['type'] === 'response.created') as {
      response: { model?: string };
    };
    t.equal(
      created.response.model,
      'acme/chat-small',
      'the response object names the slug even when the provider sent none',
    );
  });

  t.test('messages JSON and stream (anthropic, vertex and openai-style adapters)', async (t) => {
    for (const [provider, model, upstream] of [
      ['delta', 'beta-labs/sonnet-ish', 'sonnet-ish-20250101'],
      ['gcp', 'beta-labs/sonnet-ish', 'sonnet-ish@20250101'],
      ['alpha', 'acme/chat-big', 'big-v1'],
    ] as const) {
      let res = await s.post(
        '/v1/messages',
        { model, max_tokens: 20, messages: USER, provider: { only: [provider] }, sim: { requestId: 'req_m' } },
        { key },
      );
      t.equal(res.status, 200, provider);
      const body = (await res.json()) as { model: string; type: string };
      t.equal(body.type, 'message');
      t.equal(body.model, model, `${provider}: body model is the slug`);
      t.equal(res.headers.get('x-pi-model'), body.model);
      t.equal(res.headers.get('x-pi-provider'), provider);
      t.equal(res.headers.get('x-pi-upstream-model'), upstream);
      t.equal(res.headers.get('x-pi-upstream-request-id'), 'req_m');

      res = await s.post(
        '/v1/messages',
        { model, max_tokens: 20, messages: USER, stream: true, provider: { only: [provider] } },
        { key },
      );
      t.equal(res.status, 200);
      t.equal(res.headers.get('content-length'), null);
      t.equal(res.headers.get('x-pi-upstream-model'), upstream);
      if (provider === 'delta')
        t.equal(res.headers.get('cache-control'), 'no-cache', 'the provider Cache-Control reaches the client');
      const events = parseSse(await res.text());
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
      const start = JSON.parse(events[0]?.data ?? '{}') as { message: { model: string } };
      t.equal(start.message.model, model, 'message_start names the slug');
      t.equal(res.headers.get('x-pi-model'), start.message.model);
    }
    const res = await s.post(
      '/v1/messages',
      {
        model: 'beta-labs/sonnet-ish',
        max_tokens: 20,
        messages: USER,
        provider: { only: ['delta'] },
        sim: { reportModel: null },
      },
      { key },
    );
    t.equal(res.headers.get('x-pi-upstream-model'), null);
    t.equal(
      ((await res.json()) as { model?: string }).model,
      'beta-labs/sonnet-ish',
      'the slug even when the provider sent no model',
    );
    const st = await s.post(
      '/v1/messages',
      {
        model: 'beta-labs/sonnet-ish',
        max_tokens: 20,
        stream: true,
        messages: USER,
        provider: { only: ['delta'] },
        sim: { reportModel: null },
      },
      { key },
    );
    const start = sseJson(await st.text())[0] as { message: { model?: string } };
    t.equal(
      start.message.model,
      'beta-labs/sonnet-ish',
      'message_start names the slug even when the provider sent none',
    );
  });
});

t.test('provider errors pass through with their status and the provider headers', async (t) => {
  const { s, key } = await stackWithKey(t);
  const errorBody = { error: { message: 'bad thing', type: 'invalid_request_error', param: 'messages', code: 'bad' } };
  let res = await s.post(
    '/v1/chat/completions',
    {
      model: 'acme/chat-small',
      messages: USER,
      provider: { only: ['alpha'] },
      sim: { status: 400, errorBody, requestId: 'req_err', headers: { 'x-other': '1' } },
    },
    { key },
  );
  t.equal(res.status, 400);
  t.equal(res.headers.get('x-pi-provider'), 'alpha');
  t.equal(res.headers.get('x-pi-model'), 'acme/chat-small');
  t.equal(res.headers.get('x-pi-upstream-request-id'), 'req_err');
  t.equal(res.headers.get('content-type'), 'application/json');
  onlyAllowedHeaders(t, res);
  fixedHeaders(t, res);
  t.same(await res.json(), errorBody, 'the provider body, unchanged');
  t.equal(s.sim.requests.length, 1, 'a 400 is not retried');

  // 429 everywhere: retried, then the last provider answer goes out with its own Retry-After.
  res = await s.post(
    '/v1/chat/completions',
    {
      model: 'acme/chat-small',
      messages: USER,
      provider: { only: ['alpha'] },
      sim: { status: 429, headers: { 'retry-after': '12' } },
    },
    { key },
  );
  t.equal(res.status, 429);
  t.equal(res.headers.get('retry-after'), '12', "the provider's Retry-After reaches the client");
  t.equal(res.headers.get('x-pi-provider'), 'alpha');
  t.equal(((await res.json()) as { error: { code: string } }).error.code, 'rate_limit_exceeded');

  // Messages provider error: the Messages error shape, passed through.
  res = await s.post(
    '/v1/messages',
    {
      model: 'beta-labs/sonnet-ish',
      max_tokens: 5,
      messages: USER,
      provider: { only: ['delta'] },
      sim: { status: 404 },
    },
    { key },
  );
  t.equal(res.status, 404);
  t.equal(res.headers.get('x-pi-provider'), 'delta');
  t.match(await res.json(), { type: 'error', error: { type: 'not_found_error' } });
});

t.test('a refused credential: next provider, else 503 naming the refusing provider', async (t) => {
  const { s, key } = await stackWithKey(t);
  for (const status of [401, 403]) {
    const res = await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] }, sim: { status, requestId: 'req_x' } },
      { key },
    );
    t.equal(res.status, 503, `${status} → 503`);
    const err = await errorOf(res);
    t.equal(err.code, 'provider_unavailable');
    t.match(err.message, /alpha/, 'the message names the refusing provider');
    t.equal(res.headers.get('x-pi-provider'), 'alpha');
    t.equal(res.headers.get('x-pi-model'), 'acme/chat-small');
    t.equal(res.headers.get('x-pi-upstream-model'), null);
    t.equal(res.headers.get('x-pi-upstream-request-id'), null);
    t.equal(res.headers.get('retry-after'), null);
    onlyAllowedHeaders(t, res);
  }
  // Another provider takes over: the client never sees the refusal.
  s.sim.script('small-v1', { status: 401 });
  const res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, provider: { order: ['alpha', 'beta'], only: ['alpha', 'beta'] } },
    { key },
  );
  t.equal(res.status, 200);
  t.equal(res.headers.get('x-pi-provider'), 'beta');
  t.equal(((await res.json()) as { model: string }).model, 'acme/chat-small');
});

t.test('gateway errors carry the trace id, CORS and security headers only', async (t) => {
  const { s, key } = await stackWithKey(t, { limits: { firstByteTimeoutMs: 200 } });
  const cases: [string, () => Promise<Response>, number, string][] = [
    [
      'no key',
      () => s.post('/v1/chat/completions', { model: 'acme/chat-small', messages: USER }),
      401,
      'invalid_api_key',
    ],
    [
      'unknown key',
      () =>
        s.post(
          '/v1/chat/completions',
          { model: 'acme/chat-small', messages: USER },
          { key: key.slice(0, -4) + (key.endsWith('aaaa') ? 'bbbb' : 'aaaa') },
        ),
      401,
      'api_key_not_found',
    ],
    [
      'bare model',
      () => s.post('/v1/chat/completions', { model: 'small-v1', messages: USER }, { key }),
      404,
      'model_not_found',
    ],
    [
      'validation',
      () => s.post('/v1/chat/completions', { model: 'acme/chat-small', messages: USER, preset: 'x' }, { key }),
      422,
      'validation_failed',
    ],
    [
      'no eligible provider',
      () =>
        s.post(
          '/v1/chat/completions',
          { model: 'acme/chat-small', messages: USER, provider: { only: ['delta'] } },
          { key },
        ),
      404,
      'no_eligible_provider',
    ],
    [
      'no provider answered',
      () =>
        s.post(
          '/v1/chat/completions',
          { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] }, sim: { reset: 'before_head' } },
          { key },
        ),
      503,
      'provider_unavailable',
    ],
    [
      'first-byte timeout',
      () =>
        s.post(
          '/v1/chat/completions',
          { model: 'acme/chat-small', messages: USER, provider: { only: ['beta'] }, sim: { ttfbMs: 1000 } },
          { key },
        ),
      503,
      'provider_unavailable',
    ],
    [
      'poor wallet',
      () => s.post('/v1/chat/completions', { model: 'acme/chat-small', messages: USER }, { key: s.key('strict') }),
      402,
      'insufficient_balance',
    ],
  ];
  for (const [what, call, status, code] of cases) {
    const res = await call();
    t.equal(res.status, status, what);
    t.equal((await errorOf(res)).code, code, what);
    t.equal(res.headers.get('content-type'), 'application/json');
    fixedHeaders(t, res);
    noProviderHeaders(t, res, what);
    onlyAllowedHeaders(t, res);
  }
  // Rate limit: Retry-After 1..60 and no provider headers.
  const slow = s.key('slow');
  s.credit('slow', '10');
  let last: Response | null = null;
  for (let i = 0; i < 4; i++) {
    last = await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] } },
      { key: slow },
    );
    if (last.status === 429) break;
    await last.text();
  }
  t.equal(last?.status, 429);
  if (last) {
    const ra = Number(last.headers.get('retry-after'));
    t.ok(Number.isInteger(ra) && ra >= 1 && ra <= 60, `Retry-After ${ra} in 1..60`);
    noProviderHeaders(t, last, 'rate limited');
    t.equal((await errorOf(last)).code, 'rate_limited');
  }
});
