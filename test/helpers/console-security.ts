// The admin listener's defences, checked the same way on any console (the embedded store's stack and
// a PostgreSQL fleet node): no CORS on any answer, failed sign-ins limited and logged, sessions bound
// to the page's secret with an idle timeout, a protected sign-out.
import type { Test } from 'tap';
import { openSession, postLogin, sessionCall } from './console.ts';

/** A console to attack: its base URL and the operator token it runs with. */
export interface ConsoleTarget {
  adminUrl: string;
  token: string;
}

/** Every kind of answer the admin listener gives, preflights included. */
const PROBES: [string, string, Record<string, string>?][] = [
  ['GET', '/health/live'],
  ['GET', '/health/ready'],
  ['GET', '/metrics'],
  ['GET', '/console'],
  ['POST', '/console/login', { 'content-type': 'application/x-www-form-urlencoded' }],
  ['POST', '/console/logout'],
  ['GET', '/admin/requests'],
  ['POST', '/admin/wallets/open/credit', { 'content-type': 'application/json' }],
  ['GET', '/nowhere'],
  ['OPTIONS', '/console/login', { 'access-control-request-method': 'POST' }],
  ['OPTIONS', '/admin/wallets/open/credit', { 'access-control-request-method': 'POST' }],
  ['OPTIONS', '/metrics', { 'access-control-request-method': 'GET' }],
];

/** No answer of the admin listener carries a CORS header, whatever Origin asks. */
export async function checkNoCors(t: Test, c: ConsoleTarget): Promise<void> {
  for (const [method, path, headers] of PROBES) {
    const res = await fetch(`${c.adminUrl}${path}`, {
      method,
      headers: { origin: 'https://evil.example', ...headers },
      ...(method === 'POST' ? { body: 'token=guess' } : {}),
      redirect: 'manual',
    });
    await res.arrayBuffer();
    const cors = [...res.headers.keys()].filter((h) => h.startsWith('access-control-'));
    t.same(cors, [], `${method} ${path} (${res.status}): no Access-Control-* header`);
  }
}

/** What the checks below need beyond the URL: the gateway's clock and the console's log lines. */
export interface TimedConsole extends ConsoleTarget {
  advance(ms: number): void;
  /** The console's log events so far (event name and fields). */
  logs(): { event: string; fields: Record<string, unknown> }[];
  /** A wallet's balance as the store has it (decimal USD). */
  balance(workspace: string): Promise<string>;
}

const bearer = (c: ConsoleTarget, token: string): Promise<Response> =>
  fetch(`${c.adminUrl}/admin/meta`, { headers: { authorization: `Bearer ${token}` } });

/**
 * Ten wrong tokens in a minute lock the client out: the 11th attempt and every one after it (the
 * 20th, the right token too) get 429 with Retry-After until the lock ends; the next lock lasts
 * twice as long. Each failure is one log line without the token.
 */
export async function checkSignInLimits(t: Test, c: TimedConsole): Promise<void> {
  c.advance(60 * 60_000);
  const before = c.logs().length;
  const statuses: number[] = [];
  let last: Response | null = null;
  for (let i = 1; i <= 20; i++) {
    last = await bearer(c, `wrong-token-${i}-never-logged`);
    await last.arrayBuffer();
    statuses.push(last.status);
  }
  t.same(statuses, [...Array(10).fill(401), ...Array(10).fill(429)], 'ten 401s, then 429s');
  t.equal(last?.headers.get('retry-after'), '60', 'the 20th wrong token: 429 with Retry-After');
  const limited = await bearer(c, c.token);
  t.equal(limited.status, 429, 'the right token is refused too while locked (no oracle)');
  t.match(await limited.json(), { error: { code: 'too_many_attempts' } });
  const form = await fetch(`${c.adminUrl}/console/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: c.token }).toString(),
    redirect: 'manual',
  });
  t.equal(form.status, 429, 'and so is the sign-in form');
  t.ok(Number(form.headers.get('retry-after')) > 0);

  const lines = c.logs().slice(before);
  const failed = lines.filter((l) => l.event === 'admin_sign_in_failed');
  t.equal(failed.length, 10, 'each failed attempt is one log line');
  t.match(failed[0]?.fields, { client: /127\.0\.0\.1/, via: 'bearer' });
  t.ok(
    lines.some((l) => l.event === 'admin_sign_in_limited'),
    'the refusals while locked are logged',
  );
  t.notOk(JSON.stringify(lines).includes('never-logged'), 'no presented token in any log line');
  t.notOk(JSON.stringify(lines).includes(c.token), 'nor the operator token');

  c.advance(60_000);
  for (let i = 1; i <= 10; i++) await (await bearer(c, `wrong-again-${i}`)).arrayBuffer();
  const second = await bearer(c, c.token);
  t.equal(second.status, 429, 'locked again right after the first lock');
  t.equal(second.headers.get('retry-after'), '120', 'for twice as long (back-off)');
  c.advance(120_000);
  t.equal((await bearer(c, c.token)).status, 200, 'after the lock the right token works');
  t.equal((await bearer(c, 'one-more-wrong')).status, 401, 'and a success clears the count');
}

/**
 * A session is bound to the secret its page fetched once: the cookie replayed alone (or with the old
 * constant header) reads but cannot write; the secret is not handed out twice; sign-out is a write
 * like the others; sessions end after 30 idle minutes and 12 hours after sign-in.
 */
export async function checkSessionBinding(t: Test, c: TimedConsole): Promise<void> {
  c.advance(60 * 60_000);
  const credit = { usd: '1', note: 'replayed' };
  const before = await c.balance('open');
  // The cookie as another server on the same host receives it, replayed from a script.
  const signedIn = await postLogin(c.adminUrl, { token: c.token });
  const stolen = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const replayed = await fetch(`${c.adminUrl}/admin/wallets/open/credit`, {
    method: 'POST',
    headers: { cookie: stolen, 'x-pi-console': '1', 'content-type': 'application/json' },
    body: JSON.stringify(credit),
  });
  t.equal(replayed.status, 403, 'a replayed cookie with X-Pi-Console: 1 cannot credit');
  t.match(await replayed.json(), { error: { code: 'session_secret_required' } });
  const signOut = await fetch(`${c.adminUrl}/console/logout`, {
    method: 'POST',
    headers: { cookie: stolen },
    redirect: 'manual',
  });
  t.equal(signOut.status, 403, 'nor sign the operator out');
  await signOut.arrayBuffer();

  const s = await openSession(c.adminUrl, { token: c.token });
  t.match(s.cookie, new RegExp(`^pi_console_${new URL(c.adminUrl).port}=`), 'the cookie is named by port');
  const replayedAgain = await fetch(`${c.adminUrl}/admin/wallets/open/credit`, {
    method: 'POST',
    headers: { cookie: s.cookie, 'x-pi-console': '1', 'content-type': 'application/json' },
    body: JSON.stringify(credit),
  });
  t.equal(replayedAgain.status, 403, 'also once the page holds the secret');
  await replayedAgain.arrayBuffer();
  const wrongSecret = await sessionCall(c.adminUrl, s, '/admin/wallets/open/credit', {
    body: credit,
    secret: 'x'.repeat(43),
  });
  t.equal(wrongSecret.status, 403, 'nor with a made-up secret');
  t.equal(await c.balance('open'), before, 'the wallet is unchanged');
  t.equal((await sessionCall(c.adminUrl, s, '/admin/meta', { secret: null })).status, 200, 'the cookie reads');
  const ok = await sessionCall(c.adminUrl, s, '/admin/wallets/open/credit', { body: { usd: '1', note: 'page' } });
  t.equal(ok.status, 200, 'the page, with its secret, credits');

  const again = await fetch(`${c.adminUrl}/console/session`, { headers: { cookie: s.cookie, 'x-pi-console': '1' } });
  t.equal(again.status, 401, 'the secret is handed over once: asking again is refused');
  t.match(await again.json(), { error: { code: 'sign_in_again' } });

  const s2 = await openSession(c.adminUrl, { token: c.token });
  const noHeader = await fetch(`${c.adminUrl}/console/session`, { headers: { cookie: s2.cookie } });
  t.equal(noHeader.status, 403, 'the hand-over needs X-Pi-Console: 1 (no cross-origin page can send it)');
  const logout = (headers: Record<string, string>) =>
    fetch(`${c.adminUrl}/console/logout`, { method: 'POST', headers: { cookie: s2.cookie, ...headers } });
  t.equal((await logout({})).status, 403, 'sign-out without the secret is refused');
  t.equal((await logout({ 'x-pi-console': '1' })).status, 403, 'also with the old constant header');
  t.equal((await sessionCall(c.adminUrl, s2, '/admin/meta')).status, 200, 'the session is still on');
  t.equal((await logout({ 'x-pi-console-secret': s2.secret })).status, 200, 'with it, signed out');
  t.equal((await sessionCall(c.adminUrl, s2, '/admin/meta')).status, 401, 'and the session is over');

  const idle = await openSession(c.adminUrl, { token: c.token });
  c.advance(29 * 60_000);
  t.equal((await sessionCall(c.adminUrl, idle, '/admin/meta')).status, 200, 'used after 29 idle minutes');
  c.advance(29 * 60_000);
  t.equal((await sessionCall(c.adminUrl, idle, '/admin/meta')).status, 200, 'each use restarts the idle time');
  c.advance(30 * 60_000);
  t.equal((await sessionCall(c.adminUrl, idle, '/admin/meta')).status, 401, 'ended after 30 idle minutes');

  const busy = await openSession(c.adminUrl, { token: c.token });
  let status = 200;
  for (let used = 0; used < 12 * 60 && status === 200; used += 20) {
    c.advance(20 * 60_000);
    status = (await sessionCall(c.adminUrl, busy, '/admin/meta')).status;
  }
  t.equal(status, 401, 'a session in use ends 12 hours after sign-in');
}

/** A console whose operator accounts the test creates (as `pi-gateway operator add` does). */
export interface AccountsConsole extends TimedConsole {
  addOperator(name: string, role: 'admin' | 'viewer', password: string): Promise<void>;
  removeOperator(name: string): Promise<void>;
}

export const ADMIN_PASSWORD = 'ana-password-not-logged-4f1c';
export const VIEWER_PASSWORD = 'vic-password-not-logged-9b2e';

/**
 * Named operators: an admin and a viewer sign in with name and password; the viewer reads but every
 * write is 403 role_forbidden; the trail records sign-ins (ok and failed), writes with their actor,
 * target, client and outcome, and refused writes; a removed account's session ends.
 */
export async function checkOperatorsAndAudit(t: Test, c: AccountsConsole): Promise<void> {
  c.advance(60 * 60_000);
  await c.addOperator('ana', 'admin', ADMIN_PASSWORD);
  await c.addOperator('vic', 'viewer', VIEWER_PASSWORD);
  const wrong = await postLogin(c.adminUrl, { name: 'ana', token: 'not-her-password' });
  t.equal(wrong.status, 401, 'a wrong password is refused');
  t.match(await wrong.text(), /Wrong name or password/);
  t.equal((await postLogin(c.adminUrl, { name: 'nobody', token: ADMIN_PASSWORD })).status, 401, 'an unknown name');

  const ana = await openSession(c.adminUrl, { name: 'ana', token: ADMIN_PASSWORD });
  t.same(ana.operator, { name: 'ana', role: 'admin' });
  const vic = await openSession(c.adminUrl, { name: 'vic', token: VIEWER_PASSWORD });
  t.same(vic.operator, { name: 'vic', role: 'viewer' });

  t.equal((await sessionCall(c.adminUrl, vic, '/admin/wallets')).status, 200, 'a viewer reads');
  t.equal(
    (
      await sessionCall(c.adminUrl, vic, '/admin/route-preview', {
        body: { workspace: 'open', model: 'acme/chat-small' },
      })
    ).status,
    200,
    'a viewer previews routes (a POST that changes nothing)',
  );
  const refused = await sessionCall(c.adminUrl, vic, '/admin/wallets/open/credit', {
    body: { usd: '5', note: 'viewer tries' },
  });
  t.equal(refused.status, 403, 'a viewer cannot credit');
  t.match(refused.body, { error: { code: 'role_forbidden', message: /vic has the viewer role/ } });
  for (const [path, body] of [
    ['/admin/keys', { workspace: 'open' }],
    ['/admin/keys/key_x/revoke', {}],
    ['/admin/reload', {}],
  ] as const)
    t.equal((await sessionCall(c.adminUrl, vic, path, { body })).status, 403, `nor POST ${path}`);

  const credited = await sessionCall(c.adminUrl, ana, '/admin/wallets/open/credit', {
    body: { usd: '2.5', note: 'invoice 77' },
  });
  t.equal(credited.status, 200, 'an admin credits');
  const key = await fetch(`${c.adminUrl}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${c.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ workspace: 'open', name: 'audited' }),
  });
  const created = (await key.json()) as { id: string; key: string };
  await fetch(`${c.adminUrl}/admin/keys/${created.id}/revoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${c.token}`, 'content-type': 'application/json' },
    body: '{}',
  });

  const trail = await sessionCall(c.adminUrl, vic, '/admin/audit?limit=20');
  t.equal(trail.status, 200, 'a viewer reads the trail');
  const entries = trail.body.entries as Record<string, unknown>[];
  const pick = (e: Record<string, unknown>) => [e.actor, e.action, e.target, e.outcome];
  t.same(entries.slice(0, 10).map(pick), [
    ['token', 'key.revoke', created.id, 'ok'],
    ['token', 'key.create', created.id, 'ok'],
    ['ana', 'wallet.credit', 'open', 'ok'],
    ['vic', 'config.reload', null, 'refused: role_forbidden'],
    ['vic', 'key.revoke', 'key_x', 'refused: role_forbidden'],
    ['vic', 'key.create', null, 'refused: role_forbidden'],
    ['vic', 'wallet.credit', 'open', 'refused: role_forbidden'],
    ['vic', 'sign_in', null, 'ok'],
    ['ana', 'sign_in', null, 'ok'],
    ['(unknown)', 'sign_in', null, 'failed'],
  ]);
  t.match(entries[2], {
    client: /127\.0\.0\.1/,
    detail: { usd: '2.5', note: 'invoice 77' },
    time: /^\d{4}-\d\d-\d\dT/,
  });
  t.match(entries[10], { actor: 'ana', action: 'sign_in', outcome: 'failed', detail: { via: 'form' } });
  const text = JSON.stringify(entries);
  for (const secret of [ADMIN_PASSWORD, VIEWER_PASSWORD, 'not-her-password', c.token, created.key])
    t.notOk(text.includes(secret), `no ${secret.slice(0, 8)}… in the trail`);
  const older = await sessionCall(c.adminUrl, vic, `/admin/audit?limit=2&before=${entries[1]?.id}`);
  t.same(older.body.entries.map(pick), entries.slice(2, 4).map(pick), 'paged back by id');

  await c.removeOperator('vic');
  t.equal((await sessionCall(c.adminUrl, vic, '/admin/wallets')).status, 401, "a removed operator's session ends");
}
