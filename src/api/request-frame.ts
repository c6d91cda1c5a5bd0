// What every API request that reaches a provider shares, inference and token counting alike: the
// frame around it (its record, the in-flight count, the observers from its start to its end, the one
// place an error becomes the client's answer) and its first steps (the writer's back-pressure, the
// key and its workspace). Each handler's own steps run inside.
import type { Admitted, Identified } from '../admission/admission.ts';
import { GatewayError } from '../errors.ts';
import { headerText, sessionIdFrom } from '../http/header-text.ts';
import type { Reply } from '../http/reply.ts';
import type { IncomingRequest } from '../http/request.ts';
import type { RequestWatch } from '../observe/observer.ts';
import type { ConfigSnapshot } from './config-snapshot.ts';
import type { GatewayContext } from './context.ts';
import { newRequestRecord, type RequestRecord, requestSummary } from './request-record.ts';

/** A handler's own steps, on the config snapshot the request started on. */
export type RequestSteps = (
  cfg: ConfigSnapshot,
  req: IncomingRequest,
  reply: Reply,
  state: RequestRecord,
  watch: RequestWatch,
) => Promise<void>;

/** The uWS handler running `steps` in the frame; `atEnd` runs before the observers see the end. */
export function framedHandler(
  ctx: GatewayContext,
  endpoint: string,
  steps: RequestSteps,
  atEnd?: (state: RequestRecord) => void,
) {
  return async (req: IncomingRequest, reply: Reply): Promise<void> => {
    const state = newRequestRecord(endpoint, reply.traceId);
    // Read once: a reload during this request changes nothing for it (its routing, limits, upstream
    // calls and prices all come from this snapshot).
    const cfg = ctx.current;
    ctx.inFlight.enter();
    // Every observer (request log, access log, metrics, traces) follows the request from here.
    const watch = ctx.observer.begin(endpoint, reply.traceId, req);
    try {
      await steps(cfg, req, reply, state, watch);
    } catch (err) {
      let ge: GatewayError;
      if (err instanceof GatewayError) ge = err;
      else {
        ctx.log('request_failed', { trace_id: state.traceId, error: err instanceof Error ? err.message : String(err) });
        ge = new GatewayError('internal_error', 'internal error; quote the X-Pi-Trace-Id when reporting');
        state.ended = 'failed';
      }
      state.errorCode = ge.code;
      state.status = ge.status;
      if (!reply.started && !reply.done) reply.sendError(ge);
      else if (!reply.done) reply.close();
    } finally {
      try {
        atEnd?.(state);
        watch.end(requestSummary(req, state, ctx.clock.now(), reply.bytesSent));
      } finally {
        ctx.inFlight.leave();
      }
    }
  };
}

/**
 * The first steps: refused while the store's writer is behind (its bounded queue is full, so memory
 * stays bounded; requests already admitted still settle and log), then who is calling — a refused
 * key we issued (revoked, expired) is still logged as its workspace's. The workspace comes from
 * `cfg`, whatever a reload swaps in while the key is verified. Synchronous on the embedded store, a
 * promise on a shared one: a plain value is not awaited (each needless await is a microtask hop on
 * every request).
 */
export function admitCaller(
  ctx: GatewayContext,
  cfg: ConfigSnapshot,
  req: IncomingRequest,
  state: RequestRecord,
  now: number,
): Admitted | Promise<Admitted> {
  if (ctx.storeBehind()) {
    throw new GatewayError(
      'provider_unavailable',
      'the gateway is saving its ledger more slowly than requests arrive; retry shortly',
      { headers: [['Retry-After', '1']] },
    );
  }
  const synced = ctx.view.sync();
  if (synced instanceof Promise) return synced.then(() => identify(ctx, cfg, req, state, now));
  return identify(ctx, cfg, req, state, now);
}

function identify(
  ctx: GatewayContext,
  cfg: ConfigSnapshot,
  req: IncomingRequest,
  state: RequestRecord,
  now: number,
): Admitted | Promise<Admitted> {
  // Known before anything can be refused, so every log row of the session carries it.
  state.sessionId = sessionIdFrom(headerText(req.headers['x-pi-session-id']));
  const identified = ctx.admission.identify(req.headers, now, (id) => cfg.index.workspaceById.get(id));
  if (identified instanceof Promise) return identified.then((who) => admitted(who, state));
  return admitted(identified, state);
}

function admitted(who: Identified, state: RequestRecord): Admitted {
  if (!who.ok) {
    state.refusedKey = who.key;
    throw who.error;
  }
  state.admitted = who.admitted;
  return who.admitted;
}
