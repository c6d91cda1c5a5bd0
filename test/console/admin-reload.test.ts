// POST /admin/reload on the admin listener, in process: it runs the reloader the serving process
// handed over (src/runtime/runtime.ts hands over the one SIGHUP runs; the real process is tested in
// test/spec/fleet/admin-reload.test.ts) and answers its result — 200 applied, 422 refused with every
// problem — with the operator token (a console session must also send its secret). It answers 503
// while the process is starting, has no reloader, or drains, and 404 when the console is off.
import t from 'tap';
import type { ReloadOutcome } from '../../src/console/reload.ts';
import { Lifecycle } from '../../src/observe/lifecycle.ts';
import { startAdminListener } from '../../src/server/admin-app.ts';
import { openSession, startConsoleStack, TOKEN } from '../helpers/console.ts';
import { startStack } from '../helpers/stack.ts';

const HASH = 'a'.repeat(64);
const applied: ReloadOutcome = {
  ok: true,
  hash: HASH,
  problems: [],
  restartNeeded: ['server.port'],
  at: Date.UTC(2026, 0, 15, 12),
};
const refused: ReloadOutcome = {
  ok: false,
  hash: HASH,
  problems: ['workspaces.yaml:3:5 /workspaces/0/rate_limit_rpm: must be integer'],
  restartNeeded: [],
  at: Date.UTC(2026, 0, 15, 12),
};

t.test('runs the handed-over reload and answers its result', async (t) => {
  const s = await startConsoleStack(t);
  const admin = s.admin!;
  const before = await s.call('/admin/reload', { method: 'POST' });
  t.equal(before.status, 503, 'no reloader handed over yet');
  t.match(before.body, { error: { code: 'reload_unavailable' } });

  let calls = 0;
  let next = applied;
  admin.setReloader(async () => {
    calls++;
    return next;
  });
  t.equal((await s.call('/admin/reload', { method: 'POST', token: null })).status, 401, 'no token');
  t.equal((await s.call('/admin/reload', { method: 'POST', token: 'not-the-token' })).status, 401, 'a wrong token');
  t.equal(calls, 0, 'a refused request reloads nothing');

  const ok = await s.call('/admin/reload', { method: 'POST' });
  t.equal(ok.status, 200);
  t.same(
    ok.body,
    {
      ok: true,
      hash: HASH,
      problems: [],
      restart_needed: ['server.port'],
      at: '2026-01-15T12:00:00.000Z',
      pid: process.pid,
    },
    'snake_case, ISO time, the pid',
  );
  t.equal(ok.headers.get('cache-control'), 'no-store');

  next = refused;
  const bad = await s.call('/admin/reload', { method: 'POST' });
  t.equal(bad.status, 422, 'a refused config: 422');
  t.match(bad.body, {
    ok: false,
    problems: refused.problems,
    error: { code: 'config_invalid', message: 'the config has 1 problem; the running config is kept' },
  });

  admin.setReloader(async () => {
    throw new Error('disk on fire');
  });
  const failed = await s.call('/admin/reload', { method: 'POST' });
  t.equal(failed.status, 500);
  t.match(failed.body, { error: { code: 'reload_failed', message: /disk on fire/ } });

  admin.setReloader(async () => {
    calls++;
    return applied;
  });
  s.gw.lifecycle.draining = true;
  const draining = await s.call('/admin/reload', { method: 'POST' });
  t.equal(draining.status, 503, 'draining: 503');
  t.match(draining.body, { error: { code: 'draining' } });
  t.equal(calls, 2, 'a draining gateway reloads nothing');
  s.gw.lifecycle.draining = false;
});

t.test("a console session reloads only with its page's secret", async (t) => {
  const s = await startConsoleStack(t);
  s.admin!.setReloader(async () => applied);
  const session = await openSession(s.adminUrl);
  const plain = await fetch(`${s.adminUrl}/admin/reload`, { method: 'POST', headers: { cookie: session.cookie } });
  t.equal(plain.status, 403, 'a cross-site form cannot reload');
  await plain.text();
  const replayed = await fetch(`${s.adminUrl}/admin/reload`, {
    method: 'POST',
    headers: { cookie: session.cookie, 'x-pi-console': '1' },
  });
  t.equal(replayed.status, 403, 'nor a replayed cookie with the old constant header');
  await replayed.text();
  const fromConsole = await fetch(`${s.adminUrl}/admin/reload`, {
    method: 'POST',
    headers: { cookie: session.cookie, 'x-pi-console-secret': session.secret },
  });
  t.equal(fromConsole.status, 200);
  await fromConsole.text();
});

t.test('503 while starting; 404 when the console is off', async (t) => {
  const starting = await startAdminListener({
    host: '127.0.0.1',
    port: 0,
    lifecycle: new Lifecycle(),
    metrics: null,
    token: TOKEN,
  });
  t.teardown(() => starting.close());
  const r = await fetch(`${starting.url}/admin/reload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  t.equal(r.status, 503);
  t.match(await r.json(), { error: { code: 'starting' } });

  const s = await startStack(t, { admin: true });
  s.admin!.setReloader(async () => applied);
  const off = await fetch(`${s.admin!.url}/admin/reload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  t.equal(off.status, 404, 'without PI_ADMIN_TOKEN nothing reloads through the listener');
  t.match(await off.json(), { error: { code: 'console_off' } });
});
