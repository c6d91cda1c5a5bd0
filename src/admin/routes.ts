// The admin listener's routes (a port apart from the public API, src/server/admin-app.ts):
//   GET /health/live    200 while the process runs
//   GET /health/ready   200 when ready to take traffic, else 503; both with the readiness report
//   GET /metrics        Prometheus text exposition (404 when metrics are off)
// Anything else is a 404. Answers are never cached.
import type { Reply } from '../http/reply.ts';
import type { BodyDelivery, Handler, IncomingRequest } from '../http/request.ts';
import type { Lifecycle } from '../observe/lifecycle.ts';
import { readiness, type ServingView } from './readiness.ts';

/** The metrics exposition the /metrics route serves. */
export interface MetricsSource {
  readonly contentType: string;
  render(): Promise<string>;
}

export interface AdminDeps {
  lifecycle: Lifecycle;
  /** The running gateway, or null while it is still starting. */
  serving(): ServingView | null;
  metrics: MetricsSource | null;
}

export interface AdminRoute {
  method: 'get' | 'post' | 'any';
  pattern: string;
  /** How the body is delivered (default: not read). */
  body?: BodyDelivery;
  maxBodyBytes?: number;
  handler: Handler;
}

export const ADMIN_PATHS = ['/health/live', '/health/ready', '/metrics'] as const;

const NO_STORE: [string, string] = ['Cache-Control', 'no-store'];

export function adminRoutes(deps: AdminDeps): AdminRoute[] {
  const live: Handler = (_req: IncomingRequest, reply: Reply) => {
    reply.sendJson(200, { status: 'live', state: deps.lifecycle.state }, [NO_STORE]);
  };
  const ready: Handler = (_req, reply) => {
    const report = readiness(deps.lifecycle, deps.serving());
    reply.sendJson(report.status === 'ready' ? 200 : 503, report, [NO_STORE]);
  };
  const metrics: Handler = async (_req, reply) => {
    if (!deps.metrics) {
      reply.sendJson(
        404,
        { error: { code: 'not_found', message: 'metrics are off on this gateway (serve --metrics on turns them on)' } },
        [NO_STORE],
      );
      return;
    }
    const text = await deps.metrics.render();
    reply.send(200, [['Content-Type', deps.metrics.contentType], NO_STORE], text);
  };
  const unknown: Handler = (_req, reply) => {
    // The error shape of every other JSON error, with the paths this listener serves beside it.
    reply.sendJson(
      404,
      {
        error: {
          code: 'not_found',
          message: `no such path on the admin listener; it serves ${ADMIN_PATHS.join(', ')}`,
        },
        paths: ADMIN_PATHS,
      },
      [NO_STORE],
    );
  };
  return [
    { method: 'get', pattern: '/health/live', handler: live },
    { method: 'get', pattern: '/health/ready', handler: ready },
    { method: 'get', pattern: '/metrics', handler: metrics },
    { method: 'any', pattern: '/*', handler: unknown },
  ];
}
