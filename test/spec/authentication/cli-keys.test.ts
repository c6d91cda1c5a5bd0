// Keys and wallets managed by the CLI (another process) against a running gateway on the same
// database file: a minted key's format, that only its hash is stored, that it authenticates at once,
// that its --rpm and --expires-at apply, and that `key revoke` and `wallet credit` take effect on the
// very next request without a restart.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { nanoToDecimal } from '../../../src/money.ts';
import { cli, expectGatewayError, fileStack, GATEWAY_CONFIG, USER } from '../../helpers/admission.ts';

const CHAT = { model: 'acme/chat-small', messages: USER, max_tokens: 16, provider: { only: ['alpha'] } };

interface CreatedJson {
  id: string;
  key: string;
  prefix: string;
  workspace: string;
  rpm: number | null;
  expires_at: string | null;
}

t.test('a CLI-minted key: format, hash-only storage, and immediate use by the running server', async (t) => {
  const s = await fileStack(t);
  const plain = await cli(['key', 'create', '--workspace', 'open', '--config', GATEWAY_CONFIG, '--name', 'ci'], {
    PI_DB: s.file,
  });
  t.equal(plain.code, 0, plain.stderr);
  const key = plain.stdout.trim();
  t.notOk(plain.stderr.includes(key), 'the key is on stdout only');
  const created = await cli(['key', 'create', '--workspace', 'open', '--json', '--db', s.file]);
  t.equal(created.code, 0, created.stderr);
  const second = JSON.parse(created.stdout) as CreatedJson;
  t.not(key, second.key, 'two keys differ');
  for (const k of [key, second.key]) {
    t.match(k, /^sk-pi-[A-Za-z0-9_-]+$/, 'sk-pi- then URL-safe characters');
    t.ok(Buffer.from(k.slice('sk-pi-'.length), 'base64url').length >= 32, 'at least 32 random bytes');
  }
  t.equal(second.workspace, 'open');
  t.equal(second.prefix, second.key.slice(0, second.prefix.length));
  t.ok(second.prefix.length < second.key.length - 32, 'the stored prefix is a small part of the key');

  s.credit('open', '10');
  const ok = await s.post('/v1/chat/completions', CHAT, { key: second.key });
  t.equal(ok.status, 200, 'the running server accepts a key minted by another process');
  await ok.arrayBuffer();

  const list = await cli(['key', 'list', '--json', '--db', s.file]);
  t.equal(list.code, 0, list.stderr);
  t.notOk(list.stdout.includes(second.key), 'key list never shows the key');
  t.notOk(list.stdout.includes(key), 'nor the other one');
  t.match(JSON.parse(list.stdout), [
    { state: 'active', workspace: 'open' },
    { id: second.id, state: 'active', workspace: 'open' },
  ]);

  s.store.requestLog.flush();
  for (const suffix of ['', '-wal']) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(s.file + suffix);
    } catch {
      continue;
    }
    for (const k of [key, second.key]) {
      t.equal(bytes.indexOf(k), -1, `the key is not in gateway.db${suffix}`);
      t.equal(bytes.indexOf(k.slice(14)), -1, `nor its secret part in gateway.db${suffix}`);
    }
  }
  // A missing --workspace, an unknown workspace, a past expiry, a bad rpm: refused, nothing minted.
  for (const args of [
    ['key', 'create', '--db', s.file],
    ['key', 'create', '--workspace', 'ghost', '--db', s.file],
    ['key', 'create', '--workspace', 'open', '--expires-at', '2000-01-01', '--db', s.file],
    ['key', 'create', '--workspace', 'open', '--rpm', '0', '--db', s.file],
  ]) {
    const r = await cli(args);
    t.not(r.code, 0, args.join(' '));
    t.notMatch(r.stdout, /sk-pi-/, `${args.join(' ')}: no key printed`);
  }
  t.equal(s.store.apiKeys.list().length, 2, 'only the two keys minted above');
});

t.test('`key revoke` from the CLI refuses the key on the next request of the running server', async (t) => {
  const s = await fileStack(t);
  s.credit('open', '10');
  const created = JSON.parse(
    (await cli(['key', 'create', '--workspace', 'open', '--json', '--db', s.file])).stdout,
  ) as CreatedJson;
  const other = s.key('open');
  // Warm the server's key cache: the revocation must get through it.
  for (let i = 0; i < 3; i++) {
    const r = await s.post('/v1/chat/completions', CHAT, { key: created.key });
    t.equal(r.status, 200, `request ${i + 1} before revocation`);
    await r.arrayBuffer();
  }
  const revoke = await cli(['key', 'revoke', created.id, '--db', s.file]);
  t.equal(revoke.code, 0, revoke.stderr);
  t.match(revoke.stdout, new RegExp(`key ${created.id} revoked`));
  const before = s.sim.requests.length;
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key: created.key }),
    401,
    'api_key_revoked',
    'the next request',
  );
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { headers: { 'x-api-key': created.key } }),
    401,
    'api_key_revoked',
    'also in X-Api-Key',
  );
  t.equal(s.sim.requests.length, before, 'no provider was called');
  const still = await s.post('/v1/chat/completions', CHAT, { key: other });
  t.equal(still.status, 200, 'other keys are unaffected');
  await still.arrayBuffer();
  const again = await cli(['key', 'revoke', created.id, '--db', s.file]);
  t.equal(again.code, 0, 'revoking twice is not an error');
  t.match(again.stdout, /already revoked/);
  const unknown = await cli(['key', 'revoke', 'key_doesnotexist', '--db', s.file]);
  t.equal(unknown.code, 1);
  const list = JSON.parse((await cli(['key', 'list', '--json', '--db', s.file])).stdout) as {
    id: string;
    state: string;
  }[];
  t.equal(list.find((k) => k.id === created.id)?.state, 'revoked');
});

t.test('CLI --rpm and --expires-at apply on the running server', async (t) => {
  const clock = new ManualClock('2099-03-01T10:00:00Z');
  const s = await fileStack(t, { clock });
  s.credit('open', '10');
  const limited = JSON.parse(
    (
      await cli([
        'key',
        'create',
        '--workspace',
        'open',
        '--rpm',
        '2',
        '--expires-at',
        '2099-03-01T10:05:00Z',
        '--json',
        '--db',
        s.file,
      ])
    ).stdout,
  ) as CreatedJson;
  t.equal(limited.rpm, 2);
  t.equal(limited.expires_at, '2099-03-01T10:05:00.000Z');
  for (let i = 0; i < 2; i++) {
    const r = await s.post('/v1/chat/completions', CHAT, { key: limited.key });
    t.equal(r.status, 200);
    await r.arrayBuffer();
  }
  const limitedRes = await s.post('/v1/chat/completions', CHAT, { key: limited.key });
  await expectGatewayError(
    t,
    limitedRes,
    429,
    'rate_limited',
    'the key’s own rpm (2) instead of the workspace’s (100000)',
  );
  clock.set('2099-03-01T10:05:00Z');
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key: limited.key }),
    401,
    'api_key_expired',
    'at --expires-at',
  );
});

t.test('`wallet credit` from the CLI is spendable on the next request; `wallet show` agrees', async (t) => {
  const s = await fileStack(t);
  const key = s.key('open');
  await expectGatewayError(
    t,
    await s.post('/v1/chat/completions', CHAT, { key }),
    402,
    'insufficient_balance',
    'empty wallet',
  );
  const credit = await cli(['wallet', 'credit', '--workspace', 'open', '--usd', '0.5', '--json', '--db', s.file]);
  t.equal(credit.code, 0, credit.stderr);
  t.match(JSON.parse(credit.stdout), { workspace: 'open', credited_usd: '0.5', balance_usd: '0.5' });
  const ok = await s.post('/v1/chat/completions', CHAT, { key });
  t.equal(ok.status, 200, 'admitted right after the credit');
  await ok.arrayBuffer();
  const show = JSON.parse((await cli(['wallet', 'show', 'open', '--json', '--db', s.file])).stdout) as Record<
    string,
    unknown
  >;
  const v = s.store.wallets.show('open', s.clock.now());
  t.equal(show['balance_usd'], nanoToDecimal(v.balance), 'the CLI sees the settled balance');
  t.equal(show['open_holds'], 0);
  t.ok(v.balance < 500_000_000n && v.balance > 0n, 'the request was charged');
  const verify = await cli(['ledger', 'verify', '--db', s.file]);
  t.equal(verify.code, 0, verify.stdout + verify.stderr);
  t.match(verify.stdout, /^ok: 1 wallet/);
});
