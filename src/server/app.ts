// The route table: one line per endpoint of the public API (docs/api.md lists them, and
// test/docs/api-reference.test.ts holds that list to this table). Inference paths come from the
// endpoint vocabulary (each with its protocol module), token counting sits beside Messages; anything
// not listed answers the "unserved path" error, in the error shape of the protocol whose path it
// falls under (the path prefix decides: `/v1/messages…` answers in the Messages envelope).
import type { GatewayContext } from '../api/context.ts';
import { catalogHandlers } from '../api/catalog.ts';
import { countTokensHandler } from '../api/count-tokens.ts';
import { inferenceHandler } from '../api/inference.ts';
import { type GatewayError, modelRequired } from '../errors.ts';
import { countTokens } from '../protocols/count-tokens.ts';
import { protocolFor } from '../protocols/index.ts';
import type { ProtocolModule } from '../protocols/types.ts';
import { createHttpServer, type HttpServer, type RouteDef } from './http-server.ts';
import { preflight } from './preflight.ts';

export function createApp(ctx: GatewayContext): HttpServer {
  return createHttpServer(publicRoutes(ctx), {
    // Read per chunk: a reload changes it for bodies already arriving.
    bodyBytesInTransit: () => ctx.settings.limits.maxBodyBytesInTransit,
    onBodyBudgetSpent: budgetLog(ctx),
    onUnexpectedError: (err, traceId) =>
      ctx.log('unexpected_error', {
        trace_id: traceId,
        error: err instanceof Error ? (err.stack ?? err.message) : String(err),
      }),
  });
}

/** Runs `fn` after `ms` without keeping the process alive (tests pass their own). */
type Later = (fn: () => void, ms: number) => void;
const realLater: Later = (fn, ms) => setTimeout(fn, ms).unref();

/** One `body_budget_spent` line a second at most, counting the refusals since the last: a flood of
 *  uploads must not become a flood of log lines. Refusals after a line are written once its second
 *  is over (`later`), not left to the next refusal. */
export function budgetLog(
  ctx: Pick<GatewayContext, 'clock' | 'log' | 'settings'>,
  later: Later = realLater,
): () => void {
  let refused = 0;
  let lastAt = Number.NEGATIVE_INFINITY;
  let pending = false;
  const write = (): void => {
    pending = false;
    if (refused === 0) return;
    ctx.log('body_budget_spent', { refused, limit_bytes: ctx.settings.limits.maxBodyBytesInTransit });
    lastAt = ctx.clock.now();
    refused = 0;
  };
  return () => {
    refused++;
    const wait = lastAt + 1000 - ctx.clock.now();
    if (wait <= 0) write();
    else if (!pending) {
      pending = true;
      later(write, wait);
    }
  };
}

/** Every route of the public listener, in registration order (the first that matches answers). */
export function publicRoutes(ctx: GatewayContext): RouteDef[] {
  const catalog = catalogHandlers(ctx);
  const routes: RouteDef[] = [
    { method: 'get', pattern: '/v1/models', handler: catalog.list },
    { method: 'get', pattern: '/v1/models/:vendor/:model', handler: catalog.model },
    { method: 'get', pattern: '/v1/models/:vendor/:model/endpoints', handler: catalog.endpoints },
    // Any other GET under /v1/models/ (a bare name, extra or missing segments, a trailing slash)
    // names no catalog model: the catalog's 404, not the unserved-path 400.
    { method: 'get', pattern: '/v1/models/*', handler: catalog.unknown },
    { method: 'options', pattern: '/*', handler: preflight },
  ];
  for (const e of ctx.index.config.vocabularies.endpoints) {
    const protocol = protocolFor(e.id);
    if (!protocol) continue;
    // The protocol module says whether this endpoint's body is read whole or streamed through.
    const delivery = protocol.bodyDelivery(e.id);
    routes.push({
      method: 'post',
      pattern: e.path,
      body: delivery,
      // Read per request: a reload may change the caps (the route table itself is fixed at start).
      maxBodyBytes:
        delivery === 'stream' ? () => ctx.settings.limits.maxUploadBytes : () => ctx.settings.limits.maxBodyBytes,
      ...errorShape(protocol),
      handler: inferenceHandler(ctx, e.id, protocol),
    });
    if (e.id === 'messages') {
      routes.push({
        method: 'post',
        pattern: `${e.path}/count_tokens`,
        body: 'buffer',
        maxBodyBytes: () => ctx.settings.limits.maxBodyBytes,
        ...errorShape(countTokens),
        handler: countTokensHandler(ctx),
      });
    }
    // Unserved paths at and under a protocol's path (GET /v1/messages, POST /v1/messages/batches)
    // answer the unserved-path 400 in that protocol's error shape, which its SDKs read.
    if (protocol.errorBody) {
      for (const pattern of [e.path, `${e.path}/*`])
        routes.push({ method: 'any', pattern, ...errorShape(protocol), handler: unserved });
    }
  }
  // Unserved paths (POST /v1/embeddings, GET /v1/responses/{id}, anything else): the API's 400.
  routes.push({ method: 'any', pattern: '/*', handler: unserved });
  return routes;
}

const unserved: RouteDef['handler'] = (_req, reply) => reply.sendError(modelRequired());

/** The route's error body when the protocol's SDKs need their own envelope (absent: the API's). */
function errorShape(protocol: ProtocolModule): Pick<RouteDef, 'errorBody'> {
  return protocol.errorBody ? { errorBody: (err: GatewayError) => protocol.errorBody?.(err) ?? err.toBody() } : {};
}
