// The only place that talks to upstreams: one undici Agent (keep-alive pools per origin, every
// connection guarded: ./connection-guard.ts) and one Exchange per call (./exchange.ts), so the relay
// can pause the upstream read while the client is slow and abort it the moment the client goes away.
// Timeouts are the caller's (first content event, stream idle), so undici's own header/body timeouts
// are off.
import type { Readable } from 'node:stream';
import { Agent } from 'undici';
import { guardedConnector } from './connection-guard.ts';
import { Exchange, type UpstreamControl, type UpstreamSink } from './exchange.ts';
import { FORM_POST_LIMITS, type FormPostAnswer, postForm } from './form-post.ts';

export interface UpstreamCall {
  url: string;
  headers: Record<string, string>;
  body: string | Buffer | Readable;
}

export type { UpstreamControl, UpstreamSink } from './exchange.ts';
export { DispatchRefused } from './exchange.ts';

export interface UpstreamClientOptions {
  /** TCP/TLS connect timeout, ms. */
  connectTimeoutMs?: number;
  /** Idle keep-alive sockets are closed after this, ms. */
  keepAliveTimeoutMs?: number;
  /** Max sockets per origin (undefined = unlimited). */
  connectionsPerOrigin?: number;
}

/** Distinct upstream URLs remembered parsed (deployments × endpoints; Vertex and Bedrock put the model in the
 *  path). */
const URL_CACHE_MAX = 1024;

export class UpstreamClient {
  private readonly agent: Agent;

  constructor(opts: UpstreamClientOptions = {}) {
    this.agent = new Agent({
      connect: guardedConnector({ timeout: opts.connectTimeoutMs ?? 10_000 }),
      keepAliveTimeout: opts.keepAliveTimeoutMs ?? 30_000,
      keepAliveMaxTimeout: 600_000,
      headersTimeout: 0,
      bodyTimeout: 0,
      pipelining: 1,
      ...(opts.connectionsPerOrigin ? { connections: opts.connectionsPerOrigin } : {}),
    });
  }

  /** Origin and path of each URL called: a deployment's URL is the same on every call, and parsing
   *  it each time showed in the profile. Bounded: cleared when it grows past URL_CACHE_MAX. */
  private readonly parsed = new Map<string, { origin: string; path: string }>();

  private parts(href: string): { origin: string; path: string } {
    let p = this.parsed.get(href);
    if (p === undefined) {
      const url = new URL(href);
      p = { origin: url.origin, path: url.pathname + url.search };
      if (this.parsed.size >= URL_CACHE_MAX) this.parsed.clear();
      this.parsed.set(href, p);
    }
    return p;
  }

  call(call: UpstreamCall, sink: UpstreamSink): UpstreamControl {
    const url = this.parts(call.url);
    const exchange = new Exchange(sink);
    const body = call.body;
    if (typeof body !== 'string' && !Buffer.isBuffer(body)) body.once('end', () => exchange.requestSent());
    exchange.dispatching = true;
    try {
      this.agent.dispatch(
        { origin: url.origin, path: url.path, method: 'POST', headers: call.headers, body: call.body },
        exchange,
      );
    } catch (err) {
      exchange.refused(err);
    } finally {
      exchange.dispatching = false;
    }
    return exchange;
  }

  /** A form POST answered whole (OAuth token endpoints), on the same keep-alive pools, within
   *  `timeoutMs` (connection included; default FORM_POST_LIMITS'). */
  postForm(url: string, form: Record<string, string>, timeoutMs?: number): Promise<FormPostAnswer> {
    return postForm(
      this.agent,
      url,
      form,
      timeoutMs === undefined ? FORM_POST_LIMITS : { ...FORM_POST_LIMITS, timeoutMs },
    );
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /** Drop every connection now (tests, shutdown after a grace period). */
  async destroy(): Promise<void> {
    await this.agent.destroy();
  }
}
