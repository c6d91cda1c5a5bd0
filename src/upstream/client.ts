// The only place that talks to upstreams: one undici Agent (keep-alive pools per origin) and a
// dispatch with the controller API, so the relay can pause the upstream read while the client is
// slow and abort it the moment the client goes away. Timeouts are the caller's (first content event,
// stream idle), so undici's own header/body timeouts are off.
import type { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { type FormPostAnswer, postForm } from './form-post.ts';

export interface UpstreamCall {
  url: string;
  headers: Record<string, string>;
  body: string | Buffer | Readable;
}

/** Receives one upstream exchange. Exactly one of onEnd / onError ends it, unless the caller aborts it first (then neither). */
export interface UpstreamSink {
  onHead(status: number, headers: Record<string, string>): void;
  onData(chunk: Buffer): void;
  onEnd(): void;
  onError(err: Error): void;
}

export interface UpstreamControl {
  abort(reason?: Error): void;
  pause(): void;
  resume(): void;
}

export interface UpstreamClientOptions {
  /** TCP/TLS connect timeout, ms. */
  connectTimeoutMs?: number;
  /** Idle keep-alive sockets are closed after this, ms. */
  keepAliveTimeoutMs?: number;
  /** Max sockets per origin (undefined = unlimited). */
  connectionsPerOrigin?: number;
}

/** undici refused the call before starting it (it threw, or reported an error, inside `dispatch`): a
 *  header or body the gateway built, never anything the provider did. */
export class DispatchRefused extends Error {
  constructor(cause: unknown) {
    super(`the gateway could not send the request: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'DispatchRefused';
  }
}

/** Distinct upstream URLs remembered parsed (deployments × endpoints; Vertex and Bedrock put the model in the path). */
const URL_CACHE_MAX = 1024;

export class UpstreamClient {
  private readonly agent: Agent;

  constructor(opts: UpstreamClientOptions = {}) {
    this.agent = new Agent({
      connect: { timeout: opts.connectTimeoutMs ?? 10_000 },
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
    let controller: Dispatcher.DispatchController | null = null;
    let pendingAbort: Error | null = null;
    let pausedEarly = false;
    let finished = false;
    /** Inside agent.dispatch, before the request started: an error now is undici refusing the call. */
    let dispatching = true;
    const end = () => {
      finished = true;
    };

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(ctrl) {
        controller = ctrl;
        if (pendingAbort) ctrl.abort(pendingAbort);
        else if (pausedEarly) ctrl.pause();
      },
      onResponseStart(_ctrl, statusCode, headers) {
        sink.onHead(statusCode, flattenHeaders(headers));
      },
      onResponseData(_ctrl, chunk) {
        sink.onData(chunk);
      },
      onResponseEnd() {
        if (finished) return;
        end();
        sink.onEnd();
      },
      onResponseError(_ctrl, err) {
        if (finished) return;
        end();
        sink.onError(dispatching && controller === null ? new DispatchRefused(err) : err);
      },
    };

    try {
      this.agent.dispatch(
        {
          origin: url.origin,
          path: url.path,
          method: 'POST',
          headers: call.headers,
          body: call.body,
        },
        handler,
      );
    } catch (err) {
      if (!finished) {
        end();
        sink.onError(new DispatchRefused(err));
      }
    } finally {
      dispatching = false;
    }

    return {
      abort(reason) {
        if (finished) return;
        // The caller ends the exchange and already knows why: undici reports the abort back through
        // onResponseError synchronously, which would re-enter the caller with a misleading "reset".
        end();
        const err = reason ?? new Error('aborted');
        if (controller) controller.abort(err);
        else pendingAbort = err;
      },
      pause() {
        if (controller) controller.pause();
        else pausedEarly = true;
      },
      resume() {
        pausedEarly = false;
        controller?.resume();
      },
    };
  }

  /** A form POST answered whole (OAuth token endpoints), on the same keep-alive pools. */
  postForm(url: string, form: Record<string, string>): Promise<FormPostAnswer> {
    return postForm(this.agent, url, form);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /** Drop every connection now (tests, shutdown after a grace period). */
  async destroy(): Promise<void> {
    await this.agent.destroy();
  }
}

function flattenHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in h) {
    const v = h[k];
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}
