// OpenTelemetry traces, exported over OTLP/HTTP: one SERVER span per inference request and one
// CLIENT span per upstream attempt under it, with the GenAI semantic-convention attributes
// (gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model, gen_ai.response.model,
// gen_ai.usage.input_tokens, gen_ai.usage.output_tokens, error.type). A client's W3C `traceparent`
// is continued (its trace id, its span as parent, its sampling flag and tracestate); each attempt
// sends the provider a `traceparent` naming the attempt's span. A request without one starts a trace
// whose id is its X-Pi-Trace-Id without dashes (src/observe/trace-context.ts).
//
// Loaded only when an OTLP endpoint is configured (src/telemetry/telemetry.ts imports this file
// dynamically), so a gateway without traces loads none of the SDK. Contexts are passed explicitly:
// no global context manager, no async hooks. Sampling and exporter headers follow the standard
// OTEL_* environment variables (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG,
// OTEL_EXPORTER_OTLP_HEADERS…); the default is parent-based, always on.
import {
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
} from '@opentelemetry/api';
import { setGlobalErrorHandler, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type IdGenerator, RandomIdGenerator, TracerProvider } from '@opentelemetry/sdk-trace';
import type { IncomingRequest } from '../http/request.ts';
import type {
  AttemptEnd,
  AttemptStart,
  AttemptWatch,
  RequestObserver,
  RequestSummary,
  RequestWatch,
} from '../observe/observer.ts';
import type { RequestEnd } from '../observe/request-end.ts';
import { traceIdOfRequestId } from '../observe/trace-context.ts';

export interface TracingOptions {
  /** Full URL of the OTLP/HTTP traces endpoint (…/v1/traces); null: the exporter reads
   *  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT itself. */
  url: string | null;
  serviceName: string;
  serviceVersion: string;
  /** Export delay of the batch processor (ms); the SDK default is 5000. */
  scheduledDelayMillis?: number;
  /** How long flush() and close() wait for the exporter before giving up (ms; default 2000): a
   *  collector that is down never holds up a shutdown. */
  flushTimeoutMs?: number;
  /** Timeout of one export request including its retries (ms): this, else
   *  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT / OTEL_EXPORTER_OTLP_TIMEOUT, and never more than the flush
   *  timeout (see exportTimeout). */
  exportTimeoutMs?: number;
  /** Export failures (at most one report a minute while they last). */
  onExportError?: (message: string) => void;
}

const DEFAULT_FLUSH_TIMEOUT_MS = 2000;
const EXPORT_ERROR_EVERY_MS = 60_000;

/**
 * One export's time, retries included: the one asked for (or the OTEL_* environment's), never more
 * than the flush timeout. The exporter's sockets and retry timers keep the process alive while an
 * export lasts, whoever stopped waiting for it: with its own default (10 s, retrying a collector that
 * refuses with back-off, holding a socket to one that never answers) a gateway whose collector was
 * down exited 8 to 10 s after SIGTERM, not the 2 s shutdown promises.
 */
export function exportTimeout(
  flushTimeoutMs: number,
  asked: number | undefined,
  env: NodeJS.ProcessEnv = process.env,
): number {
  const fromEnv = [env['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'], env['OTEL_EXPORTER_OTLP_TIMEOUT']]
    .map((v) => (v && /^\d+$/.test(v.trim()) ? Number(v) : NaN))
    .find((n) => n > 0);
  return Math.min(asked ?? fromEnv ?? flushTimeoutMs, flushTimeoutMs);
}

/** gen_ai.operation.name per endpoint id: the text protocols are chat; images generate content. */
const OPERATION: Record<string, string> = {
  chat_completions: 'chat',
  responses: 'chat',
  messages: 'chat',
  images_generations: 'generate_content',
  images_edits: 'generate_content',
};

/** Ends of a committed answer that did not reach its normal end for a reason other than the client. */
const CUT_ENDS: ReadonlySet<RequestEnd> = new Set<RequestEnd>([
  'upstream_cut',
  'idle_timeout',
  'write_stall',
  'drained',
]);

/** Longest model string (the client's) put on a span. */
const MAX_MODEL_CHARS = 200;

/**
 * Trace ids: random, except that the next root span may be given the id of its request (set just
 * before startSpan, taken by it synchronously, cleared right after).
 */
class RequestTraceIds implements IdGenerator {
  next: string | null = null;
  private readonly random = new RandomIdGenerator();
  readonly generateTraceId = (): string => {
    const id = this.next;
    this.next = null;
    return id ?? this.random.generateTraceId();
  };
  readonly generateSpanId = (): string => this.random.generateSpanId();
}

export class Tracing implements RequestObserver {
  readonly tracer: Tracer;
  readonly propagator = new W3CTraceContextPropagator();
  readonly ids = new RequestTraceIds();
  private readonly provider: TracerProvider;
  private readonly flushTimeoutMs: number;
  private readonly onExportError: (message: string) => void;
  private lastErrorAt = -Infinity;

  constructor(opts: TracingOptions) {
    this.flushTimeoutMs = opts.flushTimeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS;
    this.onExportError = opts.onExportError ?? (() => undefined);
    // The SDK reports failed exports here (one gateway per process owns this handler).
    setGlobalErrorHandler((err) => this.exportFailed(err));
    // Every batch still queued is exported at once when the provider shuts down, each within this
    // timeout: nothing of the exporter outlives a shutdown by more than the flush timeout.
    const exporter = new OTLPTraceExporter({
      ...(opts.url ? { url: opts.url } : {}),
      timeoutMillis: exportTimeout(this.flushTimeoutMs, opts.exportTimeoutMs),
    });
    this.provider = new TracerProvider({
      resource: resourceFromAttributes({ 'service.name': opts.serviceName, 'service.version': opts.serviceVersion }),
      idGenerator: this.ids,
      spanProcessors: [
        new BatchSpanProcessor(
          opts.scheduledDelayMillis === undefined
            ? { exporter }
            : { exporter, scheduledDelayMillis: opts.scheduledDelayMillis },
        ),
      ],
    });
    this.tracer = this.provider.getTracer('pi-gateway', opts.serviceVersion);
  }

  begin(endpoint: string, traceId: string, req: IncomingRequest): RequestWatch {
    return new RequestSpan(this, endpoint, traceId, req);
  }

  /** Exports every ended span now; gives up after the flush timeout, never rejects. */
  flush(): Promise<void> {
    return this.bounded(this.provider.forceFlush());
  }

  /** Exports what is left and stops the exporter; gives up after the flush timeout, never rejects. */
  close(): Promise<void> {
    return this.bounded(this.provider.shutdown());
  }

  private async bounded(work: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.flushTimeoutMs);
      timer.unref();
    });
    await Promise.race([work.catch((err: unknown) => this.exportFailed(err, true)), deadline]);
    clearTimeout(timer);
  }

  private exportFailed(err: unknown, always = false): void {
    const now = Date.now();
    if (!always && now - this.lastErrorAt < EXPORT_ERROR_EVERY_MS) return;
    this.lastErrorAt = now;
    this.onExportError(err instanceof Error ? err.message : String(err));
  }
}

function operationOf(endpoint: string): string {
  return OPERATION[endpoint] ?? endpoint;
}

function bounded(s: string): string {
  return s.length > MAX_MODEL_CHARS ? s.slice(0, MAX_MODEL_CHARS) : s;
}

/** The SERVER span of one request. */
class RequestSpan implements RequestWatch {
  private readonly span: Span;
  private readonly ctx: Context;
  private readonly operation: string;

  private readonly t: Tracing;
  constructor(t: Tracing, endpoint: string, traceId: string, req: IncomingRequest) {
    this.t = t;
    this.operation = operationOf(endpoint);
    const parent = t.propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
    // A request that continues no trace gets a trace named after its request id.
    if (!trace.getSpanContext(parent)) t.ids.next = traceIdOfRequestId(traceId);
    this.span = t.tracer.startSpan(
      this.operation,
      {
        kind: SpanKind.SERVER,
        startTime: req.startedAt,
        attributes: {
          'gen_ai.operation.name': this.operation,
          'http.request.method': req.method,
          'url.path': req.path,
          'pi.trace_id': traceId,
          'pi.endpoint': endpoint,
        },
      },
      parent,
    );
    t.ids.next = null;
    this.ctx = trace.setSpan(parent, this.span);
  }

  read(stream: boolean, model: string | null): void {
    this.span.setAttribute('pi.stream', stream);
    if (model !== null) this.span.setAttribute('gen_ai.request.model', bounded(model));
  }

  attempt(start: AttemptStart): AttemptWatch {
    return new AttemptSpan(this.t, this.ctx, this.operation, start);
  }

  end(s: RequestSummary): void {
    const r = s.row;
    const span = this.span;
    if (s.routedModel !== null) span.updateName(`${this.operation} ${s.routedModel}`);
    span.setAttribute('http.response.status_code', r.status);
    span.setAttribute('pi.ended', r.ended ?? 'rejected');
    span.setAttribute('pi.attempts', r.attempts);
    if (r.workspace !== null) span.setAttribute('pi.workspace', r.workspace);
    if (r.provider !== null) span.setAttribute('gen_ai.provider.name', r.provider);
    if (r.model_served !== null) span.setAttribute('gen_ai.response.model', r.model_served);
    if (s.upstreamModel !== null) span.setAttribute('pi.upstream_model', s.upstreamModel);
    if (r.prompt_tokens !== null) span.setAttribute('gen_ai.usage.input_tokens', r.prompt_tokens);
    if (r.completion_tokens !== null) span.setAttribute('gen_ai.usage.output_tokens', r.completion_tokens);
    if (r.cost_nano !== null) span.setAttribute('pi.cost_nano_usd', Number(r.cost_nano));
    const cut = r.ended !== null && CUT_ENDS.has(r.ended);
    const errorType = r.error_code ?? (cut ? r.ended : null);
    if (errorType !== null) span.setAttribute('error.type', errorType);
    // A server span is in error when the gateway or the provider failed the request (5xx, a cut
    // answer), not for the client's own 4xx (HTTP server-span convention).
    if (r.status >= 500 || cut)
      span.setStatus({ code: SpanStatusCode.ERROR, ...(errorType ? { message: errorType } : {}) });
    span.end();
  }
}

/** The CLIENT span of one upstream attempt; its traceparent goes to the provider. */
class AttemptSpan implements AttemptWatch {
  readonly headers: Record<string, string>;
  private readonly span: Span;

  constructor(t: Tracing, parent: Context, operation: string, start: AttemptStart) {
    this.span = t.tracer.startSpan(
      `${operation} ${start.upstreamModel}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': operation,
          'gen_ai.provider.name': start.provider,
          'gen_ai.request.model': start.upstreamModel,
          'pi.model': start.model,
          'pi.deployment': start.deployment,
          'pi.attempt': start.index,
        },
      },
      parent,
    );
    const carrier: Record<string, string> = {};
    t.propagator.inject(trace.setSpan(parent, this.span), carrier, defaultTextMapSetter);
    this.headers = carrier;
  }

  finish(end: AttemptEnd): void {
    const span = this.span;
    span.setAttribute('pi.outcome', end.outcome);
    if (end.status !== null) span.setAttribute('http.response.status_code', end.status);
    if (end.firstByteMs !== null) span.setAttribute('pi.first_byte_ms', Math.round(end.firstByteMs));
    if (end.responseModel !== null) span.setAttribute('gen_ai.response.model', end.responseModel);
    if (end.inputTokens !== null) span.setAttribute('gen_ai.usage.input_tokens', end.inputTokens);
    if (end.outputTokens !== null) span.setAttribute('gen_ai.usage.output_tokens', end.outputTokens);
    if (end.outcome !== 'ok') {
      span.setAttribute('error.type', end.outcome);
      span.setStatus({ code: SpanStatusCode.ERROR, message: end.outcome });
    }
    span.end();
  }
}
