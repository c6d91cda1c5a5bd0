// Refused keys, told and recorded precisely: a revoked or expired key is one the gateway issued, so
// its refused requests are logged with their key id and workspace (the operator sees who keeps
// calling with it); an unknown or malformed key names no one. A key that starts with `sk-pi-` but has
// the wrong shape is told exactly that, never echoed back.
import t from 'tap';
import { startStack } from '../../helpers/stack.ts';
import { expectGatewayError, logRow, USER } from '../../helpers/admission.ts';

const CHAT = { model: 'acme/chat-small', messages: USER, max_tokens: 16 };

t.test('revoked and expired keys: 401, logged with their key id and workspace', async (t) => {
  const s = await startStack(t);
  s.credit('open', '10');
  const revoked = s.store.apiKeys.create({ workspace: 'open', name: 'old' });
  s.store.apiKeys.revoke(revoked.id);
  const expiring = s.store.apiKeys.create({ workspace: 'open', expiresAt: s.clock.now() + 1000 });
  s.clock.advance(2000);
  const cases: [string, string, string][] = [
    ['revoked', revoked.key, 'api_key_revoked'],
    ['expired', expiring.key, 'api_key_expired'],
  ];
  for (const [label, key, code] of cases) {
    for (const path of ['/v1/chat/completions', '/v1/messages']) {
      // Twice: the second answer comes from the gateway's key cache, and must be logged the same.
      for (const round of [1, 2]) {
        const res = await s.post(path, path === '/v1/messages' ? { ...CHAT, model: 'beta-labs/sonnet-ish' } : CHAT, {
          key,
        });
        const trace = res.headers.get('x-pi-trace-id');
        await expectGatewayError(t, res, 401, code, `${label} ${path} #${round}`);
        const row = await logRow(s, trace);
        t.equal(row?.workspace, 'open', `${label} ${path} #${round}: logged with its workspace`);
        t.equal(
          row?.key_id,
          label === 'revoked' ? revoked.id : expiring.id,
          `${label} ${path} #${round}: and its key id`,
        );
        t.equal(row?.status, 401);
        t.equal(row?.error_code, code);
        t.equal(row?.ended, 'rejected');
      }
    }
  }
  t.equal(s.sim.requests.length, 0, 'nothing reached a provider');
});

t.test('unknown and malformed keys name no workspace', async (t) => {
  const s = await startStack(t);
  for (const key of [`sk-pi-${'Q'.repeat(43)}`, 'sk-pi-short', 'not-a-key']) {
    const res = await s.post('/v1/chat/completions', CHAT, { key });
    const trace = res.headers.get('x-pi-trace-id');
    t.equal(res.status, 401, key);
    await res.text();
    const row = await logRow(s, trace);
    t.equal(row?.workspace, null, `${key}: no workspace`);
    t.equal(row?.key_id, null, `${key}: no key id`);
  }
});

t.test('a key that starts with sk-pi- but has the wrong shape is told exactly that', async (t) => {
  const s = await startStack(t);
  const real = s.key('open');
  const cases: [string, string, RegExp][] = [
    ['truncated', real.slice(0, 20), /this one has 14 characters after it; check that the whole key was copied$/],
    ['one character too many', `${real}x`, /this one has 44 characters after it;/],
    ['a stray character', `${real.slice(0, -1)}!`, /this one has characters outside A-Z a-z 0-9 _ -;/],
    ['both', `${real.slice(0, 10)}"`, /this one has 5 characters after it and characters outside A-Z a-z 0-9 _ -;/],
    ['the prefix alone', 'sk-pi-', /this one has 0 characters after it;/],
  ];
  for (const [label, key, detail] of cases) {
    const res = await s.post('/v1/chat/completions', CHAT, { key });
    const body = await expectGatewayError(t, res, 401, 'invalid_api_key', label);
    t.match(
      body.error.message,
      /^malformed API key: it starts with "sk-pi-" but a pi-gateway key is "sk-pi-" followed by exactly 43 characters of A-Z a-z 0-9 _ -, and /,
      `${label}: says what a key looks like`,
    );
    t.match(body.error.message, detail, `${label}: says what is wrong with this one`);
    t.notOk(body.error.message.includes(key.slice(6)) && key.length > 6, `${label}: never echoes the key`);
  }
  const other = await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key: 'sk-proj-abc' }),
    401,
    'invalid_api_key',
    'another vendor’s key',
  );
  t.equal(
    other.error.message,
    'malformed API key: pi-gateway keys start with "sk-pi-"',
    'a key without the prefix is told the prefix',
  );
});
