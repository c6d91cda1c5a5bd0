// Helpers for the console suites (test/console/): a stack with the admin listener and an operator
// token, admin JSON calls with the bearer token, and the known traffic the suites assert exact
// numbers on.
import type { Test } from 'tap';
import { startStack, type Stack, type StackOptions } from './stack.ts';
import { logRow, USER } from './admission.ts';

export const TOKEN = 'operator-token-for-tests-0123456789';
/** A prompt no admin answer may ever contain. */
export const PROMPT_MARK = 'PROMPT-MUST-NOT-LEAK-7f3a';

/** An admin API answer, parsed. */
// biome-ignore lint/suspicious/noExplicitAny: the assertions walk the JSON freely and tap checks its shape; a type per answer would restate the API in every test.
export type AdminBody = any;

export interface ConsoleStack extends Stack {
  adminUrl: string;
  /** An admin JSON call with the operator token (or `token`, null for none), parsed. */
  call(
    path: string,
    init?: { method?: string; body?: unknown; token?: string | null; headers?: Record<string, string> },
  ): Promise<{ status: number; body: AdminBody; text: string; headers: Headers }>;
}

export async function startConsoleStack(t: Test, opts: StackOptions = {}): Promise<ConsoleStack> {
  const s = await startStack(t, { admin: true, adminToken: TOKEN, ...opts });
  const adminUrl = (s.admin as NonNullable<Stack['admin']>).url;
  return Object.assign(s, { adminUrl, call: adminCaller(adminUrl) });
}

/** Admin JSON calls to this listener with the operator token (or `token`, null for none), parsed. */
export function adminCaller(adminUrl: string): ConsoleStack['call'] {
  return async (path, init = {}) => {
    const token = init.token === undefined ? TOKEN : init.token;
    const headers: Record<string, string> = { ...init.headers };
    if (token !== null) headers['authorization'] = `Bearer ${token}`;
    return adminFetch(adminUrl, path, headers, init);
  };
}

/** One chat request through the public API; waits for its request-log row. Returns the trace id. */
export async function chat(
  s: Stack,
  key: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ status: number; trace: string }> {
  const res = await s.post(
    '/v1/chat/completions',
    { messages: [{ role: 'user', content: PROMPT_MARK }], ...body },
    { key, headers },
  );
  await res.arrayBuffer();
  const trace = res.headers.get('x-pi-trace-id') as string;
  await logRow(s, trace);
  return { status: res.status, trace };
}

export interface KnownTraffic {
  openKey: string;
  cheapKey: string;
  /** Trace ids, oldest first. */
  traces: { small1: string; small2: string; missing: string; cheap: string };
}

/**
 * Workspace `open` ($100): two acme/chat-small requests on alpha, usage 1000 + 500 tokens each
 * ($0.002 each: 1000 × $1/M + 500 × $2/M), and one for a model that does not exist (404, rejected);
 * workspace `cheap` ($10): one acme/chat-small request (sort: price), usage 1000 + 500.
 */
export async function knownTraffic(s: Stack): Promise<KnownTraffic> {
  const openKey = s.key('open', { name: 'backend' });
  const cheapKey = s.key('cheap', { name: 'batch' });
  s.credit('open', '100');
  s.credit('cheap', '10');
  const usage = { prompt: 1000, completion: 500 };
  const small1 = await chat(
    s,
    openKey,
    { model: 'acme/chat-small', provider: { only: ['alpha'] }, sim: { usage } },
    { 'X-Title': 'Billing app', 'HTTP-Referer': 'https://billing.example.com/x' },
  );
  const small2 = await chat(s, openKey, { model: 'acme/chat-small', provider: { only: ['alpha'] }, sim: { usage } });
  const missing = await chat(s, openKey, { model: 'acme/no-such-model' });
  const cheap = await chat(s, cheapKey, { model: 'acme/chat-small', sim: { usage } });
  return {
    openKey,
    cheapKey,
    traces: { small1: small1.trace, small2: small2.trace, missing: missing.trace, cheap: cheap.trace },
  };
}

export { USER };

/** A console session as the page holds it: the cookie the browser keeps and the secret it fetched. */
export interface ConsoleSession {
  /** `name=value` of the session cookie, ready for a Cookie header. */
  cookie: string;
  /** The session's secret (X-Pi-Console-Secret), handed over once. */
  secret: string;
  operator: { name: string; role: string };
}

/** Posts the sign-in form (the token alone, or an account's name and password) without following the redirect. */
export function postLogin(adminUrl: string, fields: Record<string, string>): Promise<Response> {
  return fetch(`${adminUrl}/console/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
}

/** Signs in as the page does: the form, then the one hand-over of the session's secret. */
export async function openSession(
  adminUrl: string,
  fields: Record<string, string> = { token: TOKEN },
): Promise<ConsoleSession> {
  const res = await postLogin(adminUrl, fields);
  await res.arrayBuffer();
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const got = await fetch(`${adminUrl}/console/session`, { headers: { cookie, 'x-pi-console': '1' } });
  const body = (await got.json()) as { secret: string; operator: { name: string; role: string } };
  if (got.status !== 200) throw new Error(`the session hand-over answered ${got.status}`);
  return { cookie, secret: body.secret, operator: body.operator };
}

/** A JSON call with a console session: its cookie, and its secret unless `secret` says otherwise. */
export async function sessionCall(
  adminUrl: string,
  session: ConsoleSession,
  path: string,
  init: { method?: string; body?: unknown; secret?: string | null } = {},
): Promise<{ status: number; body: AdminBody }> {
  const headers: Record<string, string> = { cookie: session.cookie };
  const secret = init.secret === undefined ? session.secret : init.secret;
  if (secret !== null) headers['x-pi-console-secret'] = secret;
  const { status, body } = await adminFetch(adminUrl, path, headers, init);
  return { status, body };
}

/** One admin call with these credentials' headers: a JSON body when given (POST unless `method`
 *  says otherwise), the answer parsed when it is JSON (else `body` is null). */
async function adminFetch(
  adminUrl: string,
  path: string,
  headers: Record<string, string>,
  init: { method?: string; body?: unknown },
): Promise<{ status: number; body: unknown; text: string; headers: Headers }> {
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${adminUrl}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: res.status, body, text, headers: res.headers };
}

/** `n` audit entries by `ana`, each revoking `target-<i>`, oldest first: pages of the trail to walk. */
export async function revokeEntries(s: ConsoleStack, n: number): Promise<void> {
  for (let i = 0; i < n; i++)
    await s.store.audit.append({
      at: s.clock.now(),
      actor: 'ana',
      action: 'key.revoke',
      target: `target-${i}`,
      client: '::1',
      outcome: 'ok',
      detail: null,
    });
}
