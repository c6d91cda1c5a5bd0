// What a way of running turns on besides serving (the admin listener, metrics, the access log, OTLP
// traces): the settings `serve` and `demo` parse from their flags (src/cli/observability-options.ts)
// and hand to the runtime that starts them.

export interface ObservabilityOptions {
  /** Where the admin listener binds; null: none (and so no metrics). */
  admin: { host: string; port: number } | null;
  /** Prometheus metrics on the admin listener's /metrics. */
  metrics: boolean;
  /** One JSON line per inference request on stdout. */
  accessLog: boolean;
  /** Peers whose X-Forwarded-For the access log believes (addresses and CIDR ranges). */
  trustedProxies: string[];
  /** OTLP/HTTP traces to this full …/v1/traces URL; null: no traces. */
  tracesUrl: string | null;
  /** `service.name` of the exported spans. */
  serviceName: string;
}
