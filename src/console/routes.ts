// The console's routes on the admin listener (src/server/admin-app.ts):
//   GET  /console, /console/login, /console/session, /console/assets/:file; POST /console/login,
//        /console/logout                                   (./session-routes.ts)
//   GET  /admin/requests              the request log: filters, newest first, `before` cursor, `since` tail
//   GET  /admin/requests/:trace       one request: attempts, tokens, cost, ledger rows
//   GET  /admin/spend, /admin/spend.csv   cost and tokens by workspace, model, provider, day
//   GET  /admin/spend/series, /admin/spend/keys   series over time; spend and last use per key
//   GET  /admin/warnings              wallets below their threshold, keys about to expire
//   GET  /admin/wallets, /admin/wallets/:ws; POST /admin/wallets/:ws/credit
//   GET  /admin/keys; POST /admin/keys, /admin/keys/:id/revoke, /admin/keys/:id/expiry
//   GET  /admin/health; POST /admin/route-preview; GET /admin/meta
//   GET  /admin/audit                 the audit trail, newest first (./audit.ts)
//   POST /admin/reload                re-read the config directory, as SIGHUP does (./reload.ts)
// Every /admin/ route needs the operator token (bearer header) or a console session (./gate.ts);
// a session's POSTs carry the page's secret, a viewer's writes are refused (403 role_forbidden), and
// every write enters the audit trail with its outcome. Without an operator token all of it answers
// 404 saying how to turn it on.
import type { OperatorView } from '../admin/operator-view.ts';
import type { AdminRoute } from '../admin/routes.ts';
import type { Reply } from '../http/reply.ts';
import type { IncomingRequest } from '../http/request.ts';
import type { Lifecycle } from '../observe/lifecycle.ts';
import { maskWholeKeys } from '../store/key-format.ts';
import { auditPage } from './audit.ts';
import { cookieNameFor } from './auth.ts';
import { type Access, type AuditFact, ConsoleGate, type ConsoleLog } from './gate.ts';
import { healthReport } from './health.ts';
import {
  auditedSegment,
  ConsoleError,
  jsonBody,
  NO_STORE,
  notFound,
  pathSegment,
  queryOf,
  SHOWN_PREFIX_CHARS,
  sendError,
  sendJson,
} from './http.ts';
import { createKey, listKeys, revokeKey, setKeyExpiry } from './keys.ts';
import { metaReport } from './meta.ts';
import { offPage } from './pages.ts';
import { listRequests, requestDetail } from './requests.ts';
import { routePreview } from './route-preview.ts';
import { HTML, sessionRoutes, storeDown } from './session-routes.ts';
import type { SignInLimits } from './sign-in-limits.ts';
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
  /** The admin listener's port (0 until it listens): it names the session cookie. */
  port(): number;
  /** Failed and refused sign-ins, and an audit trail that could not be written. */
  log?: ConsoleLog;
  limits?: SignInLimits;
}

const MAX_BODY = 64 * 1024;

/** Reads or changes the store (asynchronously: it may be PostgreSQL) and returns the answer. */
type JsonHandler = (view: OperatorView, req: IncomingRequest) => unknown;

/** What a write's audit entry says: its action, target and detail, from the request and its answer. */
type Audited = (req: IncomingRequest, answer: unknown) => Omit<AuditFact, 'actor' | 'outcome'>;

const param = (req: IncomingRequest): string => pathSegment(req.params[0] ?? '');

/** A write's audit target: the segment, also when the write is refused for it (./http.ts). */
const target = (req: IncomingRequest): string => auditedSegment(req.params[0] ?? '');

/** Fields of a write's body worth keeping in the trail (never a key or a secret), and `extra`, as JSON. */
function bodyDetail(req: IncomingRequest, fields: string[], extra: Record<string, unknown> = {}): string | null {
  let body: Record<string, unknown>;
  try {
    body = jsonBody(req);
  } catch {
    return null;
  }
  // Long client strings are cut: the trail says what was done, the store holds the whole value. A
  // whole key in one (the write is refused for it) is kept by its prefix only.
  const cut = (v: unknown): unknown => {
    if (typeof v !== 'string') return v;
    // Masked before it is cut: a key across the cut would no longer be whole, and would be kept.
    const masked = maskWholeKeys(v, SHOWN_PREFIX_CHARS);
    return masked.length > 200 ? `${masked.slice(0, 200)}…` : masked;
  };
  const kept = {
    ...Object.fromEntries(fields.filter((f) => body[f] !== undefined).map((f) => [f, cut(body[f])])),
    ...extra,
  };
  return Object.keys(kept).length === 0 ? null : JSON.stringify(kept);
}

const answerField = (answer: unknown, name: string): unknown =>
  typeof answer === 'object' && answer !== null ? (answer as Record<string, unknown>)[name] : undefined;

export function consoleRoutes(deps: ConsoleDeps): AdminRoute[] {
  if (deps.token === null || deps.token === '') return offRoutes();
  const gate = new ConsoleGate({
    token: deps.token,
    view: deps.view,
    cookieName: () => cookieNameFor(deps.port()),
    log: deps.log ?? (() => undefined),
    ...(deps.limits ? { limits: deps.limits } : {}),
  });

  /** An authenticated JSON endpoint over the store: 503 before the gateway attached. */
  const api = (
    method: 'get' | 'post',
    pattern: string,
    fn: JsonHandler,
    audited: Audited | null = null,
    access: Access = method === 'get' ? 'read' : 'write',
  ): AdminRoute => ({
    method,
    pattern,
    ...(method === 'post' ? { body: 'buffer' as const, maxBodyBytes: MAX_BODY } : {}),
    handler: (req, reply) =>
      guarded(gate, req, reply, access, audited, async () => {
        const view = deps.view();
        if (!view) {
          if (deps.attached())
            throw new ConsoleError(503, 'console_unavailable', 'this gateway has no store for the console to read');
          throw new ConsoleError(503, 'starting', 'the gateway is still starting');
        }
        const answer: unknown = await fn(view, req);
        return { status: method === 'post' && pattern === '/admin/keys' ? 201 : 200, answer };
      }),
  });

  const routes: AdminRoute[] = [
    ...sessionRoutes(gate),
    api('get', '/admin/requests', (v, req) => listRequests(v, queryOf(req))),
    api('get', '/admin/requests/:trace', (v, req) => requestDetail(v, param(req))),
    api('get', '/admin/spend', (v, req) => spendReport(v, queryOf(req))),
    api('get', '/admin/spend.csv', (v, req) => spendCsv(v, queryOf(req))),
    api('get', '/admin/spend/series', (v, req) => spendSeriesReport(v, queryOf(req))),
    api('get', '/admin/spend/keys', (v, req) => keySpendReport(v, queryOf(req))),
    api('get', '/admin/warnings', (v, req) => warningsReport(v, queryOf(req))),
    api('get', '/admin/wallets', (v) => listWallets(v)),
    api('get', '/admin/wallets/:ws', (v, req) => walletDetail(v, param(req), queryOf(req))),
    api(
      'post',
      '/admin/wallets/:ws/credit',
      (v, req) => creditWallet(v, param(req), jsonBody(req), req.headers['idempotency-key']),
      // A repeat an idempotency key answered credited nothing: the trail says so, as the ledger does.
      (req, answer) => ({
        action: 'wallet.credit',
        target: target(req),
        detail: bodyDetail(req, ['usd', 'note'], answerField(answer, 'replayed') === true ? { replayed: true } : {}),
      }),
    ),
    api('get', '/admin/keys', (v, req) => listKeys(v, queryOf(req))),
    api(
      'post',
      '/admin/keys',
      (v, req) => createKey(v, jsonBody(req)),
      (req, answer) => {
        const id = answerField(answer, 'id');
        return {
          action: 'key.create',
          target: typeof id === 'string' ? id : null,
          detail: bodyDetail(req, ['workspace', 'name', 'expires_at', 'rpm']),
        };
      },
    ),
    api(
      'post',
      '/admin/keys/:id/revoke',
      (v, req) => revokeKey(v, param(req)),
      (req) => ({ action: 'key.revoke', target: target(req), detail: null }),
    ),
    api(
      'post',
      '/admin/keys/:id/expiry',
      (v, req) => setKeyExpiry(v, param(req), jsonBody(req)),
      (req) => ({ action: 'key.expiry', target: target(req), detail: bodyDetail(req, ['expires_at']) }),
    ),
    api('get', '/admin/health', (v) => healthReport(v, deps.lifecycle)),
    api('post', '/admin/route-preview', (v, req) => routePreview(v, jsonBody(req)), null, 'read-post'),
    api('get', '/admin/meta', (v) => metaReport(v)),
    api('get', '/admin/audit', (v, req) => auditPage(v, queryOf(req))),
    {
      // Needs no store: a gateway without the console's store reloads all the same.
      method: 'post',
      pattern: '/admin/reload',
      body: 'buffer',
      maxBodyBytes: 4096,
      handler: (req, reply) =>
        guarded(
          gate,
          req,
          reply,
          'write',
          (_req, answer) => ({
            action: 'config.reload',
            target: null,
            detail:
              answer === null
                ? null
                : JSON.stringify({ ok: answerField(answer, 'ok'), hash: answerField(answer, 'hash') }),
          }),
          async () => {
            const answer = await reloadConfig(deps.lifecycle, deps.reloader(), deps.attached());
            return { status: answer.ok ? 200 : 422, answer };
          },
        ),
    },
  ];
  return [...routes, ...fallbackRoutes(gate, routes)];
}

/**
 * After the admin endpoints (uWebSockets.js tries a method's own routes before `any`): a method an
 * admin path does not take is a 405 with Allow, any other /admin/ path a 404 — both the console's
 * JSON error, after the same credentials check as every admin call (no path is confirmed to a
 * caller without them).
 */
function fallbackRoutes(gate: ConsoleGate, routes: readonly AdminRoute[]): AdminRoute[] {
  const allowed = new Map<string, string[]>();
  for (const r of routes)
    if (r.pattern.startsWith('/admin/') && r.method !== 'any')
      allowed.set(r.pattern, [...(allowed.get(r.pattern) ?? []), r.method.toUpperCase()].sort());
  const refuse = (err: ConsoleError): AdminRoute['handler'] => {
    return (req, reply) =>
      guarded(gate, req, reply, 'read', null, async () => {
        throw err;
      });
  };
  return [
    ...[...allowed].map(([pattern, methods]) => ({
      method: 'any' as const,
      pattern,
      handler: refuse(
        new ConsoleError(405, 'method_not_allowed', `${pattern} takes ${methods.join(' or ')}; use that`, null, [
          ['Allow', methods.join(', ')],
        ]),
      ),
    })),
    { method: 'any', pattern: '/admin/*', handler: refuse(notFound('no such admin endpoint')) },
  ];
}

/** Runs an authorized request: 401/429 without valid credentials, 403 for a refused write (recorded). */
async function guarded(
  gate: ConsoleGate,
  req: IncomingRequest,
  reply: Reply,
  access: Access,
  audited: Audited | null,
  run: () => Promise<{ status: number; answer: unknown }>,
): Promise<void> {
  try {
    const actor = await gate.authorize(req, access);
    try {
      gate.permit(actor, access);
      const { status, answer } = await run();
      if (audited) await gate.record(req, { ...audited(req, answer), actor: actor.name, outcome: 'ok' });
      send(reply, status, answer);
    } catch (err) {
      const code = err instanceof ConsoleError ? err.code : err instanceof RangeError ? 'invalid_request' : null;
      if (audited && code !== null)
        await gate.record(req, { ...audited(req, null), actor: actor.name, outcome: `refused: ${code}` });
      throw err;
    }
  } catch (err) {
    if (err instanceof ConsoleError) sendError(reply, err);
    else if (err instanceof RangeError) sendError(reply, new ConsoleError(400, 'invalid_request', err.message));
    else if (storeDown(err)) sendError(reply, new ConsoleError(503, 'store_unavailable', (err as Error).message));
    else throw err;
  }
}

function send(reply: Reply, status: number, answer: unknown): void {
  if (typeof answer === 'string')
    reply.send(
      status,
      [
        ['Content-Type', 'text/csv; charset=utf-8'],
        ['Content-Disposition', 'attachment; filename="spend.csv"'],
        NO_STORE,
      ],
      answer,
    );
  else sendJson(reply, status, answer);
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
