// Live reload of a running `serve` process: `pi-gateway reload` (SIGHUP through the pid file) and a
// bare SIGHUP. A new workspace's keys work after the reload; a broken file keeps the running config,
// every problem is printed and logged as `file:line:col path: message`, and the result is recorded.
import t from 'tap';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSimulator } from '../../../src/simulator/server.ts';
import { FIXTURES } from '../../helpers/stack.ts';
import { cli, tempDir, USER } from '../../helpers/admission.ts';
import { prepareDb, startServe } from '../../helpers/serve-process.ts';

const PROBLEM_LINE = /^\S*workspaces\.yaml:\d+:\d+ \S+: .+$/;

t.test('pi-gateway reload: a new workspace works; a broken file is refused and the old config kept', async (t) => {
  const sim = await startSimulator({});
  t.teardown(() => sim.close());
  const config = join(tempDir(t, 'pi-reload-'), 'config');
  cpSync(join(FIXTURES, 'gateway'), config, { recursive: true });
  const db = prepareDb(t, 'gateway', ['newcomer']);
  const p = await startServe(t, { config, db, upstream: sim.url });
  const ask = async () => {
    const res = await fetch(`${p.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${db.extra['newcomer']}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'acme/chat-small', messages: USER }),
    });
    await res.text();
    return res.status;
  };
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
  const ok = await cli(['reload', '--db', db.file]);
  t.equal(ok.code, 0, 'reloaded');
  t.match(ok.stdout, new RegExp(`^reloaded: config [0-9a-f]{64} \\(pid ${p.child.pid}\\)`));
  t.equal(await ask(), 200, 'the new workspace’s key works without a restart');
  t.ok(await p.waitForEvent('config_reload', (e) => e['ok'] === true));

  // A broken file: refused, every problem reported, the running config kept.
  writeFileSync(
    workspaces,
    original.replace('workspaces:\n', 'workspaces:\n  - id: newcomer\n    name: Newcomer\n    rate_limit_rpm: fast\n'),
  );
  const bad = await cli(['reload', '--db', db.file]);
  t.equal(bad.code, 1, 'refused');
  const lines = bad.stdout.trim().split('\n');
  t.ok(lines.length >= 1 && lines.every((l) => PROBLEM_LINE.test(l)), 'every problem as file:line:col path: message');
  t.match(bad.stderr, /the server keeps its running config/);
  const logged = await p.waitForEvent('reload_problem');
  t.match(String(logged?.['problem']), PROBLEM_LINE, 'the server logs each problem the same way');
  t.ok(await p.waitForEvent('config_reload', (e) => e['ok'] === false));
  t.equal(await ask(), 200, 'still served by the running config');

  const json = await cli(['reload', '--db', db.file, '--json']);
  const record = JSON.parse(json.stdout) as Record<string, unknown>;
  t.same(
    Object.keys(record),
    ['ok', 'hash', 'problems', 'restart_needed', 'at', 'pid', 'seq'],
    'snake_case, as readiness shows it',
  );
  t.match(
    record,
    { ok: false, pid: p.child.pid, seq: 3, restart_needed: [] },
    'the recorded result: ok, hash, problems, time',
  );
  t.match(record['hash'], /^[0-9a-f]{64}$/);
  t.ok((record['problems'] as string[]).length > 0);
  t.match(record['at'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'the time in ISO 8601 UTC');
  t.same(JSON.parse(readFileSync(`${db.file}.reload.json`, 'utf8')), record, 'the file is what --json prints');
});

t.test('SIGHUP reloads too', async (t) => {
  const config = join(tempDir(t, 'pi-reload-'), 'config');
  cpSync(join(FIXTURES, 'gateway'), config, { recursive: true });
  const db = prepareDb(t);
  const p = await startServe(t, { config, db });
  p.child.kill('SIGHUP');
  t.ok(await p.waitForEvent('config_reload', (e) => e['ok'] === true), 'reloaded');
  t.equal(p.child.exitCode, null, 'still running (SIGHUP does not stop it)');
  p.child.kill('SIGTERM');
  t.equal((await p.exited).code, 0);
});
