// The admin listener: health, readiness and metrics on their own port (127.0.0.1 unless told
// otherwise), so the public API's paths and answers stay exactly as the spec says and the operator's
// endpoints are never exposed where clients reach. It can start before the gateway it reports on
// (readiness then says "starting"); the gateway attaches itself once it is built. With an operator
// token it also serves the console (/console) and its admin JSON endpoints (/admin/…), src/console/,
// among them POST /admin/reload once the process hands over its reloader (`setReloader`).
import { adminRoutes, type MetricsSource } from '../admin/routes.ts';
import type { OperatorView } from '../admin/operator-view.ts';
import type { ServingView } from '../admin/readiness.ts';
import type { ConfigReloader } from '../console/reload.ts';
import { consoleRoutes } from '../console/routes.ts';
import type { Lifecycle } from '../observe/lifecycle.ts';
import { createHttpServer } from './http-server.ts';

export interface AdminListenerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  lifecycle: Lifecycle;
  metrics: MetricsSource | null;
  /** The operator token (PI_ADMIN_TOKEN): with it the console and the admin JSON endpoints are on,
   *  without it (null or absent) they answer 404 and only health and metrics are served. */
  token?: string | null;
  /** Failed and refused sign-ins and audit-trail failures (the console's operational log lines). */
  log?: (event: string, fields: Record<string, unknown>) => void;
  onUnexpectedError?: (err: unknown) => void;
}

export interface AdminListener {
  readonly port: number;
  readonly url: string;
  readonly lifecycle: Lifecycle;
  readonly metrics: MetricsSource | null;
  /** Readiness reads `serving` from now on, and the console `operator` (its store embedded or
   *  PostgreSQL; null: the gateway has no store for the console, which answers 503 saying so). */
  attach(serving: ServingView, operator: OperatorView | null): void;
  /** What POST /admin/reload runs (with the operator token): the process's own reload, the one
   *  SIGHUP runs; null takes it away (the route then answers 503). */
  setReloader(reloader: ConfigReloader | null): void;
  /** Stops listening. Idempotent. */
  close(): void;
}

export async function startAdminListener(opts: AdminListenerOptions): Promise<AdminListener> {
  let view: OperatorView | null = null;
  let serving: ServingView | null = null;
  let reloader: ConfigReloader | null = null;
  let port = 0;
  const operator = consoleRoutes({
    token: opts.token ?? null,
    lifecycle: opts.lifecycle,
    view: () => view,
    attached: () => serving !== null,
    reloader: () => reloader,
    port: () => port,
    ...(opts.log ? { log: opts.log } : {}),
  });
  const server = createHttpServer(
    // The console's routes first: the admin table ends with its catch-all 404.
    [...operator, ...adminRoutes({ lifecycle: opts.lifecycle, serving: () => serving, metrics: opts.metrics })],
    { headers: 'admin', ...(opts.onUnexpectedError ? { onUnexpectedError: opts.onUnexpectedError } : {}) },
  );
  port = await server.listen(opts.host, opts.port);
  let closed = false;
  return {
    port,
    url: `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`,
    lifecycle: opts.lifecycle,
    metrics: opts.metrics,
    attach(s, o) {
      serving = s;
      view = o;
    },
    setReloader(r) {
      reloader = r;
    },
    close() {
      if (closed) return;
      closed = true;
      server.close();
    },
  };
}
