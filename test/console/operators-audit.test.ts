// Named operator accounts and the audit trail on the embedded store: sign-in with a name and
// password, the viewer role refused every write (403 role_forbidden), every sign-in and admin write
// in the append-only trail (the console's GET /admin/audit and `pi-gateway audit`), and the CLI's
// `operator add|list|remove` (password from stdin, scrypt hash, never printed).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { hashPassword } from '../../src/admin/passwords.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { cli, tempDir } from '../helpers/admission.ts';
import { startConsoleStack, TOKEN } from '../helpers/console.ts';
import { checkOperatorsAndAudit } from '../helpers/console-security.ts';

t.test('operators sign in by name; a viewer reads only; the trail records who did what', async (t) => {
  const s = await startConsoleStack(t);
  s.credit('open', '100');
  await checkOperatorsAndAudit(t, {
    adminUrl: s.adminUrl,
    token: TOKEN,
    advance: (ms) => s.clock.advance(ms),
    logs: () => [],
    balance: async () => '',
    addOperator: async (name, role, password) => {
      s.store.operators.add(name, role, await hashPassword(password));
    },
    removeOperator: async (name) => {
      s.store.operators.remove(name);
    },
  });
  t.throws(
    () => (s.store as unknown as { db: { exec(sql: string): void } }).db.exec('UPDATE audit_log SET actor = 1'),
    /append-only/,
    'the trail refuses UPDATE',
  );
  t.throws(
    () => (s.store as unknown as { db: { exec(sql: string): void } }).db.exec('DELETE FROM audit_log'),
    /append-only/,
    'and DELETE',
  );
});

t.test('pi-gateway operator add|list|remove and audit', async (t) => {
  const db = join(tempDir(t, 'pi-operators-'), 'gw.db');
  const env = { PI_MASTER_KEY: randomBytes(32).toString('base64'), PI_DB: db };
  const password = 'a-long-cli-password-7d1e';
  const added = await cli(['operator', 'add', 'ana', '--role', 'admin'], env, `${password}\n`);
  t.equal(added.code, 0, added.stderr);
  t.equal(added.stdout, 'operator ana added with the admin role\n');
  const dup = await cli(['operator', 'add', 'ana', '--role', 'viewer'], env, `${password}\n`);
  t.equal(dup.code, 1);
  t.match(dup.stderr, /exists already/);
  const short = await cli(['operator', 'add', 'bob', '--role', 'viewer'], env, 'short\n');
  t.equal(short.code, 1);
  t.match(short.stderr, /at least 12 characters/);
  const role = await cli(['operator', 'add', 'bob', '--role', 'root'], env, `${password}\n`);
  t.equal(role.code, 2, 'an unknown role is a usage error');
  t.match(role.stderr, /--role is required: admin .* or viewer/);
  const list = await cli(['operator', 'list', '--json'], env);
  t.match(JSON.parse(list.stdout), [{ name: 'ana', role: 'admin', created_at: /Z$/ }]);

  const store = openStore(db, { readonly: true });
  const hash = store.operators.get('ana')?.passwordHash ?? '';
  store.close();
  t.match(hash, /^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/, 'a scrypt hash with its parameters');
  for (const r of [added, list]) t.notOk(r.stdout.includes(password) || r.stderr.includes(password), 'never printed');

  t.equal((await cli(['operator', 'remove', 'ana'], env)).code, 0);
  t.equal((await cli(['operator', 'remove', 'ana'], env)).code, 1, 'removing twice');
  const audit = await cli(['audit', '--json'], env);
  t.equal(audit.code, 0, audit.stderr);
  t.match(JSON.parse(audit.stdout), [
    { actor: /^cli/, action: 'operator.remove', target: 'ana', outcome: 'ok', client: null },
    { actor: /^cli/, action: 'operator.add', target: 'ana', outcome: 'ok', detail: { role: 'admin' } },
  ]);
  const table = await cli(['audit', '--since', '2000-01-01', '--limit', '1'], env);
  t.match(table.stdout, /^TIME +WHO +ACTION +TARGET +FROM +OUTCOME +DETAIL\n.*operator\.remove +ana/);
  t.equal(table.stdout.trim().split('\n').length, 2, '--limit 1: one row');
  t.equal(
    (await cli(['audit', '--since', '2999-01-01'], env)).stdout,
    'TIME  WHO  ACTION  TARGET  FROM  OUTCOME  DETAIL\n',
  );
});
