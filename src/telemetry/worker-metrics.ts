// The admin listener's /metrics under `serve --workers N`: each serving thread counts its own
// requests (its GatewayMetrics, without process metrics), and the coordinator's scrape asks every
// worker for its metrics as JSON and merges them with prom-client's aggregator — counters and
// histograms summed, so the request series read as one gateway's. What only the coordinator knows
// (breakers, config hash, readiness, reloads, the process's RSS and event-loop delay of the main
// thread, the build, the exceptions its last-resort handler caught) comes from its own registry; per
// worker, gauges say whether it is up and how many requests it has in flight, counters how many it
// answered and how often it was restarted — every worker's series there from the start, at zero.
import {
  AggregatorRegistry,
  Counter,
  Gauge,
  type MetricObjectWithValues,
  type MetricValue,
  Registry,
} from 'prom-client';
import type { GatewayMetrics } from './metrics.ts';

export type MetricsJSON = MetricObjectWithValues<MetricValue<string>>[];

/** The request-path series: counted in the workers, summed across them. */
const REQUEST_SERIES = new Set([
  'pi_gateway_requests_total',
  'pi_gateway_request_ends_total',
  'pi_gateway_upstream_attempts_total',
  'pi_gateway_failovers_total',
  'pi_gateway_tokens_total',
  'pi_gateway_wallet_refusals_total',
  'pi_gateway_rate_limited_total',
  'pi_gateway_usage_capped_total',
  'pi_gateway_in_flight_requests',
  'pi_gateway_in_flight_streams',
  'pi_gateway_cost_usd_total',
  'pi_gateway_request_duration_seconds',
  'pi_gateway_overhead_seconds',
  'pi_gateway_upstream_ttfb_seconds',
]);

/** Holds the serving threads took, by where they were decided (the coordinator counts them). */
export interface HoldCounts {
  /** One compare-and-swap in the memory the threads share, announced afterwards. */
  sharedMemory: number;
  /** Asked of the coordinator by message. */
  message: number;
}

/** One worker as the coordinator sees it. */
export interface WorkerSample {
  worker: number;
  ready: boolean;
  restarts: number;
}

export interface WorkerMetricsSource {
  readonly contentType: string;
  render(): Promise<string>;
}

/**
 * `coordinator` holds the gauges the coordinator reads (bound to its breakers, config and
 * lifecycle); `collect` asks every live worker for its JSON (null for a worker that did not answer).
 */
export function workerMetrics(
  coordinator: GatewayMetrics,
  workers: () => WorkerSample[],
  collect: () => Promise<{ worker: number; json: unknown[] | null }[]>,
  holds: () => HoldCounts = () => ({ sharedMemory: 0, message: 0 }),
): WorkerMetricsSource {
  const own = new Registry();
  new Counter({
    name: 'pi_gateway_worker_holds_total',
    help: 'Wallet holds the serving threads took, by where each was decided: shared_memory (one compare-and-swap, no message) or message (the coordinator decided: a first use, a slice to grow, a wallet admitted per request, no shared memory).',
    labelNames: ['decided'],
    registers: [own],
    collect() {
      this.reset();
      const h = holds();
      this.inc({ decided: 'shared_memory' }, h.sharedMemory);
      this.inc({ decided: 'message' }, h.message);
    },
  });
  new Gauge({
    name: 'pi_gateway_worker_ready',
    help: 'Serving threads (serve --workers N): 1 while the worker listens, 0 while it starts, restarts or drains.',
    labelNames: ['worker'],
    registers: [own],
    collect() {
      this.reset();
      for (const w of workers()) this.set({ worker: String(w.worker) }, w.ready ? 1 : 0);
    },
  });
  new Counter({
    name: 'pi_gateway_worker_restarts_total',
    help: 'Times each serving thread was restarted after it ended unexpectedly (its open holds were released).',
    labelNames: ['worker'],
    registers: [own],
    collect() {
      this.reset();
      for (const w of workers()) this.inc({ worker: String(w.worker) }, w.restarts);
    },
  });
  const inFlight = new Gauge({
    name: 'pi_gateway_worker_in_flight_requests',
    help: 'Inference requests in progress on each serving thread.',
    labelNames: ['worker'],
    registers: [own],
  });
  const served = new Counter({
    name: 'pi_gateway_worker_requests_total',
    help: 'Inference requests each serving thread answered since it started (how the kernel spreads connections over the threads); a restarted thread starts again from zero.',
    labelNames: ['worker'],
    registers: [own],
  });
  return {
    contentType: coordinator.registry.contentType,
    async render() {
      const answers = await collect();
      inFlight.reset();
      served.reset();
      for (const w of workers()) {
        inFlight.set({ worker: String(w.worker) }, 0);
        served.inc({ worker: String(w.worker) }, 0);
      }
      const fromWorkers: MetricsJSON[] = [];
      for (const a of answers) {
        if (a.json === null) continue;
        const json = (a.json as MetricsJSON).filter((m) => REQUEST_SERIES.has(m.name));
        fromWorkers.push(json);
        const f = json.find((m) => m.name === 'pi_gateway_in_flight_requests');
        inFlight.set(
          { worker: String(a.worker) },
          (f?.values ?? []).reduce((n, v) => n + v.value, 0),
        );
        const r = json.find((m) => m.name === 'pi_gateway_requests_total');
        served.inc(
          { worker: String(a.worker) },
          (r?.values ?? []).reduce((n, v) => n + v.value, 0),
        );
      }
      const mine = (await coordinator.registry.getMetricsAsJSON()).filter((m) => !REQUEST_SERIES.has(m.name));
      // An empty worker list still yields every request series (at zero) from the coordinator's tables.
      const sources =
        fromWorkers.length > 0
          ? fromWorkers
          : [(await coordinator.registry.getMetricsAsJSON()).filter((m) => REQUEST_SERIES.has(m.name))];
      const merged = AggregatorRegistry.aggregate([mine, ...sources, await own.getMetricsAsJSON()] as Parameters<
        typeof AggregatorRegistry.aggregate
      >[0]);
      return merged.metrics();
    },
  };
}

/** A worker's metrics as JSON for the coordinator (structured-clone safe). */
export function metricsJSON(metrics: GatewayMetrics): Promise<unknown[]> {
  return metrics.registry.getMetricsAsJSON();
}
