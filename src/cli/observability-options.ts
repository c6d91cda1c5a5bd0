// The observability options `serve` and `demo` share: the admin listener (health, readiness,
// metrics), metrics, the access log and OTLP traces — parsed from flags and their environment
// variables, with their help text in one place.
import { type OptionSpec, type Parsed, UsageError, int, str } from './args.ts';
import { TrustedProxies, TrustedProxyError } from '../telemetry/client-address.ts';
import { tracesUrl } from '../telemetry/telemetry.ts';
import type { ObservabilityOptions } from '../runtime/observability.ts';

export type { ObservabilityOptions };

export const OBSERVABILITY_OPTIONS: OptionSpec = {
  'admin-port': { type: 'string' },
  'admin-host': { type: 'string' },
  metrics: { type: 'string' },
  'access-log': { type: 'string' },
  'trusted-proxies': { type: 'string' },
  'otlp-endpoint': { type: 'string' },
};

export const OBSERVABILITY_HELP = `Observability (see docs/operations.md):
  --admin-port N            admin listener for GET /health/live, /health/ready and /metrics,
                            on its own port (env PI_ADMIN_PORT; default: none; 0 picks a free one);
                            with env PI_ADMIN_TOKEN set it also serves the operator console at
                            /console and the admin JSON endpoints /admin/… (docs/console.md)
  --admin-host HOST         admin listener address (env PI_ADMIN_HOST, default 127.0.0.1)
  --metrics on|off          Prometheus metrics on the admin listener (env PI_METRICS, default on)
  --access-log on|off       one JSON line per inference request on stdout (env PI_ACCESS_LOG,
                            default on)
  --trusted-proxies LIST    comma-separated addresses or CIDR ranges of the load balancers and
                            proxies in front of the gateway: for a peer among them the access log
                            takes the client address from X-Forwarded-For (env
                            PI_TRUSTED_PROXIES; default none: the peer's address, header ignored)
  --otlp-endpoint URL       export traces over OTLP/HTTP to URL/v1/traces (env
                            OTEL_EXPORTER_OTLP_ENDPOINT, or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
                            as the full URL; default: no traces). OTEL_SERVICE_NAME,
                            OTEL_TRACES_SAMPLER[_ARG] and OTEL_EXPORTER_OTLP_HEADERS apply.`;

function onOff(p: Parsed, name: string, env: string, dflt: boolean): boolean {
  const v = str(p, name, env);
  if (v === undefined) return dflt;
  if (v === 'on') return true;
  if (v === 'off') return false;
  throw new UsageError(`--${name} must be "on" or "off", got "${v}"`);
}

function httpUrl(name: string, v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new UsageError(`${name} must be an http(s) URL, got "${v}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new UsageError(`${name} must be an http(s) URL, got "${v}"`);
  return v;
}

function otlpTracesUrl(p: Parsed): string | null {
  const flag = p.values['otlp-endpoint'];
  if (typeof flag === 'string') return tracesUrl(httpUrl('--otlp-endpoint', flag));
  if (process.env.OTEL_SDK_DISABLED === 'true') return null;
  const full = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (full) return httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', full);
  const base = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (base) return tracesUrl(httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base));
  return null;
}

/** --trusted-proxies (PI_TRUSTED_PROXIES): comma-separated addresses and CIDR ranges, checked now. */
function trustedProxies(p: Parsed): string[] {
  const v = str(p, 'trusted-proxies', 'PI_TRUSTED_PROXIES');
  if (v === undefined || v.trim() === '') return [];
  const entries = v
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  try {
    new TrustedProxies(entries);
  } catch (err) {
    if (err instanceof TrustedProxyError) throw new UsageError(`--trusted-proxies: ${err.message}`);
    throw err;
  }
  return entries;
}

/** The observability options of a parsed command line; UsageError on a bad value. */
export function observabilityOptions(p: Parsed): ObservabilityOptions {
  const port = int(p, 'admin-port', 'PI_ADMIN_PORT');
  if (port !== undefined && (port < 0 || port > 65535))
    throw new UsageError(`--admin-port must be between 0 and 65535, got ${port}`);
  return {
    admin: port === undefined ? null : { host: str(p, 'admin-host', 'PI_ADMIN_HOST', '127.0.0.1') as string, port },
    metrics: onOff(p, 'metrics', 'PI_METRICS', true),
    accessLog: onOff(p, 'access-log', 'PI_ACCESS_LOG', true),
    trustedProxies: trustedProxies(p),
    tracesUrl: otlpTracesUrl(p),
    serviceName: process.env.OTEL_SERVICE_NAME || 'pi-gateway',
  };
}
