// Authentication over HTTP (spec: Authentication, Errors): where the key is read from and in which
// order, the four 401 codes with the gateway's error object and headers, keys never read on public
// routes, cookies, the third vendor header or the query, and keys bound to their workspace's wallet.
// Every refused request must leave the simulator and the wallet untouched.
import t, { type Test } from 'tap';
import { startStack, type Stack } from '../../helpers/stack.ts';
import {
  expectGatewayError,
  expectGatewayHeaders,
  rawPost,
  spyWallet,
  USER,
  type RawAnswer,
} from '../../helpers/admission.ts';

const CHAT = { model: 'acme/chat-small', messages: USER, max_tokens: 16, provider: { only: ['alpha'] } };
/** A well-formed key no store ever issued. */
const UNKNOWN = 'sk-pi-' + 'A'.repeat(43);

function codeOf(a: RawAnswer): string | null {
  try {
    return (JSON.parse(a.body) as { error?: { code?: string } }).error?.code ?? null;
  } catch {
    return null;
  }
}

async function setup(t: Test): Promise<{ s: Stack; key: string }> {
  const s = await startStack(t);
  s.credit('open', '10');
  return { s, key: s.key('open') };
}

t.test('where the key is read from, and which header wins', async (t) => {
  const { s, key } = await setup(t);
  const revoked = s.store.apiKeys.create({ workspace: 'open' });
  s.store.apiKeys.revoke(revoked.id);
  const body = JSON.stringify(CHAT);
  type Case = [label: string, headers: [string, string][], want: number | string];
  const cases: Case[] = [
    ['Authorization: Bearer <key>', [['Authorization', `Bearer ${key}`]], 200],
    ['Authorization: bearer <key> (scheme is case-insensitive)', [['Authorization', `bearer ${key}`]], 200],
    ['Authorization: BEARER   <key> (several spaces)', [['Authorization', `BEARER   ${key}`]], 200],
    ['Authorization: <key> (bare)', [['Authorization', key]], 200],
    ['X-Api-Key: <key>', [['X-Api-Key', key]], 200],
    ['X-Api-Key: Bearer <key>', [['X-Api-Key', `Bearer ${key}`]], 200],
    [
      'Messages SDK style: X-Api-Key and anthropic-version',
      [
        ['X-Api-Key', key],
        ['anthropic-version', '2023-06-01'],
      ],
      200,
    ],
    [
      'empty Authorization, key in X-Api-Key',
      [
        ['Authorization', ''],
        ['X-Api-Key', key],
      ],
      200,
    ],
    [
      'valid Authorization wins over a bogus X-Api-Key',
      [
        ['Authorization', `Bearer ${key}`],
        ['X-Api-Key', 'bogus'],
      ],
      200,
    ],
    [
      'valid Authorization wins over a revoked X-Api-Key',
      [
        ['Authorization', `Bearer ${key}`],
        ['X-Api-Key', revoked.key],
      ],
      200,
    ],
    [
      'bogus Authorization wins over a valid X-Api-Key',
      [
        ['Authorization', 'Bearer bogus'],
        ['X-Api-Key', key],
      ],
      'invalid_api_key',
    ],
    [
      'Authorization with another scheme wins over a valid X-Api-Key',
      [
        ['Authorization', `Basic ${Buffer.from(`user:${key}`).toString('base64')}`],
        ['X-Api-Key', key],
      ],
      'invalid_api_key',
    ],
    [
      'unknown Authorization wins over a valid X-Api-Key',
      [
        ['Authorization', `Bearer ${UNKNOWN}`],
        ['X-Api-Key', key],
      ],
      'api_key_not_found',
    ],
    [
      'revoked Authorization wins over a valid X-Api-Key',
      [
        ['Authorization', `Bearer ${revoked.key}`],
        ['X-Api-Key', key],
      ],
      'api_key_revoked',
    ],
    [
      '"Authorization: Bearer" with no token is not empty',
      [
        ['Authorization', 'Bearer '],
        ['X-Api-Key', key],
      ],
      'invalid_api_key',
    ],
    ['x-goog-api-key is never read', [['x-goog-api-key', key]], 'invalid_api_key'],
    [
      'cookies are never read',
      [['Cookie', `authorization=Bearer ${key}; x-api-key=${key}; api_key=${key}; key=${key}`]],
      'invalid_api_key',
    ],
    ['no credential at all', [], 'invalid_api_key'],
    ['empty X-Api-Key', [['X-Api-Key', '']], 'invalid_api_key'],
    [
      'two Authorization headers',
      [
        ['Authorization', `Bearer ${key}`],
        ['Authorization', `Bearer ${key}`],
      ],
      'invalid_api_key',
    ],
  ];
  for (const [label, headers, want] of cases) {
    const before = s.sim.requests.length;
    const a = await rawPost(s.url, '/v1/chat/completions', headers, body);
    if (typeof want === 'number') {
      t.equal(a.status, want, label);
      t.equal(s.sim.requests.length, before + 1, `${label}: the provider was called`);
    } else {
      t.equal(a.status, 401, label);
      t.equal(codeOf(a), want, `${label}: ${want}`);
      t.equal(s.sim.requests.length, before, `${label}: no provider was called`);
    }
  }
  // The Messages protocol's own path, as its SDK calls it: key in X-Api-Key, no Authorization.
  const messages = await rawPost(
    s.url,
    '/v1/messages',
    [
      ['X-Api-Key', key],
      ['anthropic-version', '2023-06-01'],
    ],
    JSON.stringify({ model: 'beta-labs/sonnet-ish', max_tokens: 16, messages: USER }),
  );
  t.equal(messages.status, 200, 'POST /v1/messages with X-Api-Key');
  // The client's key is the gateway's business: it never reaches a provider.
  const leaked = s.sim.requests.filter((r) => JSON.stringify(r.headers).includes(key) || r.rawBody.includes(key));
  t.equal(leaked.length, 0, `the key is in none of the ${s.sim.requests.length} upstream requests`);
  t.ok(
    s.sim.requests.every((r) => !('cookie' in r.headers)),
    'cookies are not forwarded',
  );
  // The query string is not a credential either.
  const q = await rawPost(s.url, '/v1/chat/completions', [], body, `?key=${key}&api_key=${key}`);
  t.equal(codeOf(q), 'invalid_api_key', 'a key in the query string is not read');
});

t.test('the four 401 codes carry the spec error object and only gateway headers', async (t) => {
  const { s, key } = await setup(t);
  const w = spyWallet(s);
  const expiring = s.store.apiKeys.create({ workspace: 'open', expiresAt: s.clock.now() + 60_000 });
  const revoked = s.store.apiKeys.create({ workspace: 'open' });
  s.store.apiKeys.revoke(revoked.id);
  const malformed = [
    'sk-pi-short',
    'sk-xx-' + 'A'.repeat(43),
    'pk-pi-' + 'A'.repeat(43),
    key.slice(0, -1),
    key + 'A',
    key.slice(0, -1) + '!',
    key.slice(0, -1) + '=',
    key.toUpperCase() === key ? key.toLowerCase() : key.replace('sk-pi-', 'SK-PI-'),
    'Bearer',
    'null',
  ];
  for (const m of malformed) {
    await expectGatewayError(
      t,
      await s.post('/v1/chat/completions', CHAT, { key: m }),
      401,
      'invalid_api_key',
      `malformed ${JSON.stringify(m.slice(0, 12))}…`,
    );
  }
  await expectGatewayError(t, await s.post('/v1/chat/completions', CHAT), 401, 'invalid_api_key', 'missing');
  await expectGatewayError(t, await s.post('/v1/chat/completions', CHAT, { key: UNKNOWN }), 401, 'api_key_not_found');
  // The same prefix as a real key, a different secret part: still unknown (the hash decides).
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key: key.slice(0, 14) + 'B'.repeat(35) }),
    401,
    'api_key_not_found',
    'same lookup prefix',
  );
  await expectGatewayError(t, await s.post('/v1/chat/completions', CHAT, { key: revoked.key }), 401, 'api_key_revoked');

  const ok = await s.post('/v1/chat/completions', CHAT, { key: expiring.key });
  t.equal(ok.status, 200, 'valid until its expiry');
  await ok.arrayBuffer();
  s.clock.advance(60_000);
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key: expiring.key }),
    401,
    'api_key_expired',
    'expired at exactly expiresAt',
  );
  s.clock.advance(3_600_000);
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key: expiring.key }),
    401,
    'api_key_expired',
    'expired later',
  );
  // A key both revoked and expired reports revocation (the operator's explicit act), also when the
  // server had it cached as valid: the revocation goes through the server's own store connection.
  s.store.apiKeys.revoke(expiring.id);
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key: expiring.key }),
    401,
    'api_key_revoked',
    'revoked and expired',
  );
  const cached = await s.post('/v1/chat/completions', CHAT, { key });
  t.equal(cached.status, 200, 'a key the server has cached as valid');
  await cached.arrayBuffer();
  const keyId = s.store.apiKeys.list('open').find((k) => k.prefix === key.slice(0, 14))?.id as string;
  t.ok(s.store.apiKeys.revoke(keyId));
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key }),
    401,
    'api_key_revoked',
    'in-process revocation of a cached key',
  );
  t.equal(w.holds.size, 2, 'only the two admitted requests took a hold');
  t.equal(s.sim.requests.length, 2, 'only the two admitted requests reached a provider');
});

t.test('every inference endpoint authenticates before reading or validating the body', async (t) => {
  const { s, key } = await setup(t);
  const w = spyWallet(s);
  const paths = ['/v1/chat/completions', '/v1/responses', '/v1/messages', '/v1/images/generations'];
  for (const path of paths) {
    await expectGatewayError(t, await s.post(path, {}), 401, 'invalid_api_key', `${path} without a key`);
    await expectGatewayError(
      t,
      await s.post(path, 'not json at all', { key: UNKNOWN }),
      401,
      'api_key_not_found',
      `${path}: unknown key, bad body`,
    );
    await expectGatewayError(
      t,
      await s.post(path, '{"model": "nobody/none"}', { headers: { 'x-api-key': 'nope' } }),
      401,
      'invalid_api_key',
      `${path}: 401 before 404`,
    );
  }
  const edit = await fetch(`${s.url}/v1/images/edits`, {
    method: 'POST',
    headers: { 'content-type': 'multipart/form-data; boundary=XYZ', authorization: 'Bearer bogus' },
    body: '--XYZ\r\nContent-Disposition: form-data; name="model"\r\n\r\nacme/painter\r\n--XYZ--\r\n',
  });
  await expectGatewayError(t, edit, 401, 'invalid_api_key', '/v1/images/edits');
  // The control: a valid key on the same bad body gets the validation error, not a 401.
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', 'not json at all', { key }),
    400,
    'invalid_request',
    'valid key, bad body',
  );
  t.equal(s.sim.requests.length, 0, 'no provider was called');
  t.equal(w.holds.size, 0, 'no hold was taken');
  t.equal(s.store.wallets.show('open', s.clock.now()).balance, 10_000_000_000n, 'the wallet is untouched');
});

t.test('public routes read no key, even a bad one', async (t) => {
  const { s, key } = await setup(t);
  const revoked = s.store.apiKeys.create({ workspace: 'open' });
  s.store.apiKeys.revoke(revoked.id);
  const bad: Record<string, string>[] = [
    { authorization: 'Bearer bogus' },
    { authorization: `Bearer ${revoked.key}` },
    { 'x-api-key': UNKNOWN },
    { authorization: `Bearer ${key}` },
    {},
  ];
  for (const headers of bad) {
    const label = JSON.stringify(Object.keys(headers));
    const list = await fetch(`${s.url}/v1/models`, { headers });
    t.equal(list.status, 200, `GET /v1/models ${label}`);
    t.ok(Array.isArray(((await list.json()) as { data: unknown[] }).data));
    const one = await fetch(`${s.url}/v1/models/acme/chat-small`, { headers });
    t.equal(one.status, 200, `GET /v1/models/acme/chat-small ${label}`);
    await one.arrayBuffer();
    const ep = await fetch(`${s.url}/v1/models/acme/chat-small/endpoints`, { headers });
    t.equal(ep.status, 200, `GET endpoints ${label}`);
    await ep.arrayBuffer();
    const missing = await fetch(`${s.url}/v1/models/acme/nope/endpoints`, { headers });
    t.equal(missing.status, 404, `a missing model is still the catalog's 404, not a 401 ${label}`);
    await missing.arrayBuffer();
    for (const path of ['/v1/chat/completions', '/v1/messages', '/v1/responses', '/v1/images/edits']) {
      const pre = await fetch(`${s.url}${path}`, {
        method: 'OPTIONS',
        headers: {
          ...headers,
          origin: 'https://app.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, x-api-key, content-type',
        },
      });
      t.equal(pre.status, 204, `OPTIONS ${path} ${label}`);
      expectGatewayHeaders(t, pre, `OPTIONS ${path}`);
    }
  }
  t.equal(s.sim.requests.length, 0);
});

t.test('a key is bound to its workspace: its wallet and nothing else', async (t) => {
  const s = await startStack(t);
  s.credit('open', '10');
  const cheapKey = s.key('cheap');
  const w = spyWallet(s, ['open', 'cheap']);
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key: cheapKey }),
    402,
    'insufficient_balance',
    'another workspace’s credit does not pay',
  );
  s.credit('cheap', '1');
  const ok = await s.post('/v1/chat/completions', CHAT, { key: cheapKey });
  t.equal(ok.status, 200);
  await ok.arrayBuffer();
  const trace = ok.headers.get('x-pi-trace-id') as string;
  t.equal(w.holds.get(trace)?.workspace, 'cheap', 'the hold is on the key’s workspace');
  t.equal(s.store.wallets.show('open', s.clock.now()).balance, 10_000_000_000n, 'the other wallet is untouched');
  t.ok(s.store.wallets.show('cheap', s.clock.now()).balance < 1_000_000_000n, 'the key’s wallet paid');
  // A key whose workspace is not in the config (removed since) authenticates nothing.
  const orphan = s.store.apiKeys.create({ workspace: 'removed-workspace' });
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key: orphan.key }),
    401,
    'api_key_not_found',
    'workspace gone',
  );
});
