// `startSimulator`: an HTTP server (uWebSockets.js) that behaves like the upstream providers —
// OpenAI Chat Completions, Responses and Images, Anthropic Messages (plus the Azure and Vertex path
// forms), token counting (Anthropic, Vertex, Bedrock) — with scripted latency and faults, recording
// what it receives.
import uWS from '../server/uws.ts';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, us_socket } from 'uWebSockets.js';
import { type Clock, systemClock } from '../clock.ts';
import { type Behaviour, parseBehaviour } from './behaviour.ts';
import { listenApp } from '../server/http-server.ts';
import { readBody } from '../server/read-body.ts';
import { handleBedrock } from './bedrock.ts';
import { controlNeedsBody, controlReply } from './control.ts';
import { handleCount } from './count-tokens.ts';
import { Exchange } from './exchange.ts';
import { organizationId } from './ids.ts';
import { familyOf, handleInference } from './inference.ts';
import { type RecordedRequest, Recorder } from './recorder.ts';
import { classify } from './routes.ts';
import { ScriptBook } from './script-book.ts';
import { tokenEndpointOf, tokenReply } from './token-endpoints.ts';
import type { AwsSimKey } from './sigv4-verify.ts';
import type { RequestCopy, SimState } from './state.ts';
import { customErrorBody, errorBody } from './wire-errors.ts';
import { JSON_TYPE, providerHeaders, statusLine } from './wire-headers.ts';

export type { Behaviour } from './behaviour.ts';
export type { RecordedRequest } from './recorder.ts';
export type { AwsSimKey } from './sigv4-verify.ts';

export interface SimulatorOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** When set, inference requests must authenticate with it (Bearer, x-api-key or api-key) or get the wire's 401. */
  apiKey?: string;
  /** Default true: keep the last `maxRecorded` requests. */
  record?: boolean;
  /** Default 1000. */
  maxRecorded?: number;
  /** Time source for `created` fields and recording times. Default the system clock. */
  clock?: Clock;
  /** Largest request body accepted (413 beyond). Default 64 MiB. */
  maxBodyBytes?: number;
  /** AWS keys (access key id → secret, optional session token) Bedrock requests may be signed with. */
  awsKeys?: Record<string, AwsSimKey>;
  /** Service accounts (client_email → public key PEM) the Google token endpoint issues tokens to. */
  serviceAccounts?: Record<string, string>;
  /** Entra clients (client id → secret) the Entra token endpoint issues tokens to. */
  entraClients?: Record<string, string>;
  /** Lifetime of issued tokens, seconds (default 3600). */
  tokenLifetimeSec?: number;
}

export interface Simulator {
  port: number;
  /** http://HOST:PORT (127.0.0.1 when listening on every interface). */
  url: string;
  /** The recorded requests, oldest first (a live array). */
  requests: RecordedRequest[];
  /** Forgets recorded requests and scripted behaviours. */
  clear(): void;
  /** Applies `behaviour` to the next `times` requests for that upstream model id (default: until
   *  cleared); `token:google` and `token:entra` script the token endpoints (delay, reset, status). */
  script(upstreamModel: string, behaviour: Behaviour, times?: number): void;
  /** Resets every open connection and stops listening. */
  close(): Promise<void>;
}

function copyRequest(req: HttpRequest, clock: Clock): RequestCopy {
  const headers: Record<string, string> = {};
  req.forEach((k, v) => {
    const prev = headers[k];
    headers[k] = prev === undefined ? v : `${prev}, ${v}`;
  });
  return {
    method: req.getCaseSensitiveMethod().toUpperCase(),
    path: req.getUrl(),
    query: req.getQuery() ?? '',
    headers,
    startedAt: performance.now(),
    at: clock.now(),
  };
}

/** Answers synchronously inside the route callback (already corked, no onAborted needed). */
function answerNow(
  res: HttpResponse,
  status: number,
  body: string,
  headers: [string, string][] = [['content-type', JSON_TYPE]],
): void {
  res.writeStatus(statusLine(status));
  for (const [k, v] of headers) res.writeHeader(k, v);
  res.end(body);
}

/**
 * A token endpoint's answer, unless a behaviour is scripted for it (`sim.script('token:entra' or
 * 'token:google', …)`): `ttfbMs` delays the answer (a slow endpoint), `reset` drops the connection
 * (a down one), `status` with `errorBody` answers that instead of a token (a refusing one).
 */
function answerToken(state: SimState, ex: Exchange, kind: 'google' | 'entra', raw: Buffer): void {
  const b = state.scripts.take(`token:${kind}`) ?? {};
  ex.after(b.ttfbMs ?? 0, () => {
    if (b.reset !== undefined) return ex.reset();
    if (b.status !== undefined)
      return ex.sendWhole(
        b.status,
        [['content-type', JSON_TYPE]],
        b.errorBody === undefined ? '{"error":"invalid_client"}' : customErrorBody(b.errorBody),
      );
    const r = tokenReply(state, kind, raw);
    ex.sendWhole(r.status, [['content-type', JSON_TYPE]], r.body);
  });
}

function onRequest(state: SimState, res: HttpResponse, req: HttpRequest): void {
  const copy = copyRequest(req, state.clock);
  const token = copy.method === 'POST' ? tokenEndpointOf(copy.path) : null;
  if (token !== null) {
    const ex = new Exchange(res, state.live);
    readBody(
      res,
      state.maxBodyBytes,
      null,
      () => ex.done,
      (raw) => {
        state.recorder.add({
          method: copy.method,
          path: copy.path,
          query: copy.query,
          headers: copy.headers,
          body: null,
          rawBody: raw,
          at: copy.at,
        });
        answerToken(state, ex, token, raw);
      },
      () => ex.sendWhole(413, [['content-type', JSON_TYPE]], '{"error":"invalid_request"}'),
    );
    return;
  }
  const route = classify(copy.path);
  if (route === null || (route.kind !== 'control' && copy.method !== 'POST')) {
    const message = `Invalid URL (${copy.method} ${copy.path})`;
    answerNow(
      res,
      404,
      errorBody('openai', 404, '', null, { message, type: 'invalid_request_error', param: null, code: null }),
    );
    return;
  }
  if (route.kind === 'control') {
    if (!controlNeedsBody(copy.method, route.name)) {
      const r = controlReply(state, copy.method, route.name);
      answerNow(res, r.status, r.body);
      return;
    }
    const ex = new Exchange(res, state.live);
    readBody(
      res,
      state.maxBodyBytes,
      null,
      () => ex.done,
      (raw) => {
        const r = controlReply(state, copy.method, route.name, raw);
        ex.sendWhole(r.status, [['content-type', JSON_TYPE]], r.body);
      },
      () => ex.sendWhole(413, [['content-type', JSON_TYPE]], '{"error":{"message":"request body too large"}}'),
    );
    return;
  }
  const ex = new Exchange(res, state.live);
  if (route.kind === 'count') {
    readBody(
      res,
      state.maxBodyBytes,
      null,
      () => ex.done,
      (raw) => handleCount(state, ex, route, copy, raw),
      () => ex.sendWhole(413, [['content-type', JSON_TYPE]], '{"message":"request body too large"}'),
    );
    return;
  }
  readBody(
    res,
    state.maxBodyBytes,
    null,
    () => ex.done,
    (raw) =>
      route.form === 'bedrock'
        ? handleBedrock(state, ex, route, copy, raw)
        : handleInference(state, ex, route, copy, raw),
    () => {
      const family = familyOf(route);
      const headers = providerHeaders(family, JSON_TYPE, null, 0, state.organizationId);
      ex.sendWhole(
        413,
        headers,
        errorBody(family, 413, '', null, { message: `Request body exceeds ${state.maxBodyBytes} bytes.` }),
      );
    },
  );
}

export function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const host = opts.host ?? '127.0.0.1';
  const recorder = new Recorder(opts.record ?? true, opts.maxRecorded ?? 1000);
  const state: SimState = {
    recorder,
    scripts: new ScriptBook(),
    apiKey: opts.apiKey === '' ? undefined : opts.apiKey,
    clock: opts.clock ?? systemClock,
    organizationId: organizationId(),
    live: new Set(),
    maxBodyBytes: opts.maxBodyBytes ?? 64 * 1024 * 1024,
    awsKeys: new Map(Object.entries(opts.awsKeys ?? {})),
    tokens: {
      serviceAccounts: new Map(Object.entries(opts.serviceAccounts ?? {})),
      entraClients: new Map(Object.entries(opts.entraClients ?? {})),
      lifetimeSec: opts.tokenLifetimeSec ?? 3600,
      issued: new Map(),
    },
  };
  const app: TemplatedApp = uWS.App();
  app.any('/*', (res, req) => onRequest(state, res, req));

  return new Promise((resolve, reject) => {
    // Exclusive, like the gateway: a busy port is refused, never shared with whoever listens there.
    listenApp(app, host, opts.port ?? 0, false, (socket: us_listen_socket | false) => {
      if (!socket) {
        reject(
          new Error(
            `simulator: cannot listen on ${host}:${opts.port ?? 0}: the port is in use (by another process) or the address is not available`,
          ),
        );
        return;
      }
      const port = uWS.us_socket_local_port(socket as unknown as us_socket);
      const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
      let closed = false;
      resolve({
        port,
        url: `http://${urlHost}:${port}`,
        requests: recorder.requests,
        clear() {
          recorder.clear();
          state.scripts.clear();
        },
        script(upstreamModel, behaviour, times) {
          state.scripts.add(upstreamModel, parseBehaviour(behaviour, 'behaviour'), times);
        },
        async close() {
          if (closed) return;
          closed = true;
          for (const ex of [...state.live]) ex.destroy();
          uWS.us_listen_socket_close(socket);
          (app as TemplatedApp & { close?: () => void }).close?.();
        },
      });
    });
  });
}
