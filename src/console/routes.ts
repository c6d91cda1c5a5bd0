// The console's routes on the admin listener (src/server/admin-app.ts):
//   GET  /console                     the console (or its sign-in form); POST /console/login, /console/logout
//   GET  /console/assets/:file        the built bundle (console/dist/)
//   GET  /admin/requests              the request log: filters, newest first, `before` cursor, `since` tail
//   GET  /admin/requests/:trace       one request: attempts, tokens, cost, ledger rows
//   GET  /admin/spend, /admin/spend.csv   cost and tokens by workspace, model, provider, day
//   GET  /admin/spend/series, /admin/spend/keys   series over time; spend and last use per key
//   GET  /admin/warnings              wallets below their threshold, keys about to expire
//   GET  /admin/wallets, /admin/wallets/:ws; POST /admin/wallets/:ws/credit
//   GET  /admin/keys; POST /admin/keys, /admin/keys/:id/revoke, /admin/keys/:id/expiry
//   GET  /admin/health; POST /admin/route-preview; GET /admin/meta
//   POST /admin/reload                re-read the config directory, as SIGHUP does (./reload.ts)
// Every /admin/ route needs the operator token (bearer header) or a console session cookie; a
// cookie-authenticated POST must also carry `X-Pi-Console: 1` (a header no cross-site form can set).
// Without an operator token all of it answers 404 saying how to turn it on.
import type { OperatorView } from '../admin/operator-view.ts';
import type { AdminRoute } from '../admin/routes.ts';
import type { Reply } from '../http/reply.ts';
import type { IncomingRequest } from '../http/request.ts';
import type { Lifecycle } from '../observe/lifecycle.ts';
import { StoreError } from '../store/db.ts';
import { clearedCookie, OperatorAuth, sessionCookie } from './auth.ts';
import { healthReport } from './health.ts';
import { ConsoleError, jsonBody, NO_STORE, queryOf, sendError, sendJson } from './http.ts';
import { createKey, listKeys, revokeKey, setKeyExpiry } from './keys.ts';
import { metaReport } from './meta.ts';
import { ASSETS, asset, CONSOLE_CSP, loginPage, notBuiltPage, offPage, shellPage } from './pages.ts';
import { listRequests, requestDetail } from './requests.ts';
import { routePreview } from './route-preview.ts';
import { spendCsv, spendReport } from './spend.ts';
import { keySpendReport, spendSeriesReport } from './spend-series.ts';
import { type ConfigReloader, reloadConfig } from './reload.ts';
import { creditWallet, listWallets, walletDetail } from './wallets.ts';
import { warningsReport } from './warnings.ts';

export interface ConsoleDeps {
  /** PI_ADMIN_TOKEN; null: the console and the admin JSON endpoints are off. */
  token: string | null;
  lifecycle: Lifecycle;
  view(): OperatorView | null;
  /** True once a gateway attached itself (with or without a view for the console). */
  attached(): boolean;
  /** What POST /admin/reload runs; null while the process has not handed one over. */
  reloader(): ConfigReloader | null;
}

const MAX_BODY = 64 * 1024;
const HTML: [string, string][] = [
  ['Content-Type', 'text/html; charset=utf-8'],
  NO_STORE,
  ['Content-Security-Policy', CONSOLE_CSP],
];

/** Reads or changes the store (asynchronously: it may be PostgreSQL) and returns the answer. */
type JsonHandler = (view: OperatorView, req: IncomingRequest) => unknown;

export function consoleRoutes(deps: ConsoleDeps): AdminRoute[] {
  if (deps.token === null || deps.token === '') return offRoutes();
  const auth = new OperatorAuth(deps.token);

  /** An authenticated JSON endpoint: 401 without the token, 503 before the gateway attached. The
   *  store answers asynchronously (the embedded file at once, PostgreSQL over the network). */
  const api = (method: 'get' | 'post', pattern: string, fn: JsonHandler): AdminRoute => ({
    method,
    pattern,
    ...(method === 'post' ? { body: 'buffer' as const, maxBodyBytes: MAX_BODY } : {}),
    handler: async (req, reply) => {
      try {
        authorize(auth, req, method);
        const view = deps.view();
        if (!view) {
          if (deps.attached())
            throw new ConsoleError(503, 'console_unavailable', 'this gateway has no store for the console to read');
          throw new ConsoleError(503, 'starting', 'the gateway is still starting');
        }
        const out: unknown = await fn(view, req);
        if (typeof out === 'string')
          reply.send(
            200,
            [
              ['Content-Type', 'text/csv; charset=utf-8'],
              ['Content-Disposition', 'attachment; filename="spend.csv"'],
              NO_STORE,
            ],
            out,
          );
        else sendJson(reply, method === 'post' && pattern === '/admin/keys' ? 201 : 200, out);
      } catch (err) {
        if (err instanceof ConsoleError) sendError(reply, err);
        else if (err instanceof RangeError) sendError(reply, new ConsoleError(400, 'invalid_request', err.message));
        // PostgreSQL did not answer (src/store-pg/connection.ts; matched by name so this file never loads `pg`).
        else if (err instanceof StoreError && err.name === 'StoreUnavailableError')
          sendError(reply, new ConsoleError(503, 'store_unavailable', err.message));
        else throw err;
      }
    },
  });

  return [
    ...pageRoutes(auth),
    api('get', '/admin/requests', (v, req) => listRequests(v, queryOf(req))),
    api('get', '/admin/requests/:trace', (v, req) => requestDetail(v, decodeURIComponent(req.params[0] ?? ''))),
    api('get', '/admin/spend', (v, req) => spendReport(v, queryOf(req))),
    api('get', '/admin/spend.csv', (v, req) => spendCsv(v, queryOf(req))),
    api('get', '/admin/spend/series', (v, req) => spendSeriesReport(v, queryOf(req))),
    api('get', '/admin/spend/keys', (v, req) => keySpendReport(v, queryOf(req))),
    api('get', '/admin/warnings', (v, req) => warningsReport(v, queryOf(req))),
    api('get', '/admin/wallets', (v) => listWallets(v)),
    api('get', '/admin/wallets/:ws', (v, req) =>
      walletDetail(v, decodeURIComponent(req.params[0] ?? ''), queryOf(req)),
    ),
    api('post', '/admin/wallets/:ws/credit', (v, req) =>
      creditWallet(v, decodeURIComponent(req.params[0] ?? ''), jsonBody(req)),
    ),
    api('get', '/admin/keys', (v, req) => listKeys(v, queryOf(req))),
    api('post', '/admin/keys', (v, req) => createKey(v, jsonBody(req))),
    api('post', '/admin/keys/:id/revoke', (v, req) => revokeKey(v, decodeURIComponent(req.params[0] ?? ''))),
    api('post', '/admin/keys/:id/expiry', (v, req) =>
      setKeyExpiry(v, decodeURIComponent(req.params[0] ?? ''), jsonBody(req)),
    ),
    api('get', '/admin/health', (v) => healthReport(v, deps.lifecycle)),
    api('post', '/admin/route-preview', (v, req) => routePreview(v, jsonBody(req))),
    api('get', '/admin/meta', (v) => metaReport(v)),
    {
      // Needs no store: a gateway without the console's store reloads all the same.
      method: 'post',
      pattern: '/admin/reload',
      body: 'buffer',
      maxBodyBytes: 4096,
      handler: async (req, reply) => {
        try {
          authorize(auth, req, 'post');
          const answer = await reloadConfig(deps.lifecycle, deps.reloader(), deps.attached());
          sendJson(reply, answer.ok ? 200 : 422, answer);
        } catch (err) {
          if (err instanceof ConsoleError) sendError(reply, err);
          else throw err;
        }
      },
    },
    api('get', '/admin/*', () => {
      throw new ConsoleError(404, 'not_found', 'no such admin endpoint');
    }),
  ];
}

/** The operator token as a bearer header, or a console session (whose POSTs carry X-Pi-Console: 1). */
function authorize(auth: OperatorAuth, req: IncomingRequest, method: 'get' | 'post'): void {
  const how = auth.authenticated(req);
  if (how === null)
    throw new ConsoleError(
      401,
      'unauthorized',
      'send the operator token as Authorization: Bearer <PI_ADMIN_TOKEN>, or sign in at /console',
    );
  if (how === 'session' && method === 'post' && req.headers['x-pi-console'] !== '1')
    throw new ConsoleError(403, 'forbidden', 'a console request must carry X-Pi-Console: 1');
}

function secureRequest(req: IncomingRequest): boolean {
  return (req.headers['x-forwarded-proto'] ?? '').toLowerCase() === 'https';
}

function pageRoutes(auth: OperatorAuth): AdminRoute[] {
  const shell = (req: IncomingRequest, reply: Reply): void => {
    if (auth.authenticated(req) === null) reply.send(200, HTML, loginPage(null));
    else if (asset('app.js') === null) reply.send(503, HTML, notBuiltPage());
    else reply.send(200, HTML, shellPage());
  };
  return [
    { method: 'get', pattern: '/console', handler: shell },
    { method: 'get', pattern: '/console/', handler: shell },
    {
      method: 'post',
      pattern: '/console/login',
      body: 'buffer',
      maxBodyBytes: 4096,
      handler: (req, reply) => {
        const token = new URLSearchParams(req.body.toString('utf8')).get('token') ?? '';
        const id = auth.login(token);
        if (id === null) {
          reply.send(401, HTML, loginPage('That is not the operator token.'));
          return;
        }
        reply.send(303, [['Location', '/console'], ['Set-Cookie', sessionCookie(id, secureRequest(req))], NO_STORE]);
      },
    },
    {
      method: 'post',
      pattern: '/console/logout',
      handler: (req, reply) => {
        auth.logout(req);
        reply.send(303, [['Location', '/console'], ['Set-Cookie', clearedCookie()], NO_STORE]);
      },
    },
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

/** Without an operator token: the console and the admin JSON endpoints say how to turn them on. */
function offRoutes(): AdminRoute[] {
  const message =
    'the console and the admin JSON endpoints are off: start the gateway with PI_ADMIN_TOKEN set to turn them on';
  const page = (_req: IncomingRequest, reply: Reply): void => reply.send(404, HTML, offPage());
  return [
    { method: 'any', pattern: '/console', handler: page },
    { method: 'any', pattern: '/console/*', handler: page },
    {
      method: 'any',
      pattern: '/admin/*',
      handler: (_req, reply) => sendJson(reply, 404, { error: { code: 'console_off', message } }),
    },
  ];
}
