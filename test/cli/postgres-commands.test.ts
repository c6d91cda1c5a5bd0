// Every `--db` command against a PostgreSQL URL (a private postgres, test/helpers/pg.ts): migrate,
// key create/list/revoke, wallet credit/show, ledger verify, usage, logs, secret set/list/rm/
// rotate-master — the same output and invariants as on the embedded file — and
// `migrate --from FILE --to URL`, which moves an embedded database exactly (verify before and after).
import t from 'tap';
import { openStore } from '../../src/store/sqlite/store.ts';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { hold, settle, write } from '../store/sqlite/fixtures/ledger.ts';
import { masterKey, tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';
import { startPrivatePg, type PrivatePg } from '../helpers/pg.ts';
import { cliInProcess, cliProcess, fixtureWorkspace } from './fixtures/run-cli.ts';

const WS = fixtureWorkspace();
let server: PrivatePg;
t.before(async () => {
  server = await startPrivatePg();
});
t.teardown(() => server.destroy());

t.test('the commands on a postgres:// URL', async (t) => {
  const url = await server.createDatabase();
  const env = { PI_DB: url, PI_MASTER_KEY: masterKey(3) };
  const unmigrated = await cliInProcess(['key', 'list'], env);
  t.equal(unmigrated.code, 1);
  t.match(unmigrated.stderr, /no pi-gateway schema; run `pi-gateway migrate --db URL` first/);
  const m = await cliProcess(['migrate', '--db', url], { env });
  t.equal(m.code, 0, m.stderr);
  t.match(m.stdout, /migrated postgres:\/\/pigw@127\.0\.0\.1:\d+\/\w+ to schema version 4 \(applied 1, 2, 3, 4\)/);
  t.match((await cliInProcess(['migrate', '--db', url], env)).stdout, /already at schema version 4/);

  const created = await cliInProcess(
    ['key', 'create', '--workspace', WS, '--name', 'ci', '--rpm', '50', '--json'],
    env,
  );
  t.equal(created.code, 0, created.stderr);
  const key = JSON.parse(created.stdout) as { id: string; key: string };
  const list = await cliInProcess(['key', 'list', '--json'], env);
  t.match(JSON.parse(list.stdout), [{ id: key.id, workspace: WS, state: 'active', rpm: 50, name: 'ci' }]);
  t.match((await cliInProcess(['key', 'revoke', key.id], env)).stdout, new RegExp(`key ${key.id} revoked`));
  t.match((await cliInProcess(['key', 'revoke', key.id], env)).stdout, /was already revoked/);

  const credit = await cliInProcess(['wallet', 'credit', '--workspace', WS, '--usd', '12.5', '--json'], env);
  t.match(JSON.parse(credit.stdout), { workspace: WS, credited_usd: '12.5', balance_usd: '12.5' });
  const pg = await openPgStore(url);
  t.teardown(() => pg.close());
  await pg.holds.hold(WS, 'tr-1', 2_000_000_000n, Date.now(), 'test');
  await pg.holds.settle('tr-1', 1_250_000_000n, { model: 'v/m', provider: 'p1' }, Date.now());
  await pg.holds.hold(WS, 'tr-2', 1_000_000_000n, Date.now(), 'test');
  const show = await cliInProcess(['wallet', 'show', WS, '--json'], env);
  t.match(JSON.parse(show.stdout), { balance_usd: '11.25', held_usd: '1', available_usd: '10.25', open_holds: 1 });
  const verify = await cliProcess(['ledger', 'verify'], { env });
  t.equal(verify.code, 0, verify.stderr);
  t.match(verify.stdout, /^ok: 1 wallet\(s\) agree with the ledger/);
  t.match((await cliInProcess(['usage', '--workspace', WS, '--json'], env)).stdout, /"model": "v\/m"/);
  await pg.pool.query('UPDATE wallets SET held_nano = 0');
  const bad = await cliInProcess(['ledger', 'verify'], env);
  t.equal(bad.code, 1);
  t.match(bad.stdout, /held 0 USD but the ledger's open holds sum to 1 USD/);
  await pg.pool.query('UPDATE wallets SET held_nano = 1000000000');

  pg.requestLog.append({
    trace_id: 'tr-1',
    ts: Date.UTC(2026, 0, 1),
    workspace: WS,
    key_id: key.id,
    endpoint: 'chat.completions',
    model_requested: 'v/m',
    model_served: 'v/m',
    provider: 'p1',
    deployment: 'p1/m',
    attempts: 1,
    attempts_json: [],
    stream: false,
    status: 200,
    error_code: null,
    latency_ms: 12,
    ttfb_ms: 5,
    prompt_tokens: 3,
    completion_tokens: 4,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: 1_250_000_000n,
    app_title: null,
    app_origin: null,
    session_id: null,
    ended: 'completed',
  });
  await pg.requestLog.flush();
  t.match(JSON.parse((await cliInProcess(['logs', '--json'], env)).stdout), [
    { trace_id: 'tr-1', cost_usd: '1.25', ended: 'completed' },
  ]);

  const set = await cliProcess(['secret', 'set', 'openai-prod'], { env, input: 'sk-upstream\n' });
  t.equal(set.code, 0, set.stderr);
  t.match((await cliInProcess(['secret', 'list'], env)).stdout, /openai-prod/);
  const rotated = await cliProcess(['secret', 'rotate-master', '--json'], { env, input: masterKey(4) });
  t.equal(rotated.code, 0, rotated.stderr);
  t.match(JSON.parse(rotated.stdout), { resealed: ['openai-prod'], scrubbed: true });
  const wrong = await cliProcess(['secret', 'set', 'other'], { env, input: 'x' });
  t.equal(wrong.code, 1);
  t.match(wrong.stderr, /sealed with master key \w+ but PI_MASTER_KEY is key/);
  t.equal((await cliInProcess(['secret', 'rm', 'openai-prod'], env)).code, 0);
});

t.test('migrate --from FILE --to URL moves an embedded database exactly', async (t) => {
  const file = tempDbFile(t);
  const key = masterKey(5);
  const src = openStore(file, { masterKey: key });
  src.secrets.set('openai-prod', 'sk-upstream');
  const k = src.apiKeys.create({ workspace: WS, rpm: 7 });
  src.wallets.credit(WS, 10_000_000_000n, 'seed');
  write(src, hold(WS, 'a', 3_000_000_000n), hold(WS, 'b', 1_000_000_000n));
  write(src, settle(WS, 'a', 3_000_000_000n, 2_000_000_001n, { model: 'v/m', provider: 'p' }));
  src.operators.add('ana', 'admin', 'scrypt$32768$8$1$c2FsdA$aGFzaA');
  src.audit.append({
    at: 1,
    actor: 'ana',
    action: 'sign_in',
    target: null,
    client: '::1',
    outcome: 'ok',
    detail: null,
  });
  src.close();
  const url = await server.createDatabase();
  const env = { PI_MASTER_KEY: key };

  t.equal((await cliInProcess(['migrate', '--from', file, '--to', 'file.db'], env)).code, 2, '--to must be a URL');
  const moved = await cliProcess(['migrate', '--from', file, '--to', url, '--json'], { env });
  t.equal(moved.code, 0, moved.stderr);
  t.match(JSON.parse(moved.stdout), {
    moved: { keys: 1, secrets: 1, wallets: 1, ledger: 4, holds: 2, operators: 1, audit: 1 },
    verified_before: true,
    verified_after: true,
    problems: [],
  });

  const pg = await openPgStore(url, { masterKey: key });
  t.teardown(() => pg.close());
  t.match(
    await pg.apiKeys.verify(k.key, Date.now()),
    { status: 'ok', key: { id: k.id, rpm: 7 } },
    'the key verifies unchanged',
  );
  t.same(
    (await pg.secrets.revealAll()).get('openai-prod'),
    { value: 'sk-upstream' },
    'the same master key opens the sealed bytes',
  );
  t.match(await pg.wallets.show(WS, 0), { balance: 7_999_999_999n, held: 1_000_000_000n, openHolds: 1 });
  t.match(await pg.operators.get('ana'), { role: 'admin', passwordHash: 'scrypt$32768$8$1$c2FsdA$aGFzaA' });
  t.match(await pg.audit.list({ limit: 5 }), [{ id: 1, actor: 'ana', action: 'sign_in', client: '::1' }]);
  t.same(await pg.wallets.verify(), { ok: true, problems: [] });
  // The open hold of the stopped embedded server lapses like any orphan.
  t.equal(await pg.holds.sweep(Date.now() + 31_000), 1);
  // New ledger rows continue after the copied ids.
  const c = await pg.wallets.credit(WS, 1n, 'after');
  const ids = await pg.pool.query<{ id: bigint }>('SELECT id FROM ledger WHERE trace_id = $1', [c.traceId]);
  t.ok((ids.rows[0]?.id ?? 0n) > 4n);

  const again = await cliInProcess(['migrate', '--from', file, '--to', url], env);
  t.equal(again.code, 1);
  t.match(
    again.stderr,
    /is not empty \(rows in secrets, api_keys, wallets, ledger, holds, operators, audit_log\); migrate into a fresh database/,
  );
});
