// Reloading a fleet node, which has no database file and no pid file: POST /admin/reload on its admin
// listener with the operator token, and `pi-gateway reload --admin URL` that sends it. A node on a
// private PostgreSQL (its URL carrying a password), the simulator upstream. A new workspace's key is
// refused before the reload and served after it; a broken config is refused with every problem and
// the running one kept; a missing or wrong token is refused; and no reload invocation — through the
// admin listener or the refused `--db postgres://…` — prints the URL's password or a token.
import t, { type Test } from 'tap';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { sourceHashOf } from '../../../src/config/config-files.ts';
import { decimalToNano } from '../../../src/money.ts';
import { startSimulator } from '../../../src/simulator/server.ts';
import { openPgStore } from '../../../src/store/postgres/store.ts';
import { cli, type CliRun, tempDir, USER } from '../../helpers/admission.ts';
import { freePort } from '../../helpers/free-port.ts';
import { startPrivatePg } from '../../helpers/pg.ts';
import { type ServeProcess, startServe } from '../../helpers/serve-process.ts';
import { FIXTURES, fixtureConfig } from '../../helpers/stack.ts';

const PASSWORD = 'pw-never-printed-7f3a9c';
const TOKEN = 'operator-token-never-printed-51d0e2';
const WRONG = 'wrong-token-never-printed-b84c17';
const PROBLEM_LINE = /^\S*workspaces\.yaml:\d+:\d+ \S+: .+$/;

let url: string;
let admin: string;
let node: ServeProcess;
let config: string;
let newcomer: string;

t.before(async () => {
  const [pg, sim] = await Promise.all([startPrivatePg(), startSimulator({ record: false })]);
  t.teardown(async () => {
    await sim.close();
    await pg.destroy();
  });
  // The server trusts every local connection; the password is in the URL as an operator's would be.
  url = (await pg.createDatabase()).replace('postgres://pigw@', `postgres://pigw:${PASSWORD}@`);
  const masterKey = randomBytes(32).toString('base64');
  const m = await openPgStore(url, { checkSchema: false, masterKey });
  await m.migrate();
  for (const r of fixtureConfig('gateway').resources)
    if (!(await m.secrets.list()).some((s) => s.name === r.credential))
      await m.secrets.set(r.credential, `upstream-${r.credential}`);
  newcomer = (await m.apiKeys.create({ workspace: 'newcomer', name: 'reload' })).key;
  await m.wallets.credit('newcomer', decimalToNano('10'), 'test');
  await m.close();
  config = join(tempDir(t, 'pi-fleet-reload-'), 'config');
  cpSync(join(FIXTURES, 'gateway'), config, { recursive: true });
  node = await startServe(t, {
    config,
    db: { file: url, masterKey, key: '' },
    upstream: sim.url,
    args: ['--admin-port', '0'],
    env: { PI_ADMIN_TOKEN: TOKEN, PI_ADMIN_PORT: '', PI_REDIS_URL: '' },
  });
  admin = String(node.events.find((e) => e.event === 'listening')?.['admin']);
});

t.teardown(async () => {
  if (node?.child.exitCode !== null) return;
  node.child.kill('SIGTERM');
  await node.exited;
});

/** `pi-gateway reload …` with the operator token (or `env`'s), labelled for the output checks. */
async function reload(runs: [string, CliRun][], args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const r = await cli(['reload', ...args], { PI_ADMIN_TOKEN: TOKEN, PI_ADMIN_TOKEN_FILE: '', PI_DB: '', ...env });
  const token =
    env['PI_ADMIN_TOKEN'] === undefined ? 'the token' : env['PI_ADMIN_TOKEN'] === '' ? 'no token' : 'a wrong token';
  runs.push([
    `${args.join(' ').replaceAll(PASSWORD, '<password>')} (${token}${env['PI_DB'] ? ', PI_DB=postgres://…' : ''})`,
    r,
  ]);
  return r;
}

function noCredentialIn(t: Test, runs: [string, CliRun][]): void {
  for (const [label, r] of runs) {
    const out = r.stdout + r.stderr;
    t.notOk(out.includes(PASSWORD), `no password in the output of reload ${label}`);
    t.notOk(out.includes(TOKEN) || out.includes(WRONG), `no token in the output of reload ${label}`);
  }
}

const ask = async (): Promise<number> => {
  const res = await fetch(`${node.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${newcomer}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'acme/chat-small', messages: USER }),
  });
  await res.text();
  return res.status;
};

t.test('reload --db postgres://… says how to reload a node, and never prints the URL’s password', async (t) => {
  const runs: [string, CliRun][] = [];
  const fleetDb = await reload(runs, ['--db', url]);
  t.equal(fleetDb.code, 1, '--db postgres://… is refused');
  t.match(fleetDb.stderr, /a fleet node has no pid file.*reload --admin http:\/\/NODE:ADMIN_PORT/);
  const envDb = await reload(runs, [], { PI_DB: url });
  t.equal(envDb.code, 1, 'PI_DB=postgres://… is refused the same way');
  t.match(envDb.stderr, /a fleet node has no pid file/);
  t.equal((await reload(runs, ['--db', url, '--json'])).code, 1);
  t.equal((await reload(runs, ['--db', url, '--admin', admin])).code, 2, '--db and --admin together: a usage error');
  t.equal((await reload(runs, ['--db', url, '--timeout', 'soon'])).code, 2, 'a bad flag beside the URL: a usage error');
  noCredentialIn(t, runs);
});

t.test('a fleet node reloads through its admin listener', async (t) => {
  const runs: [string, CliRun][] = [];
  t.match(admin, /^http:\/\/127\.0\.0\.1:\d+$/, 'the node has an admin listener');
  t.equal(await ask(), 401, 'the workspace is not in the config yet');
  const workspaces = join(config, 'workspaces.yaml');
  const original = readFileSync(workspaces, 'utf8');
  writeFileSync(
    workspaces,
    original.replace(
      'workspaces:\n',
      'workspaces:\n  - id: newcomer\n    name: Newcomer\n    rate_limit_rpm: 100000\n',
    ),
  );
  const hash = sourceHashOf(config);

  const noToken = await fetch(`${admin}/admin/reload`, { method: 'POST' });
  t.equal(noToken.status, 401, 'no token: 401');
  t.match(await noToken.json(), { error: { code: 'unauthorized' } });
  const wrong = await fetch(`${admin}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${WRONG}` } });
  t.equal(wrong.status, 401, 'a wrong token: 401');
  await wrong.text();
  const refused = await reload(runs, ['--admin', admin], { PI_ADMIN_TOKEN: WRONG });
  t.equal(refused.code, 1, 'the CLI with a wrong token exits 1');
  t.match(refused.stderr, /refused the operator token \(401\)/);
  const missing = await reload(runs, ['--admin', admin], { PI_ADMIN_TOKEN: '' });
  t.equal(missing.code, 1, 'the CLI without a token exits 1');
  t.match(missing.stderr, /needs the operator token: set PI_ADMIN_TOKEN/);
  t.equal(await ask(), 401, 'nothing was reloaded by a refused request');

  // The operator's environment holds the fleet's database URL (docs/fleet.md): never printed.
  const ok = await reload(runs, ['--admin', admin], { PI_DB: url });
  t.equal(ok.code, 0, 'reloaded');
  const port = new URL(admin).port;
  t.match(
    ok.stdout,
    new RegExp(`^reloaded: config ${hash} \\(127\\.0\\.0\\.1:${port}, pid ${node.child.pid}\\)$`, 'm'),
    'names the new config, the listener and the pid',
  );
  t.equal(await ask(), 200, 'the new workspace’s key is served without a restart');
  const ready = (await (await fetch(`${admin}/health/ready`)).json()) as {
    config: { hash: string };
    last_reload: { ok: boolean; hash: string };
  };
  t.match(ready, { config: { hash }, last_reload: { ok: true, hash } }, 'readiness shows the new hash and the reload');

  // Two at once: each waits for the other (one reload at a time), both succeed.
  const both = await Promise.all(
    [0, 1].map(() => fetch(`${admin}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })),
  );
  t.same(
    both.map((r) => r.status),
    [200, 200],
    'two concurrent reloads both answer 200',
  );
  for (const r of both)
    t.match(await r.json(), {
      ok: true,
      hash,
      problems: [],
      restart_needed: [],
      pid: node.child.pid,
      at: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
    });

  writeFileSync(
    workspaces,
    original.replace('workspaces:\n', 'workspaces:\n  - id: newcomer\n    name: Newcomer\n    rate_limit_rpm: fast\n'),
  );
  const bad = await reload(runs, ['--admin', admin]);
  t.equal(bad.code, 1, 'a broken config: exit 1');
  const lines = bad.stdout.trim().split('\n');
  t.ok(lines.length >= 1 && lines.every((l) => PROBLEM_LINE.test(l)), 'every problem as file:line:col path: message');
  t.match(bad.stderr, /the server keeps its running config/);
  const badJson = await fetch(`${admin}/admin/reload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  t.equal(badJson.status, 422, 'the route answers 422');
  t.match(await badJson.json(), {
    ok: false,
    hash: sourceHashOf(config),
    error: { code: 'config_invalid' },
    problems: [PROBLEM_LINE],
  });
  t.equal(await ask(), 200, 'still served by the running config');
  const json = await reload(runs, ['--admin', admin, '--json']);
  t.equal(json.code, 1);
  t.match(JSON.parse(json.stdout || 'null'), { ok: false, pid: node.child.pid }, '--json prints the node’s answer');

  const closed = await freePort();
  const userinfo = await reload(runs, ['--admin', admin.replace('http://', `http://operator:${PASSWORD}@`)]);
  t.equal(userinfo.code, 2, 'an admin URL with a password is refused');
  t.match(userinfo.stderr, /must not carry a user name or password/);
  t.equal(
    (await reload(runs, ['--admin', `${admin}/?token=${PASSWORD}`])).code,
    1,
    'a query string is dropped (the config is still broken)',
  );
  const unreachable = await reload(runs, ['--admin', `http://127.0.0.1:${closed}`], { PI_DB: url });
  t.equal(unreachable.code, 1, 'nothing listening: exit 1');
  t.match(
    unreachable.stderr,
    new RegExp(`cannot reach the admin listener at 127\\.0\\.0\\.1:${closed} \\(ECONNREFUSED\\)`),
  );
  t.equal((await reload(runs, ['--admin', 'not a url'])).code, 2);
  // A listener that accepts and never answers: the CLI gives up at --timeout.
  const silent = createServer(() => undefined);
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  t.teardown(() => silent.close());
  const silentPort = (silent.address() as AddressInfo).port;
  const timedOut = await reload(runs, ['--admin', `http://127.0.0.1:${silentPort}`, '--timeout', '1']);
  t.equal(timedOut.code, 1, 'no answer: exit 1');
  t.match(
    timedOut.stderr,
    new RegExp(`cannot reach the admin listener at 127\\.0\\.0\\.1:${silentPort} \\(no answer within 1 s\\)`),
  );
  noCredentialIn(t, runs);

  node.child.kill('SIGTERM');
  t.equal((await node.exited).code, 0, 'the node stops cleanly');
});
