// The request log over HTTP: one row per request whatever its outcome, written in batches off the
// request path, with the spec's fields (trace id, time, workspace, key, model requested and served,
// provider, attempts, status, error code, latency, TTFB, tokens, cost, sanitised X-Title, origin of
// HTTP-Referer/Referer, session id), and nothing secret: no API key, credential or prompt text.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { openStore } from '../../../src/store/sqlite/store.ts';
import type { RequestLogEntry } from '../../../src/store/types.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { cli, fileStack, logRow, rawPost, tempDir, USER, waitFor } from '../../helpers/admission.ts';

const CHAT = { model: 'acme/chat-small', messages: USER, max_tokens: 50, provider: { only: ['alpha'] } };

async function send(s: Stack, body: unknown, headers: [string, string][]): Promise<{ status: number; trace: string }> {
  const a = await rawPost(
    s.url,
    '/v1/chat/completions',
    headers,
    typeof body === 'string' ? body : JSON.stringify(body),
  );
  return { status: a.status, trace: String(a.headers['x-pi-trace-id'] ?? '') };
}

t.test('one row per request, with the spec’s fields', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  const keyId = s.store.apiKeys.list('open')[0]?.id as string;
  s.credit('open', '10');
  const auth: [string, string] = ['Authorization', `Bearer ${key}`];
  const rows: Record<string, RequestLogEntry | undefined> = {};

  // A success with usage and every attribution header.
  // Control and invisible characters within Latin-1 (tab, soft hyphen, NEL); starts and ends in ASCII
  // because uWS drops leading and trailing non-ASCII bytes (see below).
  const title = 'My\u00AD\tApp\u0085 ' + 'é'.repeat(200) + '!';
  let r = await send(s, { ...CHAT, sim: { usage: { prompt: 40, completion: 12, cached: 8 }, ttfbMs: 30 } }, [
    auth,
    ['X-Title', title],
    ['HTTP-Referer', 'https://app.example.com:8443/some/path?q=1#frag'],
    ['Referer', 'https://ignored.example/'],
    ['X-Pi-Session-Id', 'session-42'],
  ]);
  t.equal(r.status, 200);
  rows['ok'] = await logRow(s, r.trace);
  t.match(rows['ok'], {
    trace_id: r.trace,
    ts: s.clock.now(),
    workspace: 'open',
    key_id: keyId,
    endpoint: 'chat_completions',
    model_requested: 'acme/chat-small',
    model_served: 'acme/chat-small',
    provider: 'alpha',
    deployment: 'alpha/chat-small',
    attempts: 1,
    stream: false,
    status: 200,
    error_code: null,
    prompt_tokens: 40,
    completion_tokens: 12,
    cached_tokens: 8,
    cost_nano: 32n * 1000n + 8n * 500n + 12n * 2000n,
    app_title: 'MyApp ' + 'é'.repeat(122),
    app_origin: 'https://app.example.com:8443',
    session_id: 'session-42',
  });
  const ok = rows['ok'] as RequestLogEntry;
  t.ok(ok.ttfb_ms !== null && ok.ttfb_ms >= 25, 'TTFB includes the provider’s delay');
  t.ok(ok.latency_ms !== null && ok.ttfb_ms !== null && ok.latency_ms >= ok.ttfb_ms, 'latency ≥ TTFB');
  t.equal(Array.from(ok.app_title ?? '').length, 128, 'X-Title cut to 128 characters');
  t.same(
    ok.attempts_json.map((a) => [a.provider, a.outcome, a.status]),
    [['alpha', 'ok', 200]],
  );

  // Failover to another provider: attempts 2, the provider that answered.
  r = await send(
    s,
    {
      ...CHAT,
      provider: { order: ['alpha', 'gamma'], only: ['alpha', 'gamma'] },
      stream: true,
      sim: { by_model: { 'small-v1': { status: 503 }, 'small-gamma': { usage: { prompt: 10, completion: 5 } } } },
    },
    [auth, ['Referer', 'http://localhost:3000/app']],
  );
  t.equal(r.status, 200);
  t.match(await logRow(s, r.trace), {
    model_requested: 'acme/chat-small',
    model_served: 'acme/chat-small',
    provider: 'gamma',
    attempts: 2,
    stream: true,
    status: 200,
    prompt_tokens: 10,
    completion_tokens: 5,
    cost_nano: 10n * 500n + 5n * 1000n,
    app_origin: 'http://localhost:3000',
    app_title: null,
    session_id: null,
  });
  t.same(
    (await logRow(s, r.trace))?.attempts_json.map((a) => [a.provider, a.status]),
    [
      ['alpha', 503],
      ['gamma', 200],
    ],
  );

  // A fallback model answers: requested and served differ.
  r = await send(
    s,
    {
      model: 'acme/chat-big',
      models: ['acme/chat-small'],
      messages: USER,
      max_tokens: 10,
      provider: { only: ['alpha'] },
      sim: { by_model: { 'big-v1': { status: 500 } } },
    },
    [auth],
  );
  t.equal(r.status, 200);
  t.match(await logRow(s, r.trace), {
    model_requested: 'acme/chat-big',
    model_served: 'acme/chat-small',
    provider: 'alpha',
    attempts: 2,
    status: 200,
  });

  // A provider error passed through: its status, the provider, no cost.
  r = await send(s, { ...CHAT, sim: { status: 400 } }, [
    auth,
    ['HTTP-Referer', 'ftp://files.example/'],
    ['Referer', 'https://fallback.example/'],
  ]);
  t.equal(r.status, 400);
  t.match(await logRow(s, r.trace), {
    status: 400,
    error_code: 'provider_error',
    provider: 'alpha',
    attempts: 1,
    cost_nano: null,
    prompt_tokens: null,
    app_origin: null,
  });

  // Gateway refusals: 401 (no key known), 402, 422, 404.
  r = await send(s, CHAT, [
    ['Authorization', 'Bearer nope'],
    ['X-Title', 'Refused App'],
    ['X-Pi-Session-Id', 'x'.repeat(257)],
  ]);
  t.equal(r.status, 401);
  t.match(await logRow(s, r.trace), {
    status: 401,
    error_code: 'invalid_api_key',
    workspace: null,
    key_id: null,
    model_requested: null,
    attempts: 0,
    cost_nano: null,
    app_title: 'Refused App',
    session_id: null,
  });
  const poorKey = s.key('cheap');
  r = await send(s, CHAT, [['Authorization', `Bearer ${poorKey}`]]);
  t.equal(r.status, 402);
  t.match(await logRow(s, r.trace), {
    status: 402,
    error_code: 'insufficient_balance',
    workspace: 'cheap',
    model_requested: 'acme/chat-small',
    model_served: null,
    provider: null,
    attempts: 0,
    cost_nano: null,
  });
  r = await send(s, { ...CHAT, preset: 'p' }, [auth]);
  t.match(await logRow(s, r.trace), { status: 422, error_code: 'validation_failed', workspace: 'open' });
  r = await send(s, { ...CHAT, model: 'acme/unknown' }, [
    auth,
    ['X-Pi-Session-Id', 'lost-session'],
    ['X-Title', 'Lost'],
  ]);
  const lost = await logRow(s, r.trace);
  t.match(lost, { status: 404, error_code: 'model_not_found', model_requested: 'acme/unknown', app_title: 'Lost' });
  t.equal(lost?.session_id, 'lost-session', 'the session id is recorded whatever the outcome, like X-Title');

  // Session id boundaries (256 characters kept, longer counts as absent), a Latin-1 title as browsers send it.
  r = await send(s, CHAT, [auth, ['X-Pi-Session-Id', 's'.repeat(256)]]);
  t.equal((await logRow(s, r.trace))?.session_id, 's'.repeat(256), 'a 256-character session id');
  r = await send(s, CHAT, [auth, ['X-Pi-Session-Id', 's'.repeat(257)]]);
  t.equal((await logRow(s, r.trace))?.session_id, null, 'a 257-character session id counts as absent');
  // Characters beyond Latin-1 (sent as UTF-8): invisible ones removed, the rest kept.
  r = await send(s, CHAT, [
    auth,
    ['X-Title', 'App: 日本語\u200Bのアプリ\u202E\u2066 v2'],
    ['HTTP-Referer', 'https://例え.jp/パス'],
  ]);
  const unicodeRow = await logRow(s, r.trace);
  t.equal(r.status, 200, 'a title beyond Latin-1 does not change the answer');
  t.match(
    unicodeRow,
    { app_title: 'App: 日本語のアプリ v2', app_origin: 'https://xn--r8jz45g.jp' },
    'UTF-8 title and IDN referer recorded',
  );
  // uWS drops every byte >= 0x80 (with SP and HTAB) at the start and the end of a header value
  // before any API can read it (docs/operations.md "Limits"; test/server/header-bytes.test.ts pins it): only
  // non-ASCII text between ASCII characters is kept.
  r = await send(s, CHAT, [auth, ['X-Title', 'é app é']]);
  t.equal(
    (await logRow(s, r.trace))?.app_title,
    'app',
    'a title starting and ending with non-ASCII characters loses them',
  );
  r = await send(s, CHAT, [auth, ['X-Title', '日本語アプリ'], ['X-Pi-Session-Id', 'セッション']]);
  t.match(
    await logRow(s, r.trace),
    { app_title: null, session_id: null },
    'a title or session id of non-ASCII characters only arrives empty: absent',
  );
  r = await send(s, CHAT, [auth, ['X-Title', '"日本語アプリ"'], ['X-Pi-Session-Id', 's-セッション-1']]);
  t.match(
    await logRow(s, r.trace),
    { app_title: '"日本語アプリ"', session_id: 's-セッション-1' },
    'between ASCII characters, non-ASCII text is kept exactly',
  );
  const latin = await s.post('/v1/chat/completions', CHAT, {
    key,
    headers: { 'x-title': 'Café Ünïcode!', referer: 'https://shop.example/cart' },
  });
  await latin.arrayBuffer();
  const latinRow = await logRow(s, latin.headers.get('x-pi-trace-id'));
  t.equal(latinRow?.app_origin, 'https://shop.example', 'Referer used when HTTP-Referer is absent');
  t.equal(latinRow?.app_title, 'Café Ünïcode!', 'a Latin-1 title (what fetch and browsers send for é)');

  // Exactly one row per request sent.
  s.store.requestLog.flush();
  const all = s.store.requestLog.query({ limit: 1000 });
  t.equal(all.length, 15, 'fifteen requests, fifteen rows');
  t.equal(new Set(all.map((x) => x.trace_id)).size, 15, 'one per trace id');
});

t.test('rows are queued and written in batches, not one transaction per request', async (t) => {
  // A store whose batches are only written on flush, to see what the request path itself writes.
  const store = openStore(join(tempDir(t), 'gateway.db'), {
    masterKey: randomBytes(32).toString('base64'),
    requestLog: { flushIntervalMs: 60_000, maxBatch: 1000 },
  });
  const s = await startStack(t, { store });
  t.teardown(() => store.close());
  const key = s.key('open');
  s.credit('open', '10');
  const n = 40;
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      s.post('/v1/chat/completions', { ...CHAT, stream: i % 2 === 0 }, { key }).then((r) => r.text()),
    ),
  );
  t.equal(answers.length, n);
  t.ok(await waitFor(() => store.requestLog.stats().queued === n), `all ${n} rows queued`);
  t.same(
    store.requestLog.stats(),
    { queued: n, transactions: 0, written: 0, dropped: 0 },
    'nothing written on the request path',
  );
  store.requestLog.flush();
  t.same(
    store.requestLog.stats(),
    { queued: 0, transactions: 1, written: n, dropped: 0 },
    'one transaction for the whole batch',
  );
  t.equal(store.requestLog.query({ limit: 1000 }).length, n);
});

t.test('nothing secret in the log: no API key, credential or prompt text', async (t) => {
  const s = await fileStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const prompt = `unique-prompt-${Math.random().toString(36).slice(2)}-do-not-log`;
  const secrets = s.config.resources.map((r) => `upstream-secret-${r.credential}`);
  const bodies = [
    { ...CHAT, messages: [{ role: 'user', content: prompt }] },
    { ...CHAT, stream: true, messages: [{ role: 'user', content: prompt }] },
    { ...CHAT, messages: [{ role: 'user', content: prompt }], sim: { status: 400 } },
    { ...CHAT, messages: [{ role: 'user', content: prompt }], sim: { echo: true } },
    `{"model": "acme/chat-small", "messages": [{"role": "user", "content": "${prompt}"`,
    { model: 'acme/chat-small', messages: prompt },
  ];
  for (const b of bodies) {
    for (const k of [key, key.slice(0, -1)]) {
      const res = await s.post('/v1/chat/completions', b, {
        key: k,
        headers: { 'x-title': 'app', 'x-pi-session-id': 'sess' },
      });
      await res.arrayBuffer();
      await logRow(s, res.headers.get('x-pi-trace-id'));
    }
  }
  s.store.requestLog.flush();
  const logged = JSON.stringify(s.store.requestLog.query({ limit: 1000 }), (_k, v: unknown) =>
    typeof v === 'bigint' ? v.toString() : v,
  );
  t.equal(s.store.requestLog.query({ limit: 1000 }).length, bodies.length * 2);
  const needles: [string, string][] = [
    ['the API key', key],
    ['the key’s secret part', key.slice(14)],
    ['the prompt', prompt],
    ...secrets.map((x): [string, string] => [`credential ${x}`, x]),
  ];
  for (const [what, needle] of needles) t.notOk(logged.includes(needle), `${what} is not in the request log`);
  for (const suffix of ['', '-wal']) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(s.file + suffix);
    } catch {
      continue;
    }
    for (const [what, needle] of needles) t.equal(bytes.indexOf(needle), -1, `${what} is not in gateway.db${suffix}`);
  }
  const logs = await cli(['logs', '--json', '--limit', '100', '--db', s.file]);
  t.equal(logs.code, 0, logs.stderr);
  for (const [what, needle] of needles) t.notOk(logs.stdout.includes(needle), `${what} is not in \`pi-gateway logs\``);
});

t.test('`pi-gateway logs` prints client-supplied text inert', async (t) => {
  const s = await fileStack(t);
  const key = s.key('open');
  // A refused request's model name is recorded as sent; this one would retitle and clear a terminal.
  const model = '\u001b]0;owned\u0007\u001b[2J\u001b[31mevil\u202E/model\u0085' + 'x'.repeat(300);
  const res = await s.post('/v1/chat/completions', { model, messages: USER }, { key });
  t.equal(res.status, 404);
  await res.arrayBuffer();
  // Recorded as sent within the stored bound (256 characters: the first 255 and an ellipsis).
  const stored = `${model.slice(0, 255)}…`;
  t.equal((await logRow(s, res.headers.get('x-pi-trace-id')))?.model_requested, stored, 'recorded as sent');
  const table = await cli(['logs', '--db', s.file]);
  t.equal(table.code, 0, table.stderr);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what must not reach the terminal.
  const controls = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
  t.notMatch(table.stdout, controls, 'no control character reaches the terminal');
  t.match(table.stdout, /\\u\{1b\}\]0;owned\\u\{7\}/, 'shown escaped');
  t.ok(
    table.stdout.split('\n').every((line) => line.length < 400),
    'a long value is cut in the table',
  );
  const json = await cli(['logs', '--json', '--db', s.file]);
  t.equal(
    (JSON.parse(json.stdout) as { model_requested: string }[])[0]?.model_requested,
    stored,
    '--json keeps the exact stored value (JSON-escaped)',
  );
});
