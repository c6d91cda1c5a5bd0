// Per-deployment circuit breaker fed by real attempt outcomes: trips on consecutive failures or on
// the failure share of a sliding window, cools down, then lets exactly one probe through.
import type { Clock } from '../clock.ts';
import type { CompiledDeployment, GatewaySettings } from '../config/compiled.ts';
import type { HealthView } from '../availability/serving.ts';

export type Outcome =
  | { ok: true; firstByteMs: number }
  | {
      ok: false;
      reason: 'connect' | 'timeout' | 'reset' | 'status_5xx' | 'status_429' | 'auth' | 'malformed' | 'inband_error';
    };

export type BreakerState = 'closed' | 'open' | 'half_open';

/**
 * Breaker state as the request path uses it, one view per deployment across every event loop that
 * serves. `isDown` is synchronous (ordering deployments is a pure, synchronous step): a board whose
 * state lives elsewhere (the --workers coordinator) keeps a mirror it is sent on every change, and a
 * half-open probe is granted by the owner to one caller only. `record` and `releaseProbe` are
 * fire-and-forget.
 */
export interface BreakerBoard extends HealthView {
  /** The same verdicts without claiming a probe (catalog views, diagnostics). */
  readonly passive: HealthView;
  /** `at`: when the attempt ended (default: now). Boards whose outcomes travel between threads
   *  pass it, so that an outcome told late is judged where it happened, not where it arrived. */
  record(deploymentId: string, outcome: Outcome, at?: number): void;
  releaseProbe(deploymentId: string): void;
  state(deploymentId: string): DeploymentHealth;
  /** New thresholds from a config reload; every breaker keeps its state. */
  reconfigure(settings: GatewaySettings['health']): void;
}

export interface DeploymentHealth {
  state: BreakerState;
  consecutiveFailures: number;
  /** Failure share of the outcome window (0 when empty). */
  errorRate: number;
  /** When the current cool-down ends (ends / ended, for half_open); null when closed. */
  openUntil: number | null;
}

/** How long a claimed half-open probe may go without an outcome before another caller may probe. */
export const DEFAULT_PROBE_LEASE_MS = 120_000;

interface Breaker {
  /** Last `window` outcomes as failure flags, oldest first. */
  window: boolean[];
  failures: number;
  /** When each failure of the current run ended (failures since the latest success, in the order
   *  the attempts ended): at most `consecutiveFailures` entries, since that many open the breaker. */
  run: number[];
  /** When the latest success ended. */
  lastSuccessAt: number;
  /** Failures in a row, probes' included (reported by `state`). */
  consecutiveFailures: number;
  /** null = closed. */
  openUntil: number | null;
  /** The cool-down used for the current (or next) open period. */
  cooldownMs: number;
  /** When the outstanding probe's claim lapses; null = no probe out. */
  probeLeaseUntil: number | null;
}

/**
 * Breaker rules (thresholds from `settings.health`):
 * - Failure for health: any `ok: false` outcome, and a success whose first byte took longer than
 *   `slowFirstByteMs` (the client still got its answer; the deployment is just too slow).
 * - closed → open when `consecutiveFailures` failures arrive in a row, or when the window (the last
 *   `window` outcomes) holds at least `minRequests` outcomes and its failure share is ≥ `errorRate`.
 *   Open lasts `cooldownMs`.
 * - open, cool-down not over: down. Outcomes recorded meanwhile (requests that were already in
 *   flight when it tripped) change nothing.
 * - cool-down over (half-open): `isDown` answers false to exactly one caller, which thereby claims
 *   the probe; every other caller sees it down until an outcome is recorded. The first outcome
 *   recorded in half-open settles the probe: success → closed with counters and cool-down reset;
 *   failure → open again with the cool-down doubled, capped at `maxCooldownMs`.
 * - A claimed probe whose outcome never comes (the request succeeded on an earlier deployment, or
 *   was cancelled) lapses after `probeLeaseMs`, then the next caller may claim it. The default
 *   (120 s) outlasts the API's 90 s start-of-answer limit, so a live probe is never doubled.
 * - A declared `status: down` deployment is always down, and never takes a probe.
 * - "In a row" is in the order the attempts ended, not the order their outcomes arrive: under
 *   `serve --workers N` a success on a closed breaker travels to the coordinator up to a few
 *   milliseconds late, and must not undo a failure that ended after it on another thread (nor
 *   count one that ended before it). In one process the two orders are the same.
 * Memory: one small record per deployment id ever recorded (ids come from the compiled config), with
 * a window of at most `window` flags.
 */
export class HealthTracker implements BreakerBoard {
  private settings: GatewaySettings['health'];
  private readonly clock: Clock;
  /** How long a claimed probe is its caller's before the next caller may claim it. */
  readonly probeLeaseMs: number;
  private readonly breakers = new Map<string, Breaker>();

  /** The same verdicts without claiming probes (a half-open deployment counts as down): for the
   *  catalog's endpoints view and diagnostics, which must not consume the router's single probe. */
  readonly passive: HealthView;

  constructor(settings: GatewaySettings['health'], clock: Clock, opts: { probeLeaseMs?: number } = {}) {
    this.settings = settings;
    this.clock = clock;
    this.probeLeaseMs = opts.probeLeaseMs ?? DEFAULT_PROBE_LEASE_MS;
    this.passive = {
      isDown: (d) => d.status === 'down' || this.breakers.get(d.id)?.openUntil != null,
    };
  }

  /** New thresholds from a config reload: every breaker keeps its state (open stays open until its
   *  cool-down ends) and later outcomes are judged by the new thresholds. */
  reconfigure(settings: GatewaySettings['health']): void {
    this.settings = settings;
  }

  /** Declared down, or breaker open; after the cool-down, false for the one caller that claims the probe. */
  isDown(d: CompiledDeployment, nowMs: number): boolean {
    if (d.status === 'down') return true;
    const b = this.breakers.get(d.id);
    if (!b || b.openUntil === null) return false;
    if (nowMs < b.openUntil) return true;
    if (b.probeLeaseUntil !== null && nowMs < b.probeLeaseUntil) return true;
    b.probeLeaseUntil = nowMs + this.probeLeaseMs;
    return false;
  }

  /** Gives back a probe claimed while ordering a request that never reached this deployment (an
   *  earlier one answered), so the next request can probe at once instead of after the lease. */
  releaseProbe(deploymentId: string): void {
    const b = this.breakers.get(deploymentId);
    if (b) b.probeLeaseUntil = null;
  }

  record(deploymentId: string, outcome: Outcome, at?: number): void {
    const now = this.clock.now();
    const ended = at ?? now;
    const s = this.settings;
    const failed = !outcome.ok || outcome.firstByteMs > s.slowFirstByteMs;
    let b = this.breakers.get(deploymentId);
    if (!b) {
      b = {
        window: [],
        failures: 0,
        run: [],
        lastSuccessAt: Number.NEGATIVE_INFINITY,
        consecutiveFailures: 0,
        openUntil: null,
        cooldownMs: s.cooldownMs,
        probeLeaseUntil: null,
      };
      this.breakers.set(deploymentId, b);
    }

    if (b.openUntil !== null) {
      // Ended before the cool-down was over: in flight when it tripped.
      if (ended < b.openUntil) return;
      // Half-open: this outcome settles the probe.
      b.probeLeaseUntil = null;
      if (failed) {
        b.cooldownMs = Math.min(b.cooldownMs * 2, Math.max(s.maxCooldownMs, s.cooldownMs));
        b.openUntil = now + b.cooldownMs;
        b.consecutiveFailures++;
      } else {
        this.reset(b);
        // A failure that ended before the probe's success is older news than it.
        b.lastSuccessAt = ended;
      }
      return;
    }

    b.window.push(failed);
    if (failed) b.failures++;
    if (b.window.length > s.window && b.window.shift()) b.failures--;
    if (!failed) {
      // Ties keep arrival order: a failure recorded before this success, ending the same
      // millisecond, ended before it.
      b.lastSuccessAt = Math.max(b.lastSuccessAt, ended);
      if (b.run.length > 0) b.run = b.run.filter((f) => f > ended);
    } else if (ended >= b.lastSuccessAt) {
      b.run.push(ended);
    }
    b.consecutiveFailures = b.run.length;

    // Checked after every outcome, success included: the rule is about the window's share, and the
    // outcome that brings the window up to `minRequests` may well be a success.
    const rateTrip = b.window.length >= s.minRequests && b.failures / b.window.length >= s.errorRate;
    if (b.consecutiveFailures >= s.consecutiveFailures || rateTrip) {
      b.cooldownMs = s.cooldownMs;
      b.openUntil = now + b.cooldownMs;
    }
  }

  state(deploymentId: string): DeploymentHealth {
    const b = this.breakers.get(deploymentId);
    if (!b) return { state: 'closed', consecutiveFailures: 0, errorRate: 0, openUntil: null };
    const state: BreakerState = b.openUntil === null ? 'closed' : this.clock.now() < b.openUntil ? 'open' : 'half_open';
    return {
      state,
      consecutiveFailures: b.consecutiveFailures,
      errorRate: b.window.length === 0 ? 0 : b.failures / b.window.length,
      openUntil: b.openUntil,
    };
  }

  snapshot(): Record<string, DeploymentHealth> {
    const out: Record<string, DeploymentHealth> = {};
    for (const id of [...this.breakers.keys()].sort()) out[id] = this.state(id);
    return out;
  }

  private reset(b: Breaker): void {
    b.window = [];
    b.failures = 0;
    b.run = [];
    b.lastSuccessAt = Number.NEGATIVE_INFINITY;
    b.consecutiveFailures = 0;
    b.openUntil = null;
    b.cooldownMs = this.settings.cooldownMs;
    b.probeLeaseUntil = null;
  }
}
