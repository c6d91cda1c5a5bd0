// The console's pages and its session: GET /console (the console, or the sign-in form without a
// session), GET /console/login (the form), POST /console/login (an account's name and password, or
// the operator token alone), GET /console/session (the session's secret, handed to the page once),
// POST /console/logout (a write like any other: it needs the secret), GET /console/assets/:file.
import type { AdminRoute } from '../admin/routes.ts';
import type { Reply } from '../http/reply.ts';
import type { IncomingRequest } from '../http/request.ts';
import { StoreError } from '../store/errors.ts';
import { SESSION_IDLE_MS } from './auth.ts';
import type { ConsoleGate } from './gate.ts';
import { ConsoleError, NO_STORE, sendError, sendJson } from './http.ts';
import { ASSETS, asset, CONSOLE_CSP, loginPage, notBuiltPage, shellPage } from './pages.ts';

export const HTML: [string, string][] = [
  ['Content-Type', 'text/html; charset=utf-8'],
  NO_STORE,
  ['Content-Security-Policy', CONSOLE_CSP],
];

/** PostgreSQL did not answer (src/store/postgres/db.ts; matched by name so this file never loads `pg`). */
export const storeDown = (err: unknown): boolean => err instanceof StoreError && err.name === 'StoreUnavailableError';

/** Behind a TLS proxy (X-Forwarded-Proto: https) the cookie is marked Secure. */
function secureRequest(req: IncomingRequest): boolean {
  return (req.headers['x-forwarded-proto'] ?? '').toLowerCase() === 'https';
}

export function sessionRoutes(gate: ConsoleGate): AdminRoute[] {
  const auth = gate.auth;
  const shell = (req: IncomingRequest, reply: Reply): void => {
    const session = auth.session(req);
    if (session === null) reply.send(200, HTML, loginPage(null));
    else if (asset('app.js') === null) reply.send(503, HTML, notBuiltPage());
    else reply.send(200, HTML, shellPage(session.tag));
  };
  const login = async (req: IncomingRequest, reply: Reply): Promise<void> => {
    const form = new URLSearchParams(req.body.toString('utf8'));
    const name = (form.get('name') ?? '').trim();
    let actor: Awaited<ReturnType<ConsoleGate['signIn']>>;
    try {
      actor = await gate.signIn(req, name, form.get('token') ?? '');
    } catch (err) {
      if (err instanceof ConsoleError && err.retryAfterS !== null)
        reply.send(429, [...HTML, ['Retry-After', String(err.retryAfterS)]], loginPage(`${err.message}.`));
      else if (storeDown(err)) reply.send(503, HTML, loginPage('The database does not answer; try again shortly.'));
      else throw err;
      return;
    }
    if (actor === null) {
      const message = name === '' ? 'That is not the operator token.' : 'Wrong name or password.';
      reply.send(401, HTML, loginPage(message));
      return;
    }
    const id = auth.open(actor);
    reply.send(303, [['Location', '/console'], ['Set-Cookie', auth.sessionCookie(id, secureRequest(req))], NO_STORE]);
  };
  // The page asks once, right after signing in, with a header no cross-origin page can send
  // without a CORS preflight (which this listener never grants).
  const handOver = (req: IncomingRequest, reply: Reply): void => {
    if (req.headers['x-pi-console'] !== '1') {
      sendError(reply, new ConsoleError(403, 'forbidden', 'the console page asks with X-Pi-Console: 1'));
      return;
    }
    const got = auth.handOver(req);
    if (got === null) {
      sendError(
        reply,
        new ConsoleError(
          401,
          'sign_in_again',
          'no session, or its secret was already handed to a page (which keeps it): sign in again',
        ),
      );
      return;
    }
    sendJson(reply, 200, {
      secret: got.secret,
      tag: got.session.tag,
      operator: got.session.actor,
      expires_at: new Date(got.session.expiresAt).toISOString(),
      idle_timeout_s: SESSION_IDLE_MS / 1000,
    });
  };
  const logout = async (req: IncomingRequest, reply: Reply): Promise<void> => {
    try {
      const actor = await gate.authorize(req, 'read-post');
      await gate.record(req, { actor: actor.name, action: 'sign_out', target: null, outcome: 'ok', detail: null });
    } catch (err) {
      if (err instanceof ConsoleError) return sendError(reply, err);
      if (storeDown(err)) return sendError(reply, new ConsoleError(503, 'store_unavailable', (err as Error).message));
      throw err;
    }
    auth.logout(req);
    sendJson(reply, 200, { signed_out: true }, [['Set-Cookie', auth.clearedCookie()]]);
  };
  return [
    { method: 'get', pattern: '/console', handler: shell },
    { method: 'get', pattern: '/console/', handler: shell },
    { method: 'get', pattern: '/console/login', handler: (_req, reply) => reply.send(200, HTML, loginPage(null)) },
    { method: 'post', pattern: '/console/login', body: 'buffer', maxBodyBytes: 4096, handler: login },
    { method: 'get', pattern: '/console/session', handler: handOver },
    { method: 'post', pattern: '/console/logout', body: 'buffer', maxBodyBytes: 1024, handler: logout },
    { method: 'get', pattern: '/console/assets/:file', handler: serveAsset },
  ];
}

function serveAsset(req: IncomingRequest, reply: Reply): void {
  const name = req.params[0] ?? '';
  const type = ASSETS[name];
  const data = type === undefined ? null : asset(name);
  if (type === undefined || data === null) {
    reply.send(404, [['Content-Type', 'text/plain; charset=utf-8'], NO_STORE], 'not found');
    return;
  }
  reply.send(
    200,
    [
      ['Content-Type', type],
      ['Cache-Control', 'no-cache'],
    ],
    data,
  );
}
