// `pi-gateway secret` and `pi-gateway key` against a temp database: the required flows as real
// subprocesses (stdin, environment), error paths in-process.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { openStore } from '../../src/store/sqlite/store.ts';
import { masterKey, tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';
import { cliInProcess, cliProcess, fixtureWorkspace, type Run, type RunOptions } from './fixtures/run-cli.ts';

const WS = fixtureWorkspace();
const KEY = masterKey(9);
const SECRET = 'upstream-credential-DO-NOT-PRINT-42';

t.test('secret set via stdin, list, rm: the value is never printed', async (t) => {
  const db = tempDbFile(t);
  const env = { PI_DB: db, PI_MASTER_KEY: KEY };
  const outputs: Run[] = [];
  const run = async (args: string[], opts: RunOptions = {}) => {
    const r = await cliProcess(args, { ...opts, env: { ...env, ...opts.env } });
    outputs.push(r);
    return r;
  };
  const inProc = async (args: string[], extra: Record<string, string | undefined> = {}) => {
    const r = await cliInProcess(args, { ...env, ...extra });
    outputs.push(r);
    return r;
  };

  const set = await run(['secret', 'set', 'OPENAI_API_KEY'], { input: SECRET + '\n' });
  t.equal(set.code, 0, set.stderr);
  t.match(set.stdout, /secret OPENAI_API_KEY stored/);
  const [set2, noKey] = await Promise.all([
    run(['secret', 'set', 'MULTI', '--json'], { input: 'line1\nline2\n\n' }),
    run(['secret', 'set', 'X'], { input: 'v', env: { PI_MASTER_KEY: undefined } }),
  ]);
  t.equal(set2.code, 0, set2.stderr);
  t.match(JSON.parse(set2.stdout), { name: 'MULTI', created_at: String, updated_at: String });
  t.equal(noKey.code, 1);
  t.match(noKey.stderr, /PI_MASTER_KEY is not set/);

  const [list, json] = await Promise.all([run(['secret', 'list']), run(['secret', 'list', '--json'])]);
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, /^NAME\s+CREATED\s+UPDATED\n/);
  t.match(list.stdout, /MULTI[\s\S]*OPENAI_API_KEY/);
  t.same(
    (JSON.parse(json.stdout) as { name: string }[]).map((r) => r.name),
    ['MULTI', 'OPENAI_API_KEY'],
  );

  const store = openStore(db, { masterKey: KEY });
  t.equal(store.secrets.reveal('OPENAI_API_KEY'), SECRET, 'one trailing newline dropped');
  t.equal(store.secrets.reveal('MULTI'), 'line1\nline2\n', 'only one');
  store.close();

  // Error paths, in-process (stdin is empty there, which is itself the empty-value case).
  const empty = await inProc(['secret', 'set', 'EMPTY']);
  t.equal(empty.code, 1);
  t.match(empty.stderr, /empty value/);
  const wrongKey = await cliProcess(['secret', 'set', 'X'], {
    input: 'v',
    env: { ...env, PI_MASTER_KEY: masterKey(3) },
  });
  outputs.push(wrongKey);
  t.equal(wrongKey.code, 1);
  t.match(wrongKey.stderr, /sealed with master key/);
  t.equal((await inProc(['secret', 'set', 'X', SECRET])).code, 2, 'a value on argv is a usage error');
  t.equal((await inProc(['secret', 'rm', 'MULTI'])).code, 0);
  const again = await inProc(['secret', 'rm', 'MULTI']);
  t.equal(again.code, 1);
  t.match(again.stderr, /no secret named "MULTI"/);

  for (const o of outputs) t.notMatch(o.stdout + o.stderr, /DO-NOT-PRINT|line1/, 'the value is never printed');
  t.notOk(readFileSync(db).includes(SECRET), 'nor in the database file');
});

t.test('key create, list, revoke with --json', async (t) => {
  const db = tempDbFile(t);
  const env = { PI_DB: db };
  const created = await cliProcess(
    ['key', 'create', '--workspace', WS, '--name', 'ci', '--rpm', '30', '--expires-at', '2099-01-01', '--json'],
    { env },
  );
  t.equal(created.code, 0, created.stderr);
  const k = JSON.parse(created.stdout) as { id: string; key: string; prefix: string };
  t.match(k, { workspace: WS, name: 'ci', rpm: 30, expires_at: '2099-01-01T00:00:00.000Z', created_at: String });
  t.match(k.key, /^sk-pi-[A-Za-z0-9_-]{43}$/);
  t.equal(k.prefix, k.key.slice(0, 14));

  const plain = await cliInProcess(['key', 'create', '--workspace', WS], env);
  t.equal(plain.code, 0, plain.stderr);
  t.match(plain.stdout, /^sk-pi-[A-Za-z0-9_-]{43}\n$/, 'text mode: stdout is the key alone');
  t.match(plain.stderr, /shown only once/);

  const [list, table] = await Promise.all([
    cliProcess(['key', 'list', '--json'], { env }),
    cliProcess(['key', 'list'], { env }),
  ]);
  t.equal(list.code, 0, list.stderr);
  const rows = JSON.parse(list.stdout) as Record<string, unknown>[];
  t.equal(rows.length, 2);
  t.match(rows[0], {
    id: k.id,
    prefix: k.prefix,
    name: 'ci',
    workspace: WS,
    state: 'active',
    rpm: 30,
    expires_at: '2099-01-01T00:00:00.000Z',
    revoked_at: null,
  });
  t.notOk('key' in (rows[0] as object) || 'hash' in (rows[0] as object), 'no key or hash field');
  t.match(table.stdout, /^ID\s+PREFIX\s+NAME\s+WORKSPACE\s+STATE\s+CREATED\s+EXPIRES/);
  for (const out of [list.stdout, table.stdout]) {
    t.notMatch(out, k.key.slice(14), 'the secret part is never listed');
    t.notMatch(out, plain.stdout.trim().slice(14));
  }

  const revoked = await cliProcess(['key', 'revoke', k.id, '--json'], { env });
  t.equal(revoked.code, 0, revoked.stderr);
  t.match(JSON.parse(revoked.stdout), { id: k.id, revoked: true, already_revoked: false, revoked_at: String });
  const listed = await cliProcess(['key', 'list', '--workspace', WS, '--json'], { env });
  t.equal((JSON.parse(listed.stdout) as { id: string; state: string }[]).find((r) => r.id === k.id)?.state, 'revoked');
  const store = openStore(db);
  t.same(store.apiKeys.verify(k.key, Date.now()), { status: 'revoked' });
  store.close();

  const twice = await cliInProcess(['key', 'revoke', k.id], env);
  t.equal(twice.code, 0);
  t.match(twice.stdout, /already revoked/);
  const unknownWs = await cliInProcess(['key', 'create', '--workspace', 'no-such-workspace'], env);
  t.equal(unknownWs.code, 1);
  t.match(unknownWs.stderr, /unknown workspace "no-such-workspace"/);
  t.equal((await cliInProcess(['key', 'create', '--workspace', WS, '--expires-at', 'tomorrow'], env)).code, 2);
  t.equal(
    (await cliInProcess(['key', 'create', '--workspace', WS, '--expires-at', '2001-01-01'], env)).code,
    2,
    'past expiry',
  );
  t.equal((await cliInProcess(['key', 'create', '--workspace', WS, '--rpm', '0'], env)).code, 2);
  t.equal((await cliInProcess(['key', 'create'], env)).code, 2, '--workspace is required');
  t.equal((await cliInProcess(['key', 'revoke', 'key_nope'], env)).code, 1);
  t.equal((await cliInProcess(['key', 'bogus'], env)).code, 2);
});
