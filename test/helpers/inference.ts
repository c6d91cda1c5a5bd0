// Shared helpers for the HTTP suites under test/spec/ (inference, routing, settlement, SDKs): request
// bodies, SSE parsing, the last request the simulator received, a spy on the gateway's upstream client
// (pause/resume/abort), a raw node:http client that can read slowly, and a hand-written upstream for
// what the simulator cannot show (when exactly an upstream connection closes, how an upload arrives).
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RecordedRequest } from '../../src/simulator/server.ts';
import type { LedgerDetails } from '../../src/store/types.ts';
import type { UpstreamCall, UpstreamControl, UpstreamSink } from '../../src/upstream/client.ts';
import type { Stack } from './stack.ts';
export { logRow, USER, waitFor } from './admission.ts';

export interface TapLike {
  teardown(fn: () => unknown): void;
}

/** The JSON body of the n-th most recent simulator request (1 = last). */
export function simBody(stack: Stack, fromEnd = 1): Record<string, unknown> {
  const r = stack.sim.requests[stack.sim.requests.length - fromEnd];
  if (!r) throw new Error(`the simulator has no request #-${fromEnd} (it has ${stack.sim.requests.length})`);
  return r.body as Record<string, unknown>;
}

export function lastSim(stack: Stack): RecordedRequest {
  const r = stack.sim.requests.at(-1);
  if (!r) throw new Error('the simulator received no request');
  return r;
}

export interface SseEvent {
  event: string | null;
  data: string;
}

/** Splits an SSE text into events (blank-line separated, LF or CRLF). */
export function parseSse(text: string): SseEvent[] {
  const out: SseEvent[] = [];
  for (const block of text.replace(/\r\n/g, '\n').split('\n\n')) {
    if (block.trim() === '') continue;
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trimStart();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    out.push({ event, data: data.join('\n') });
  }
  return out;
}

/** JSON data of every event that has JSON data (skips [DONE] and comments). */
export function sseJson(text: string): Record<string, unknown>[] {
  return parseSse(text)
    .filter((e) => e.data !== '' && e.data !== '[DONE]')
    .map((e) => JSON.parse(e.data) as Record<string, unknown>);
}

/** Header names the spec allows from a provider (rule 3) plus what the gateway and HTTP add itself. */
export const GATEWAY_HEADERS = new Set([
  'x-pi-trace-id',
  'x-pi-provider',
  'x-pi-model',
  'x-pi-upstream-model',
  'x-pi-upstream-request-id',
  'access-control-allow-origin',
  'access-control-expose-headers',
  'x-content-type-options',
  'x-frame-options',
  'referrer-policy',
  'content-security-policy',
  'permissions-policy',
  'strict-transport-security',
  'content-type',
  'content-length',
  'content-encoding',
  'cache-control',
  'retry-after',
  'date',
  'uwebsockets',
  'transfer-encoding',
  'connection',
  'keep-alive',
]);

export function headerNames(res: Response): string[] {
  return [...res.headers.keys()].map((k) => k.toLowerCase());
}

export interface UpstreamSpy {
  calls: UpstreamCall[];
  pauses: number;
  resumes: number;
  aborts: { at: number; reason: string }[];
  /** performance.now() of every data chunk the gateway received from the upstream. */
  dataAt: number[];
  /** performance.now() of every end marker (`data: [DONE]`, `event: message_stop`,
   *  `event: response.completed`) in what the gateway received from the upstream: the answer is
   *  over from there, whether or not the relay has written it on yet. */
  endMarkerAt: number[];
  restore(): void;
}

const END_MARKERS = ['data: [DONE]', 'event: message_stop', 'event: response.completed'];
const END_MARKER_CARRY = Math.max(...END_MARKERS.map((m) => m.length)) - 1;

/** Wraps the gateway's upstream client to count what the relay does to the upstream read. */
export function spyUpstream(stack: Stack): UpstreamSpy {
  const client = stack.gw.ctx.client;
  const original = client.call.bind(client);
  const spy: UpstreamSpy = {
    calls: [],
    pauses: 0,
    resumes: 0,
    aborts: [],
    dataAt: [],
    endMarkerAt: [],
    restore() {
      client.call = original;
    },
  };
  client.call = (call: UpstreamCall, sink: UpstreamSink): UpstreamControl => {
    spy.calls.push(call);
    // The last bytes of the previous chunk: a marker may be split between two chunks.
    let carry = Buffer.alloc(0);
    const wrapped: UpstreamSink = {
      onHead: (s, h) => sink.onHead(s, h),
      onData: (c) => {
        const at = performance.now();
        spy.dataAt.push(at);
        const seen = Buffer.concat([carry, c]);
        if (END_MARKERS.some((m) => seen.includes(m))) spy.endMarkerAt.push(at);
        carry = Buffer.from(seen.subarray(-END_MARKER_CARRY));
        sink.onData(c);
      },
      onEnd: () => sink.onEnd(),
      onError: (e) => sink.onError(e),
    };
    const ctrl = original(call, wrapped);
    return {
      abort(reason) {
        spy.aborts.push({ at: performance.now(), reason: reason?.message ?? '' });
        ctrl.abort(reason);
      },
      pause() {
        spy.pauses++;
        ctrl.pause();
      },
      resume() {
        spy.resumes++;
        ctrl.resume();
      },
    };
  };
  return spy;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  res: IncomingMessage;
}

/** A node:http POST whose response is handed over unread (the caller decides how fast to read). */
export function rawPost(url: string, body: string | Buffer, headers: Record<string, string>): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { 'content-length': String(Buffer.byteLength(body)), ...headers }, agent: false },
      (res) => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, res });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export interface HandUpstream {
  url: string;
  server: Server;
  /** Every request seen, with timestamps of its arrival, body chunks and close. */
  seen: {
    path: string;
    headers: IncomingMessage['headers'];
    chunks: { at: number; bytes: number }[];
    closedAt: number | null;
    body: Buffer[];
  }[];
}

/** A plain node:http upstream whose handler the test writes (records arrival, body chunks, close). */
export async function handUpstream(
  t: TapLike,
  handler: (req: IncomingMessage, res: ServerResponse, index: number) => void,
): Promise<HandUpstream> {
  const up: HandUpstream = { url: '', server: createServer(), seen: [] };
  up.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const entry = {
      path: req.url ?? '',
      headers: req.headers,
      chunks: [] as { at: number; bytes: number }[],
      closedAt: null as number | null,
      body: [] as Buffer[],
    };
    const index = up.seen.push(entry) - 1;
    req.on('data', (c: Buffer) => {
      entry.chunks.push({ at: performance.now(), bytes: c.length });
      entry.body.push(c);
    });
    res.on('close', () => {
      entry.closedAt = performance.now();
    });
    handler(req, res, index);
  });
  await new Promise<void>((r) => up.server.listen(0, '127.0.0.1', r));
  up.url = `http://127.0.0.1:${(up.server.address() as AddressInfo).port}`;
  t.teardown(
    () =>
      new Promise<void>((r) => {
        up.server.closeAllConnections();
        up.server.close(() => r());
      }),
  );
  return up;
}

export interface WalletSpy {
  holds: Map<string, bigint>;
  settles: Map<string, { cost: bigint; details: LedgerDetails }>;
  releases: Set<string>;
}

/** Records every hold, settle and release the gateway asks of its wallet book. */
export function spyWallet(stack: Stack): WalletSpy {
  const w = stack.gw.ctx.wallets;
  const spy: WalletSpy = { holds: new Map(), settles: new Map(), releases: new Set() };
  const hold = w.hold.bind(w);
  const settle = w.settle.bind(w);
  const release = w.release.bind(w);
  w.hold = (ws, traceId, amount) => {
    spy.holds.set(traceId, amount);
    return hold(ws, traceId, amount);
  };
  w.settle = (traceId, cost, details) => {
    spy.settles.set(traceId, { cost, details });
    return settle(traceId, cost, details);
  };
  w.release = (traceId) => {
    spy.releases.add(traceId);
    release(traceId);
  };
  return spy;
}
