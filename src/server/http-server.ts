// Generic uWS plumbing, the transport behind src/http/: registers routes, copies the request
// synchronously (an HttpRequest is only valid during the callback), reads bodies with a size cap or
// as a backpressured stream, and turns any handler failure into a 500 error object. Knows nothing
// about what the routes do.
import uWS from './uws.ts';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { BodyDelivery, Handler, IncomingRequest } from '../http/request.ts';
import { GatewayError } from '../errors.ts';
import { BodyBudget, budgetSpent } from './body-budget.ts';
import { streamBody } from './body-stream.ts';
import { type InTransit, readBody, restIsBounded } from './read-body.ts';
import { type RequestCoding, requestCoding } from './request-coding.ts';
import { framingProblem } from './request-framing.ts';
import { newTraceId } from './trace-id.ts';
import { ADMIN_BLOCK, PUBLIC_BLOCK, type ReplyDrainState, UwsReply } from './uws-reply.ts';

export interface RouteDef {
  method: 'get' | 'post' | 'options' | 'del' | 'put' | 'patch' | 'head' | 'any';
  pattern: string;
  /** How the body is delivered; default 'none' (not read). */
  body?: BodyDelivery;
  /** Cap for 'buffer' and 'stream' bodies, read per request; exceeding it answers 413 `request_too_large`. */
  maxBodyBytes?: number | (() => number);
  /** The JSON body of a gateway-raised error on this route (default: the API's error object). */
  errorBody?: (err: GatewayError) => unknown;
  handler: Handler;
}

export interface HttpServer {
  /**
   * Binds exclusively: a port another process (or another gateway) listens on is refused, not shared.
   * `shared`: binds with SO_REUSEPORT beside the other serving threads of this process (`serve
   * --workers N`, whose coordinator first checked the port is free with an exclusive bind); the
   * kernel spreads new connections over the threads.
   */
  listen(host: string, port: number, opts?: { shared?: boolean }): Promise<number>;
  /** Bytes of request bodies arriving now, counted against `bodyBytesInTransit` (0 without one). */
  bodyBytesInTransit(): number;
  /**
   * The start of a graceful drain: the listening socket closes (new connections are refused by the
   * kernel), open connections stay, and every answer from now on carries `Connection: close`, so a
   * client that sends another request on a kept-alive connection is answered and then disconnected.
   */
  stopAccepting(): void;
  /** Closes the listening socket and every connection. */
  close(): void;
}

export interface HttpServerOptions {
  /** Reports unexpected handler failures (never request bodies or credentials). */
  onUnexpectedError?: (err: unknown, traceId: string) => void;
  /** The headers on every answer: the public API's (CORS and security, the default) or the admin
   *  listener's (security only: no CORS, so no other origin's page reads or probes it). */
  headers?: 'public' | 'admin';
  /** Bytes of request bodies this server holds while they arrive (BodyBudget; read per chunk).
   *  Absent: no budget beyond each body's own cap. */
  bodyBytesInTransit?: () => number;
  /** A body still arriving was refused because the bodies in transit passed their budget. */
  onBodyBudgetSpent?: () => void;
}

/** uWS's listen with options; this build takes (host, port, options, cb), which its types omit. */
type ListenWithOptions = (
  host: string,
  port: number,
  options: number,
  cb: (socket: us_listen_socket | false) => void,
) => TemplatedApp;

/** Its value is exported at run time (1); the types declare only the enum. */
const LISTEN_EXCLUSIVE_PORT = (uWS as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;

/**
 * `app.listen` binding exclusively (or sharing the port with this process's other threads when
 * `shared`). Without the flag this uWS build binds a port another process already listens on
 * (SO_REUSEPORT), and the kernel splits the traffic between the two.
 */
export function listenApp(
  app: TemplatedApp,
  host: string,
  port: number,
  shared: boolean,
  cb: (socket: us_listen_socket | false) => void,
): void {
  (app.listen.bind(app) as unknown as ListenWithOptions)(host, port, shared ? 0 : LISTEN_EXCLUSIVE_PORT, cb);
}

export function createHttpServer(routes: RouteDef[], opts: HttpServerOptions = {}): HttpServer {
  const app: TemplatedApp = uWS.App();
  // Shared with every reply: once draining, answers carry Connection: close.
  const drain: ReplyDrainState = { closing: false };
  const fixed = opts.headers === 'admin' ? ADMIN_BLOCK : PUBLIC_BLOCK;
  const bodies = opts.bodyBytesInTransit ? new BodyBudget(opts.bodyBytesInTransit) : null;
  for (const route of routes) {
    const paramCount = (route.pattern.match(/\/:/g) ?? []).length;
    app[route.method](route.pattern, (res: HttpResponse, req: HttpRequest) => {
      const traceId = newTraceId();
      const method = req.getCaseSensitiveMethod();
      const incoming = copyRequest(req, paramCount, method, res);
      const reply = new UwsReply(res, traceId, {
        headOnly: incoming.method === 'HEAD',
        drain,
        fixed,
        ...(route.errorBody ? { errorBody: route.errorBody } : {}),
      });
      const refused = framingProblem(incoming, method);
      if (refused !== null) {
        // Nothing of this request is read, and its connection is not trusted with another one.
        reply.closeAfterAnswer();
        reply.sendError(new GatewayError('invalid_request', `malformed request: ${refused}`));
        return;
      }
      dispatch(route, incoming, res, reply, opts, bodies);
    });
  }

  let listenSocket: us_listen_socket | null = null;
  const closeListener = (): void => {
    if (listenSocket) uWS.us_listen_socket_close(listenSocket);
    listenSocket = null;
  };
  return {
    listen(host, port, listenOpts) {
      return new Promise((resolve, reject) => {
        listenApp(app, host, port, listenOpts?.shared === true, (socket) => {
          if (!socket) {
            reject(
              new Error(
                `cannot listen on ${host}:${port}: the port is in use (by another process or another gateway) or the address is not available`,
              ),
            );
            return;
          }
          listenSocket = socket;
          resolve(uWS.us_socket_local_port(socket as unknown as uWS.us_socket));
        });
      });
    },
    bodyBytesInTransit() {
      return bodies?.bytes ?? 0;
    },
    stopAccepting() {
      drain.closing = true;
      closeListener();
    },
    close() {
      drain.closing = true;
      closeListener();
      (app as TemplatedApp & { close?: () => void }).close?.();
    },
  };
}

function copyRequest(req: HttpRequest, paramCount: number, method: string, res: HttpResponse): IncomingRequest {
  // Values are kept as bytes, one character per byte: forwarded unchanged, and decoded to text only
  // where text is needed (src/http/header-text.ts headerText). getHeader returns those bytes, but only
  // a header's first value; forEach returns every value, decoded as UTF-8 (an invalid byte becomes
  // U+FFFD). An ASCII value reads the same both ways, so getHeader is asked only for a first value
  // with a byte above 0x7f (one native call per header saved on the usual request), and the later
  // values of a repeated header are turned back into their UTF-8 bytes (exact for valid UTF-8; an
  // invalid byte stays the replacement character's three bytes). Never a character above 0xff.
  const headers: Record<string, string> = {};
  let later = null as Map<string, string[]> | null;
  let nonAscii = null as string[] | null;
  req.forEach((k, v) => {
    if (headers[k] === undefined) {
      headers[k] = v;
      if (NON_ASCII.test(v)) (nonAscii ??= []).push(k);
      return;
    }
    later ??= new Map();
    const values = later.get(k);
    if (values) values.push(v);
    else later.set(k, [v]);
  });
  if (nonAscii !== null) for (const k of nonAscii) headers[k] = req.getHeader(k);
  if (later !== null) for (const [k, values] of later) headers[k] = [headers[k], ...values.map(utf8Bytes)].join(', ');
  const params: string[] = [];
  for (let i = 0; i < paramCount; i++) params.push(req.getParameter(i) ?? '');
  return {
    method: method.toUpperCase(),
    path: req.getUrl(),
    query: req.getQuery() ?? '',
    headers,
    params,
    body: EMPTY,
    bodyStream: null,
    startedAt: performance.now(),
    remoteAddress: Buffer.from(res.getRemoteAddressAsText()).toString('latin1'),
    bodyBytes: 0,
  };
}

const EMPTY = Buffer.alloc(0);
/** A character outside ASCII: the header's bytes were not all below 0x80. */
const NON_ASCII = /[\u0080-\uffff]/;

/** A value forEach decoded from UTF-8, back as its bytes (one character per byte). */
function utf8Bytes(v: string): string {
  return NON_ASCII.test(v) ? Buffer.from(v, 'utf8').toString('latin1') : v;
}

function dispatch(
  route: RouteDef,
  req: IncomingRequest,
  res: HttpResponse,
  reply: UwsReply,
  opts: HttpServerOptions,
  bodies: BodyBudget | null,
): void {
  const mode = route.body ?? 'none';
  const cap =
    typeof route.maxBodyBytes === 'function' ? route.maxBodyBytes() : (route.maxBodyBytes ?? Number.MAX_SAFE_INTEGER);
  const declared = req.headers['content-length'] === undefined ? null : Number(req.headers['content-length']);
  if (mode !== 'none' && declared !== null && declared > cap) {
    // Nothing of it is read: with no onData consumer uWS drops the rest itself, keeping the
    // connection in step, as long as the rest is bounded; past that the connection is closed.
    if (!restIsBounded(declared, cap)) reply.closeAfterAnswer();
    tooLarge(reply, cap);
    return;
  }
  let coding: RequestCoding | null = null;
  try {
    if (mode !== 'none') coding = requestCoding(req.headers['content-encoding']);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    // A body the gateway cannot decode is not read either (dropped by uWS, as above).
    if (!restIsBounded(declared, cap)) reply.closeAfterAnswer();
    reply.sendError(err);
    return;
  }
  if (mode === 'buffer') {
    const transit: InTransit | null =
      bodies === null
        ? null
        : {
            gate: bodies,
            spent: () => {
              opts.onBodyBudgetSpent?.();
              if (!reply.done && !reply.started) reply.sendError(budgetSpent());
            },
          };
    const reader = readBody(
      res,
      cap,
      declared,
      () => reply.done,
      (body) => {
        req.body = body;
        req.bodyBytes = body.byteLength;
        run(route.handler, req, reply, opts);
      },
      () => tooLarge(reply, cap),
      coding === null ? undefined : { coding, corrupt: (err) => reply.sendError(err) },
      transit,
    );
    // An answer before the body is whole (the 413) ends the reading; so does the client leaving.
    reply.onFinishing(() => {
      if (!reader.release()) reply.closeAfterAnswer();
    });
    reply.onAborted(() => reader.abandon());
    return;
  }
  if (mode === 'stream') {
    // Not counted against the budget: a streamed body is handed to its handler, which checks the key
    // before it reads, and the server buffers at most the stream's high-water mark of it meanwhile
    // (the socket is paused) — while a refusal mid-forward would fail an admitted upload.
    req.bodyStream = streamBody(res, reply, cap, declared, () => tooLarge(reply, cap), req, coding);
  }
  run(route.handler, req, reply, opts);
}

function run(handler: Handler, req: IncomingRequest, reply: UwsReply, opts: HttpServerOptions): void {
  const fail = (err: unknown) => {
    // Once a stream has started, no error object can be sent any more (sendError would silently do
    // nothing and leave the client waiting on an open response): drop the connection instead.
    if (err instanceof GatewayError && !reply.started) {
      reply.sendError(err);
      return;
    }
    opts.onUnexpectedError?.(err, reply.traceId);
    if (!reply.started)
      reply.sendError(new GatewayError('internal_error', 'internal error; quote the X-Pi-Trace-Id when reporting'));
    else reply.close();
  };
  try {
    const out = handler(req, reply);
    if (out && typeof (out as Promise<void>).then === 'function') (out as Promise<void>).catch(fail);
  } catch (err) {
    fail(err);
  }
}

function tooLarge(reply: UwsReply, cap: number): void {
  reply.sendError(new GatewayError('request_too_large', `request body is larger than the ${cap}-byte limit`));
}
