// Request validation and body errors through a real server: every bad request gets a clear 4xx error
// object (never a crash, a hang, or an upstream call), model resolution errors (bare names, unknown,
// expired, disabled, wrong endpoint) name their cause, and nothing stays held on the wallet.
import t, { type Test } from 'tap';
import { request as httpRequest } from 'node:http';
import { ManualClock } from '../../../src/clock.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { USER } from '../../helpers/inference.ts';

interface ErrorObject {
  message: string;
  type: string;
  code: string;
}

async function expectError(
  t: Test,
  res: Response,
  status: number,
  code: string,
  message?: RegExp | string,
): Promise<ErrorObject> {
  t.equal(res.status, status, `status ${status}`);
  t.match(res.headers.get('content-type'), /^application\/json/);
  t.ok(res.headers.get('x-pi-trace-id'));
  t.equal(res.headers.get('x-pi-provider'), null);
  const body = (await res.json()) as { error: ErrorObject };
  t.equal(body.error.code, code, `code ${code}`);
  t.type(body.error.message, 'string');
  t.type(body.error.type, 'string');
  if (message !== undefined) t.match(body.error.message, message);
  return body.error;
}

function noUpstreamAndNoHold(t: Test, s: Stack): void {
  t.equal(s.sim.requests.length, 0, 'nothing reached a provider');
  const w = s.store.wallets.show('open', s.clock.now());
  t.equal(w.held, 0n, 'nothing held');
  t.equal(w.openHolds, 0);
}

t.test('required fields and wrong types', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const post = (path: string, body: unknown) => s.post(path, body, { key });

  await expectError(
    t,
    await post('/v1/chat/completions', { messages: USER }),
    400,
    'invalid_request',
    /^model is required$/,
  );
  await expectError(
    t,
    await post('/v1/messages', { messages: USER, max_tokens: 5 }),
    400,
    'invalid_request',
    /^model is required$/,
  );
  await expectError(t, await post('/v1/responses', { input: 'x' }), 400, 'invalid_request', /^model is required$/);
  await expectError(
    t,
    await post('/v1/chat/completions', { model: null, messages: USER }),
    400,
    'invalid_request',
    /^model is required$/,
  );
  await expectError(
    t,
    await post('/v1/chat/completions', { model: 'acme/chat-small' }),
    400,
    'invalid_request',
    /messages/,
  );
  await expectError(
    t,
    await post('/v1/messages', { model: 'beta-labs/sonnet-ish', max_tokens: 5 }),
    400,
    'invalid_request',
    /messages/,
  );
  await expectError(
    t,
    await post('/v1/messages', { model: 'beta-labs/sonnet-ish', messages: USER }),
    400,
    'invalid_request',
    /max_tokens is required/,
  );
  await expectError(t, await post('/v1/responses', { model: 'acme/chat-small' }), 400, 'invalid_request', /input/);
  await expectError(
    t,
    await post('/v1/images/generations', { model: 'acme/painter' }),
    400,
    'invalid_request',
    /prompt/,
  );

  await expectError(
    t,
    await post('/v1/chat/completions', { model: 'acme/chat-small', messages: USER, preset: 'p' }),
    422,
    'validation_failed',
    /^preset is not supported yet$/,
  );
  await expectError(
    t,
    await post('/v1/messages', { model: 'beta-labs/sonnet-ish', max_tokens: 5, messages: USER, preset: 'p' }),
    422,
    'validation_failed',
    /^preset is not supported yet$/,
  );
  await expectError(
    t,
    await post('/v1/chat/completions', { model: 'acme/chat-small', messages: USER, route: 'sort' }),
    422,
    'validation_failed',
    /route/,
  );
  await expectError(
    t,
    await post('/v1/chat/completions', {
      model: 'acme/chat-small',
      messages: USER,
      models: ['acme/chat-big', 'acme/reasoner', 'acme/bracketed', 'acme/small'],
    }),
    422,
    'validation_failed',
    /models/,
  );
  await expectError(
    t,
    await post('/v1/chat/completions', { model: 'acme/chat-small', messages: USER, models: ['acme/nope'] }),
    404,
    'model_not_found',
    /acme\/nope/,
  );

  const wrongTypes: [string, Record<string, unknown>, RegExp][] = [
    ['/v1/chat/completions', { model: 5, messages: USER }, /model/],
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: 'hi' }, /messages/],
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: ['hi'] }, /messages\[0\]/],
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: USER, stream: 'yes' }, /stream/],
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: USER, stream_options: 1 }, /stream_options/],
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: USER, max_tokens: -1 }, /max_tokens/],
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: USER, max_tokens: 1.5 }, /max_tokens/],
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: USER, temperature: 'hot' }, /temperature/],
    [
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, reasoning_effort: 'ultra' },
      /reasoning_effort/,
    ],
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: USER, thinking: 'off' }, /thinking/],
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: USER, models: 'acme/chat-big' }, /models/],
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: USER, provider: 'alpha' }, /provider/],
    ['/v1/chat/completions', { model: 'acme/chat-small', messages: USER, provider: { only: ['nowhere'] } }, /nowhere/],
    [
      '/v1/chat/completions',
      { model: 'acme/chat-small', messages: USER, provider: { bogus: 1 } },
      /provider: unrecognized key "bogus"/,
    ],
    ['/v1/messages', { model: 'beta-labs/sonnet-ish', messages: USER, max_tokens: '5' }, /max_tokens/],
    ['/v1/messages', { model: 'beta-labs/sonnet-ish', messages: 'hi', max_tokens: 5 }, /messages/],
    ['/v1/responses', { model: 'acme/chat-small', input: 5 }, /input/],
    ['/v1/responses', { model: 'acme/chat-small', input: 'x', reasoning: 'high' }, /reasoning/],
    ['/v1/images/generations', { model: 'acme/painter', prompt: 'p', n: 0 }, /\bn\b/],
  ];
  for (const [path, body, why] of wrongTypes) {
    const res = await post(path, body);
    t.equal(res.status, 422, `${path} ${JSON.stringify(body)} → 422`);
    const err = ((await res.json()) as { error: ErrorObject }).error;
    t.equal(err.code, 'validation_failed');
    t.match(err.message, why, `message names the cause: ${err.message}`);
  }
  noUpstreamAndNoHold(t, s);

  // `models` alone: its first entry is the primary.
  const res = await post('/v1/chat/completions', {
    models: ['acme/chat-small'],
    messages: USER,
    provider: { only: ['alpha'] },
  });
  t.equal(res.status, 200);
  t.equal(((await res.json()) as { model: string }).model, 'acme/chat-small');
});

t.test('model resolution: bare names, unknown, expired, disabled, wrong endpoint', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  for (const bare of ['small-v1', 'gpt-4o', 'chat-small', 'sonnet-ish-20250101']) {
    const err = await expectError(
      t,
      await s.post('/v1/chat/completions', { model: bare, messages: USER }, { key }),
      404,
      'model_not_found',
    );
    t.equal(err.type, 'not_found_error');
    t.match(err.message, /vendor/i, 'says slugs are vendor-qualified');
    t.match(err.message, 'GET /v1/models', 'points to the catalog');
  }
  await expectError(
    t,
    await s.post('/v1/chat/completions', { model: 'acme/nope', messages: USER }, { key }),
    404,
    'model_not_found',
    'GET /v1/models',
  );
  await expectError(
    t,
    await s.post('/v1/chat/completions', { model: 'acme/disabled', messages: USER }, { key }),
    404,
    'model_not_found',
  );
  const expired = await expectError(
    t,
    await s.post('/v1/chat/completions', { model: 'acme/retired', messages: USER }, { key }),
    404,
    'model_not_found',
    '2026-01-10',
  );
  t.equal(expired.type, 'not_found_error');

  const wrong: [string, Record<string, unknown>, RegExp[]][] = [
    [
      '/v1/chat/completions',
      { model: 'acme/painter', messages: USER },
      [/\/v1\/images\/generations/, /\/v1\/images\/edits/],
    ],
    ['/v1/chat/completions', { model: 'beta-labs/sonnet-ish', messages: USER }, [/\/v1\/messages/]],
    [
      '/v1/messages',
      { model: 'acme/chat-small', messages: USER, max_tokens: 5 },
      [/\/v1\/chat\/completions/, /\/v1\/responses/],
    ],
    ['/v1/responses', { model: 'beta-labs/sonnet-ish', input: 'x' }, [/\/v1\/messages/]],
    ['/v1/images/generations', { model: 'acme/chat-small', prompt: 'x' }, [/\/v1\/chat\/completions/]],
    ['/v1/chat/completions', { model: 'acme/embedder', messages: USER }, [/not served on any/]],
  ];
  for (const [path, body, names] of wrong) {
    const err = await expectError(t, await s.post(path, body, { key }), 422, 'validation_failed');
    for (const n of names) t.match(err.message, n, `${String(body['model'])} on ${path}: ${err.message}`);
  }
  // A fallback model on the wrong endpoint is refused too.
  await expectError(
    t,
    await s.post(
      '/v1/chat/completions',
      { model: 'acme/chat-small', models: ['acme/painter'], messages: USER },
      { key },
    ),
    422,
    'validation_failed',
    /painter/,
  );
  noUpstreamAndNoHold(t, s);

  // Unserved paths: the spec's 400 "model is required".
  for (const [method, path] of [
    ['POST', '/v1/embeddings'],
    ['GET', '/v1/responses/resp_1'],
    ['GET', '/v1/chat/completions'],
  ] as const) {
    const res = await fetch(`${s.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
      ...(method === 'POST' ? { body: '{"model":"acme/embedder","input":"x"}' } : {}),
    });
    await expectError(t, res, 400, 'invalid_request', /^model is required$/);
  }
});

t.test('a model is served until its expiration date', async (t) => {
  const s = await startStack(t, { clock: new ManualClock('2026-01-09T23:59:00Z') });
  const key = s.key('open');
  s.credit('open', '10');
  let res = await s.post('/v1/chat/completions', { model: 'acme/retired', messages: USER }, { key });
  t.equal(res.status, 200, 'the day before its expiration date');
  await res.text();
  s.clock.set(Date.parse('2026-01-10T00:00:00Z'));
  res = await s.post('/v1/chat/completions', { model: 'acme/retired', messages: USER }, { key });
  await expectError(t, res, 404, 'model_not_found', '2026-01-10');
});

t.test('malformed bodies: clear 4xx, never a crash or a hang', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const raw = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${s.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body,
      signal: AbortSignal.timeout(5000),
    });

  for (const path of ['/v1/chat/completions', '/v1/responses', '/v1/messages', '/v1/images/generations']) {
    await expectError(
      t,
      await raw(path, '{"model": "acme/chat-small", "messages": ['),
      400,
      'invalid_request',
      /not valid JSON/,
    );
    await expectError(t, await raw(path, '[1,2]'), 400, 'invalid_request', /JSON object/);
    await expectError(t, await raw(path, '"text"'), 400, 'invalid_request', /JSON object/);
    await expectError(t, await raw(path, 'null'), 400, 'invalid_request', /JSON object/);
    await expectError(t, await raw(path, ''), 400, 'invalid_request', /^model is required$/);
    await expectError(
      t,
      await raw(path, Buffer.from([0x7b, 0x22, 0x6d, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])),
      400,
      'invalid_request',
      /UTF-8/,
    );
  }
  // A body over max_body_bytes (65536 in the fixture): declared by Content-Length, and chunked.
  const big = JSON.stringify({ model: 'acme/chat-small', messages: [{ role: 'user', content: 'x'.repeat(70_000) }] });
  let res = await raw('/v1/chat/completions', big);
  await expectError(t, res, 413, 'request_too_large', /65536/);

  const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(
      `${s.url}/v1/chat/completions`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      },
      (r) => {
        let body = '';
        r.setEncoding('utf8');
        r.on('data', (c: string) => (body += c));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
        r.on('error', () => resolve({ status: r.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    for (let i = 0; i < 10; i++) req.write('x'.repeat(10_000));
    req.end();
  });
  t.equal(chunked.status, 413, 'a chunked body over the limit');
  t.equal((JSON.parse(chunked.body) as { error: ErrorObject }).error.code, 'request_too_large');

  // Images edits with a JSON body, and a multipart body without a model.
  await expectError(
    t,
    await raw('/v1/images/edits', '{"model":"acme/painter","prompt":"x"}'),
    400,
    'invalid_request',
    /multipart/,
  );
  const form = new FormData();
  form.set('prompt', 'x');
  form.set('image', new Blob([Buffer.alloc(10)], { type: 'image/png' }), 'a.png');
  res = await fetch(`${s.url}/v1/images/edits`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  await expectError(t, res, 400, 'invalid_request', /^model is required$/);
  noUpstreamAndNoHold(t, s);

  // The server is still fine.
  res = await s.post('/v1/chat/completions', { model: 'acme/chat-small', messages: USER }, { key });
  t.equal(res.status, 200);
});
