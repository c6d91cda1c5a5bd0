// The gateway's Prometheus metrics: a request observer that counts what every inference request did
// (requests, how they ended, attempts, failovers, tokens, cost, refusals, in-flight requests and
// streams, time added by the gateway, upstream time to first byte), gauges read at scrape time
// (breaker state per deployment, config hash, readiness, wallets: ./wallet-gauges.ts), config reloads by result, exceptions the
// last-resort handler caught, the build, and prom-client's process metrics (RSS, event-loop delay,
// GC, heap). Labels stay low-cardinality: endpoint ids, model and deployment ids from the config,
// platform ids, workspace ids, HTTP statuses and the fixed outcome vocabularies — never the model
// string a client sent. A series whose every label value comes from the config or a closed
// vocabulary is there, at zero, from the first scrape (the config's values are read at each scrape,
// so a reload's new workspace or provider appears too); only series with an open label (an HTTP
// status, an attempt outcome) appear with their first event.
//
// Cost on the request path: counters, gauges and histograms are plain numbers in tables (one Map
// lookup each, src/telemetry/series-table.ts and histogram-table.ts); prom-client reads them when
// /metrics is scraped and formats the exposition.
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { CompiledConfig } from '../config/compiled.ts';
import type { IncomingRequest } from '../http/request.ts';
import { buildInfo } from '../install/build-info.ts';
import type { Lifecycle, ReloadRecord } from '../observe/lifecycle.ts';
import type {
  AttemptEnd,
  AttemptStart,
  AttemptWatch,
  RequestObserver,
  RequestSummary,
  RequestWatch,
} from '../observe/observer.ts';
import { REQUEST_ENDS } from '../observe/request-end.ts';
import { HistogramTable, TableHistogram } from './histogram-table.ts';
import { SeriesTable } from './series-table.ts';
import { registerWalletGauges, type WalletSample } from './wallet-gauges.ts';

/** One deployment's breaker as the scrape reads it. */
export interface BreakerSample {
  deployment: string;
  provider: string;
  state: 'closed' | 'half_open' | 'open';
}

/** What the gauges read from the running gateway at scrape time. */
export interface MetricsBinding {
  breakers(): BreakerSample[];
  /** sourceHash of the config serving now. */
  configHash(): string;
  lifecycle: Lifecycle;
  /** The config serving now and its inference endpoint ids: the label values its series start at
   *  zero with (absent: only the series of events seen). */
  labels?(): { config: CompiledConfig; endpoints: readonly string[] };
  /** Each workspace's wallet, read from the store (absent: no wallet gauges, e.g. a serving thread
   *  whose coordinator reports them). */
  wallets?(): Promise<WalletSample[]>;
}

/** A fleet node's Redis (`serve --redis`): whether it answers, and the decisions taken on this node
 *  alone because it did not (counts since start). */
export interface SharedStateSample {
  redisUp: boolean;
  rateLimitFallbacks: number;
  pinFallbacks: number;
}

const BREAKER_VALUE: Record<BreakerSample['state'], number> = { closed: 0, half_open: 1, open: 2 };

/** Seconds; the gateway's own work is sub-millisecond to a few milliseconds. */
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
/** Seconds; whole requests and provider first bytes: tens of ms to the 90-s start-of-answer limit. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

const NANO_PER_USD = 1e9;

/** HTTP statuses as label text, made once each. */
const STATUS_TEXT = new Map<number, string>();
function statusLabel(status: number): string {
  let t = STATUS_TEXT.get(status);
  if (t === undefined) STATUS_TEXT.set(status, (t = String(status)));
  return t;
}

export class GatewayMetrics implements RequestObserver {
  readonly registry = new Registry();
  // Request-path tables (read by the prom-client counters and gauges below when scraped).
  readonly requests = new SeriesTable(['endpoint', 'model', 'provider', 'status']);
  readonly ends = new SeriesTable(['endpoint', 'ended']);
  readonly attempts = new SeriesTable(['provider', 'outcome']);
  readonly failovers = new SeriesTable(['provider']);
  readonly tokens = new SeriesTable(['direction', 'model', 'provider']);
  readonly walletRefusals = new SeriesTable(['workspace']);
  readonly rateLimited = new SeriesTable(['workspace']);
  readonly usageCapped = new SeriesTable(['provider', 'cap']);
  readonly inFlight = new SeriesTable(['endpoint']);
  readonly inFlightStreams = new SeriesTable(['endpoint']);
  readonly reloads = new SeriesTable(['result']);
  /** Exact nano-USD per workspace; converted to USD once, when scraped. */
  readonly costNano = new Map<string, bigint>();

  readonly duration = new HistogramTable('endpoint', LATENCY_BUCKETS);
  readonly overhead = new HistogramTable('endpoint', OVERHEAD_BUCKETS);
  readonly ttfb = new HistogramTable('provider', LATENCY_BUCKETS);
  private binding: MetricsBinding | null = null;
  /** The config whose label values the tables hold (see prime). */
  private primedFor: CompiledConfig | null = null;
  /** Exceptions and rejections the process's last-resort handler caught (see countUncaughtErrors). */
  private uncaught: () => number = () => 0;

  constructor(opts: { processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    for (const result of ['ok', 'failed']) this.reloads.series(result);
    const beforeRead = () => this.prime();
    new TableHistogram(
      {
        name: 'pi_gateway_request_duration_seconds',
        help: 'Inference requests: arrival to the end of the answer, by endpoint.',
        registers,
        beforeRead,
      },
      this.duration,
    );
    new TableHistogram(
      {
        name: 'pi_gateway_overhead_seconds',
        help: 'Time the gateway added to an inference request: its duration minus the time spent inside upstream attempts (authentication, reading, routing, holds, settlement, failover bookkeeping), by endpoint.',
        registers,
        beforeRead,
      },
      this.overhead,
    );
    new TableHistogram(
      {
        name: 'pi_gateway_upstream_ttfb_seconds',
        help: "Upstream attempts: dispatch to the provider's first answer byte, by provider.",
        registers,
        beforeRead,
      },
      this.ttfb,
    );
    this.registerTables();
    this.registerScrapeGauges();
    // The build and the process: the serving threads of `serve --workers N` leave them to the
    // coordinator, whose scrape reports them once.
    if (opts.processMetrics ?? true) {
      this.registerProcessCounters();
      collectDefaultMetrics({ register: this.registry });
    }
  }

  /** The process's last-resort handler (src/runtime/last-resort.ts): `read` says how many exceptions it
   *  caught so far (`pi_gateway_uncaught_errors_total`, zero until then). */
  countUncaughtErrors(read: () => number): void {
    this.uncaught = read;
  }

  /**
   * Every series whose label values the config names, at zero: request ends and in-flight gauges per
   * endpoint, failovers, usage caps and time to first byte per provider, tokens per deployment's
   * model and provider, refusals and cost per workspace. Called at each scrape; does the work only
   * when the config changed (a reload adds the new values; a value that left keeps its series).
   */
  prime(): void {
    const labels = this.binding?.labels?.();
    if (!labels || labels.config === this.primedFor) return;
    this.primedFor = labels.config;
    const { config, endpoints } = labels;
    for (const endpoint of endpoints) {
      for (const ended of REQUEST_ENDS) this.ends.series(endpoint, ended);
      this.inFlight.series(endpoint);
      this.inFlightStreams.series(endpoint);
      this.duration.row(endpoint);
      this.overhead.row(endpoint);
    }
    for (const d of config.deployments) {
      this.failovers.series(d.platform);
      this.ttfb.row(d.platform);
      for (const cap of ['bound', 'hold']) this.usageCapped.series(d.platform, cap);
      for (const direction of ['input', 'output']) this.tokens.series(direction, d.model, d.platform);
    }
    for (const w of config.workspaces) {
      this.walletRefusals.series(w.id);
      this.rateLimited.series(w.id);
      if (!this.costNano.has(w.id)) this.costNano.set(w.id, 0n);
    }
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition of every metric. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** Connects the gauges that read the running gateway, and counts its config reloads. */
  bind(binding: MetricsBinding): void {
    this.binding = binding;
    binding.lifecycle.onReload((r: ReloadRecord) => void this.reloads.series(r.ok ? 'ok' : 'failed').value++);
  }

  /**
   * A fleet node on Redis: `pi_gateway_redis_up` and `pi_gateway_redis_fallbacks_total`, read from
   * `read` when scraped, so the per-node fallback (docs/fleet.md) is visible, not only logged. Called
   * once, by the node's start-up; a node without Redis and the embedded gateway have neither metric.
   */
  watchSharedState(read: () => SharedStateSample): void {
    const registers = [this.registry];
    new Gauge({
      name: 'pi_gateway_redis_up',
      help: "1 while this node's Redis answers (shared rate-limit windows and session pins), 0 while it falls back to per-node ones.",
      registers,
      collect() {
        this.set(read().redisUp ? 1 : 0);
      },
    });
    new Counter({
      name: 'pi_gateway_redis_fallbacks_total',
      help: 'Rate-limit decisions (rate_limit) and session-pin reads and writes (pins) this node took locally because Redis did not answer.',
      labelNames: ['kind'],
      registers,
      collect() {
        this.reset();
        const s = read();
        this.inc({ kind: 'rate_limit' }, s.rateLimitFallbacks);
        this.inc({ kind: 'pins' }, s.pinFallbacks);
      },
    });
  }

  begin(endpoint: string, _traceId: string, _req: IncomingRequest): RequestWatch {
    return new MetricsWatch(this, endpoint);
  }

  /** Request-path hooks used by MetricsWatch. */
  recordAttempt(end: AttemptEnd, provider: string): void {
    this.attempts.series(provider, end.outcome).value++;
    if (end.firstByteMs !== null) this.ttfb.observe(provider, end.firstByteMs / 1000);
  }

  recordEnd(endpoint: string, s: RequestSummary, upstreamMs: number): void {
    const row = s.row;
    const model = row.model_served ?? s.routedModel ?? '';
    const provider = row.provider ?? '';
    this.requests.series(endpoint, model, provider, statusLabel(row.status)).value++;
    this.ends.series(endpoint, row.ended ?? 'rejected').value++;
    this.duration.observe(endpoint, s.durationMs / 1000);
    this.overhead.observe(endpoint, Math.max(0, s.durationMs - upstreamMs) / 1000);
    const attempts = row.attempts_json;
    for (let i = 0; i < attempts.length - 1; i++)
      this.failovers.series((attempts[i] as { provider: string }).provider).value++;
    if (row.prompt_tokens !== null) this.tokens.series('input', model, provider).value += row.prompt_tokens;
    if (row.completion_tokens !== null) this.tokens.series('output', model, provider).value += row.completion_tokens;
    const workspace = row.workspace ?? '';
    if (row.cost_nano !== null && row.cost_nano > 0n)
      this.costNano.set(workspace, (this.costNano.get(workspace) ?? 0n) + row.cost_nano);
    if (s.usageCapped) this.usageCapped.series(provider, s.usageCapped).value++;
    if (row.error_code === 'insufficient_balance') this.walletRefusals.series(workspace).value++;
    else if (row.error_code === 'rate_limited') this.rateLimited.series(workspace).value++;
  }

  /** Counters and gauges over the request-path tables, filled from them when scraped. */
  private registerTables(): void {
    const registers = [this.registry];
    const metrics = this;
    const counter = (name: string, help: string, table: SeriesTable) =>
      new Counter({
        name,
        help,
        labelNames: table.labelNames,
        registers,
        collect() {
          metrics.prime();
          this.reset();
          for (const s of table.all()) this.inc(s.labels, s.value);
        },
      });
    const gauge = (name: string, help: string, table: SeriesTable) =>
      new Gauge({
        name,
        help,
        labelNames: table.labelNames,
        registers,
        collect() {
          metrics.prime();
          this.reset();
          for (const s of table.all()) this.set(s.labels, s.value);
        },
      });
    counter(
      'pi_gateway_requests_total',
      'Inference requests by endpoint, model served (else routed; empty when unresolved), provider that answered (empty when none) and HTTP status.',
      this.requests,
    );
    counter(
      'pi_gateway_request_ends_total',
      'Inference requests by endpoint and how they ended (completed, client_abort, upstream_cut, idle_timeout, write_stall, drained, failed, rejected).',
      this.ends,
    );
    counter(
      'pi_gateway_upstream_attempts_total',
      'Upstream attempts by provider and outcome (ok, status_<code>, committed_<why>, or the failure reason).',
      this.attempts,
    );
    counter(
      'pi_gateway_failovers_total',
      'Failovers: an attempt followed by another attempt of the same request, by the provider failed over from.',
      this.failovers,
    );
    counter(
      'pi_gateway_tokens_total',
      'Billed tokens (settled usage, or the documented estimate) by direction (input, output), model served and provider.',
      this.tokens,
    );
    counter(
      'pi_gateway_wallet_refusals_total',
      'Requests refused 402 insufficient_balance, by workspace.',
      this.walletRefusals,
    );
    counter(
      'pi_gateway_rate_limited_total',
      "Requests refused 429 rate_limited by the gateway's own rate limit, by workspace.",
      this.rateLimited,
    );
    counter(
      'pi_gateway_usage_capped_total',
      "Settlements charged less than their usage priced at, by provider and cap: bound (a provider's reported usage above what the request could have cost: charged that bound) or hold (the gateway's own estimate above the request's hold: charged the hold).",
      this.usageCapped,
    );
    counter('pi_gateway_config_reloads_total', 'Config reloads by result (ok, failed).', this.reloads);
    gauge('pi_gateway_in_flight_requests', 'Inference requests in progress, by endpoint.', this.inFlight);
    gauge(
      'pi_gateway_in_flight_streams',
      'Streamed inference requests (stream: true) in progress, from the body read to the end, by endpoint.',
      this.inFlightStreams,
    );
    const costNano = this.costNano;
    new Counter({
      name: 'pi_gateway_cost_usd_total',
      help: 'Settled cost charged to wallets in USD, by workspace (summed exactly in nano-USD).',
      labelNames: ['workspace'],
      registers,
      collect() {
        metrics.prime();
        this.reset();
        for (const [workspace, nano] of costNano) this.inc({ workspace }, Number(nano) / NANO_PER_USD);
      },
    });
  }

  /** What only the process knows: the build it runs, and the exceptions nothing else caught. */
  private registerProcessCounters(): void {
    const registers = [this.registry];
    const metrics = this;
    new Gauge({
      name: 'pi_gateway_build_info',
      help: 'The build serving: 1, labelled with the package version, the commit it was built from (unknown without one) and the Node.js version.',
      labelNames: ['version', 'commit', 'node'],
      registers,
      collect() {
        this.reset();
        const b = buildInfo();
        this.set({ version: b.version, commit: b.commit, node: b.node }, 1);
      },
    });
    new Counter({
      name: 'pi_gateway_uncaught_errors_total',
      help: 'Exceptions and promise rejections nothing caught, logged as uncaught_error by the last-resort handler (the process keeps serving; each is a bug to report).',
      registers,
      collect() {
        this.reset();
        this.inc(metrics.uncaught());
      },
    });
  }

  /** Gauges read from the running gateway when scraped. */
  private registerScrapeGauges(): void {
    const registers = [this.registry];
    const metrics = this;
    registerWalletGauges(this.registry, () => metrics.binding?.wallets?.() ?? Promise.resolve([]));
    new Gauge({
      name: 'pi_gateway_breaker_state',
      help: 'Circuit breaker per deployment: 0 closed, 1 half-open (cool-down over, probe allowed), 2 open.',
      labelNames: ['deployment', 'provider'],
      registers,
      collect() {
        this.reset();
        for (const b of metrics.binding?.breakers() ?? [])
          this.set({ deployment: b.deployment, provider: b.provider }, BREAKER_VALUE[b.state]);
      },
    });
    new Gauge({
      name: 'pi_gateway_config_info',
      help: 'The config serving now: 1, labelled with its source hash.',
      labelNames: ['hash'],
      registers,
      collect() {
        this.reset();
        if (metrics.binding) this.set({ hash: metrics.binding.configHash() }, 1);
      },
    });
    new Gauge({
      name: 'pi_gateway_ready',
      help: '1 while the public listener accepts requests (lifecycle ready), 0 while starting, draining or stopped.',
      registers,
      collect() {
        this.set(metrics.binding?.lifecycle.state === 'ready' ? 1 : 0);
      },
    });
  }
}

/** One request as the metrics follow it; also its attempts' watch (no per-attempt allocation). */
class MetricsWatch implements RequestWatch, AttemptWatch {
  readonly headers = null;
  private stream = false;
  private upstreamMs = 0;
  private provider = '';

  private readonly m: GatewayMetrics;
  private readonly endpoint: string;
  constructor(m: GatewayMetrics, endpoint: string) {
    this.m = m;
    this.endpoint = endpoint;
    m.inFlight.series(endpoint).value++;
  }

  read(stream: boolean): void {
    if (stream && !this.stream) {
      this.stream = true;
      this.m.inFlightStreams.series(this.endpoint).value++;
    }
  }

  attempt(start: AttemptStart): AttemptWatch {
    this.provider = start.provider;
    return this;
  }

  finish(end: AttemptEnd): void {
    this.upstreamMs += end.ms;
    this.m.recordAttempt(end, this.provider);
  }

  end(summary: RequestSummary): void {
    this.m.inFlight.series(this.endpoint).value--;
    if (this.stream) this.m.inFlightStreams.series(this.endpoint).value--;
    this.m.recordEnd(this.endpoint, summary, this.upstreamMs);
  }
}
