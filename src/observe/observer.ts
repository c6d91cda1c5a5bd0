// The observer seam of an inference request: the handler (src/api/inference.ts) tells every observer
// when a request begins, what its body asked for, each upstream attempt's start and end, and the
// finished request once, on every path. The request-log writer, the access log, metrics and traces
// (src/telemetry/) are observers; the handler knows none of them. Observers run on the request path:
// they keep their work per call small and never throw into the handler (combineObservers contains
// a failing one).
import type { IncomingRequest } from '../http/request.ts';
import type { RequestLogRow } from './request-row.ts';

/** One upstream attempt as it starts (from the route plan). */
export interface AttemptStart {
  /** 0 for the first attempt of the request, then 1, 2… (failovers). */
  index: number;
  /** Platform id of the deployment (the API's `provider`). */
  provider: string;
  /** The model slug this attempt serves. */
  model: string;
  deployment: string;
  /** The provider's model id the request is sent with. */
  upstreamModel: string;
}

/** How one upstream attempt ended. */
export interface AttemptEnd {
  /** As the failover loop describes it: `ok`, `status_<code>`, `committed_<why>`, or the failure reason. */
  outcome: string;
  /** Upstream HTTP status; null when none was received. */
  status: number | null;
  /** From dispatch to the attempt's end (unrounded milliseconds). */
  ms: number;
  /** From dispatch to the provider's first answer byte; null when none came. */
  firstByteMs: number | null;
  /** The model the provider reported answering with (X-Pi-Upstream-Model), when it said. */
  responseModel: string | null;
  /** Token counts the provider reported on this attempt's answer, when it did. */
  inputTokens: number | null;
  outputTokens: number | null;
}

/** What an observer adds to one attempt's upstream request, and hears when it ends. */
export interface AttemptWatch {
  /** Headers to add to the upstream request (the W3C `traceparent` of the attempt's span), or null. */
  readonly headers: Readonly<Record<string, string>> | null;
  finish(end: AttemptEnd): void;
}

/** The attempts side of a request watch: what the failover loop (src/proxy/) calls. */
export interface AttemptObserver {
  attempt(start: AttemptStart): AttemptWatch;
}

/** The finished request: its request-log row plus what only observers need. */
export interface RequestSummary {
  /** The request-log row (status, ids, models, timings rounded to ms, tokens, cost, how it ended). */
  readonly row: RequestLogRow;
  /** Arrival to end, unrounded milliseconds (`row.latency_ms` is this rounded). */
  readonly durationMs: number;
  /** The model id the request was routed to (bounded by the config, unlike `row.model_requested`,
   *  which is whatever the client sent); null when routing did not succeed. */
  readonly routedModel: string | null;
  /** The model the answering provider reported (X-Pi-Upstream-Model), when it said. */
  readonly upstreamModel: string | null;
  /** The charge was cut: a provider's usage priced above what the request could have cost (`bound`),
   *  or the gateway's estimate above the hold (`hold`); absent or null when it was not. */
  readonly usageCapped?: 'bound' | 'hold' | null;
  /** Body bytes received from the client (what was read of it). */
  readonly requestBytes: number;
  /** Body bytes of the answer handed to the client's connection. */
  readonly responseBytes: number;
}

/** One request as one observer follows it. */
export interface RequestWatch extends AttemptObserver {
  /** The body was read: whether the answer is asked as a stream, and the model asked for. */
  read(stream: boolean, model: string | null): void;
  /** The request is over; called exactly once, whatever path it took. */
  end(summary: RequestSummary): void;
}

export interface RequestObserver {
  /** A request reached an inference endpoint (`endpoint` is the vocabulary id). `traceId` is its
   *  X-Pi-Trace-Id; `req` is read only during this call (headers for trace context). */
  begin(endpoint: string, traceId: string, req: IncomingRequest): RequestWatch;
}

const NO_HEADERS = null;

/** An attempt watch that does nothing (observers with no per-attempt work return it). */
export const IGNORED_ATTEMPT: AttemptWatch = { headers: NO_HEADERS, finish: () => undefined };

/**
 * One observer made of several, called in order. A throwing observer is reported through `onError`
 * and skipped; the others and the request go on. Headers of several attempt watches are merged.
 */
export function combineObservers(
  observers: readonly RequestObserver[],
  onError: (err: unknown) => void,
): RequestObserver {
  const list = [...observers];
  return {
    begin(endpoint, traceId, req) {
      const watches: RequestWatch[] = [];
      for (const o of list) {
        try {
          watches.push(o.begin(endpoint, traceId, req));
        } catch (err) {
          onError(err);
        }
      }
      return new CombinedWatch(watches, onError);
    },
  };
}

class CombinedWatch implements RequestWatch {
  private readonly watches: RequestWatch[];
  private readonly onError: (err: unknown) => void;
  constructor(watches: RequestWatch[], onError: (err: unknown) => void) {
    this.watches = watches;
    this.onError = onError;
  }

  read(stream: boolean, model: string | null): void {
    for (const w of this.watches) {
      try {
        w.read(stream, model);
      } catch (err) {
        this.onError(err);
      }
    }
  }

  attempt(start: AttemptStart): AttemptWatch {
    const parts: AttemptWatch[] = [];
    let headers: Record<string, string> | null = null;
    for (const w of this.watches) {
      try {
        const a = w.attempt(start);
        if (a === IGNORED_ATTEMPT) continue;
        parts.push(a);
        if (a.headers) headers = { ...(headers ?? {}), ...a.headers };
      } catch (err) {
        this.onError(err);
      }
    }
    if (parts.length === 0) return IGNORED_ATTEMPT;
    const onError = this.onError;
    return {
      headers,
      finish(end) {
        for (const p of parts) {
          try {
            p.finish(end);
          } catch (err) {
            onError(err);
          }
        }
      },
    };
  }

  end(summary: RequestSummary): void {
    for (const w of this.watches) {
      try {
        w.end(summary);
      } catch (err) {
        this.onError(err);
      }
    }
  }
}
