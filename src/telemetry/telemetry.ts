// Assembles what the operator turned on — Prometheus metrics, OTLP traces, the access log — into the
// request observers the composition root adds beside the request-log writer. prom-client and the
// OpenTelemetry SDK are imported only when their part is on: a gateway with everything off loads
// neither and its request path does no telemetry work.
import type { RequestObserver } from '../observe/observer.ts';
import { accessLogObserver } from './access-log.ts';
import { TrustedProxies } from './client-address.ts';
import type { LineSink } from './line-sink.ts';
import type { GatewayMetrics, MetricsBinding } from './metrics.ts';

export interface TelemetryOptions {
  /** Prometheus metrics for the admin listener's /metrics. `processMetrics: false` leaves out
   *  prom-client's process and Node.js metrics (RSS, event-loop delay, GC, heap). */
  metrics?: boolean | { processMetrics?: boolean };
  /** Where access-log lines go; absent or null: no access log. */
  accessLog?: LineSink | null;
  /** Addresses and CIDR ranges of the proxies whose X-Forwarded-For the access log believes
   *  (default none); a bad entry throws TrustedProxyError. */
  trustedProxies?: readonly string[];
  /** OTLP/HTTP traces; absent or null: none. `url` is the full …/v1/traces URL, or null to let the
   *  exporter read the OTEL_EXPORTER_OTLP_* environment. */
  traces?: {
    url: string | null;
    serviceName?: string;
    scheduledDelayMillis?: number;
    flushTimeoutMs?: number;
    exportTimeoutMs?: number;
  } | null;
  /** Operational events (a failing trace export); never secrets. */
  log?: (event: string, fields?: Record<string, unknown>) => void;
}

export interface Telemetry {
  /** The metrics registry, or null when metrics are off. */
  readonly metrics: GatewayMetrics | null;
  /** Traces are exported. */
  readonly tracing: boolean;
  /** The request observers to add (metrics, traces, access log — those that are on). */
  readonly observers: readonly RequestObserver[];
  /** Lets the metrics read the running gateway (breakers, config hash, lifecycle). */
  bind(binding: MetricsBinding): void;
  /** Writes buffered access-log lines and exports ended spans now. */
  flush(): Promise<void>;
  /** Flushes, then stops the trace exporter (bounded: a collector that is down never holds up a
   *  shutdown; never rejects). Idempotent. */
  close(): Promise<void>;
}

const SERVICE_VERSION = '0.1.0';

/** The OTLP traces URL for a base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT semantics: + /v1/traces). */
export function tracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

export async function startTelemetry(opts: TelemetryOptions = {}): Promise<Telemetry> {
  const observers: RequestObserver[] = [];
  let metrics: GatewayMetrics | null = null;
  if (opts.metrics) {
    const { GatewayMetrics } = await import('./metrics.ts');
    metrics = new GatewayMetrics(typeof opts.metrics === 'object' ? opts.metrics : {});
    observers.push(metrics);
  }
  let tracing: { flush(): Promise<void>; close(): Promise<void> } | null = null;
  if (opts.traces) {
    const { Tracing } = await import('./tracing.ts');
    const t = new Tracing({
      url: opts.traces.url,
      serviceName: opts.traces.serviceName ?? 'pi-gateway',
      serviceVersion: SERVICE_VERSION,
      ...(opts.traces.scheduledDelayMillis === undefined
        ? {}
        : { scheduledDelayMillis: opts.traces.scheduledDelayMillis }),
      ...(opts.traces.flushTimeoutMs === undefined ? {} : { flushTimeoutMs: opts.traces.flushTimeoutMs }),
      ...(opts.traces.exportTimeoutMs === undefined ? {} : { exportTimeoutMs: opts.traces.exportTimeoutMs }),
      onExportError: (error) => opts.log?.('trace_export_failed', { error }),
    });
    tracing = t;
    observers.push(t);
  }
  const accessLog = opts.accessLog ?? null;
  if (accessLog)
    observers.push(
      accessLogObserver(accessLog, {
        traces: tracing !== null,
        trustedProxies: new TrustedProxies(opts.trustedProxies ?? []),
      }),
    );

  let closed: Promise<void> | null = null;
  const flush = async () => {
    accessLog?.flush();
    await tracing?.flush();
  };
  return {
    metrics,
    tracing: tracing !== null,
    observers,
    bind(binding) {
      metrics?.bind(binding);
    },
    flush,
    close() {
      closed ??= (async () => {
        accessLog?.flush();
        await tracing?.close();
      })();
      return closed;
    },
  };
}
