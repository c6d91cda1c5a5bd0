// The coordinator's side of the breakers under `serve --workers N`: outcomes from every worker are
// judged by one HealthTracker, every change is sent to every worker's mirror, and the single
// half-open probe is granted to one worker at a time. A grant nobody claims within GRANT_MS (that
// worker got no request for the deployment) moves to the next worker; a claimed probe is the
// tracker's, with its lease (120 s), until its outcome arrives or the lease ends (then it is granted again).
import type { Clock } from '../clock.ts';
import type { CompiledDeployment } from '../config/compiled.ts';
import type { HealthTracker, Outcome } from '../routing/health.ts';
import type { BreakerMirrorState } from './protocol.ts';

/** How long a granted probe waits for its worker to claim it before another worker gets it. */
export const GRANT_MS = 1_000;

/** Runs `fn` after `ms`; returns how to cancel it. Injected by tests (the clock rule: no sleeping). */
export type Schedule = (fn: () => void, ms: number) => () => void;

/** Real time: an unref'd timer (it never keeps a stopping thread alive). */
export const realSchedule: Schedule = (fn, ms) => {
  const t = setTimeout(fn, ms);
  t.unref();
  return () => clearTimeout(t);
};

interface Grant {
  worker: number;
  claimed: boolean;
}

export class BreakerGrants {
  private readonly grants = new Map<string, Grant>();
  private readonly timers = new Map<string, () => void>();
  private turn = 0;
  private closed = false;

  readonly tracker: HealthTracker;
  private readonly clock: Clock;
  private readonly deployment: (id: string) => CompiledDeployment | undefined;
  private readonly workers: () => readonly number[];
  private readonly broadcast: (states: BreakerMirrorState[]) => void;
  private readonly schedule_: Schedule;
  constructor(
    tracker: HealthTracker,
    clock: Clock,
    /** The deployment as the current config has it (undefined once a reload removed it). */
    deployment: (id: string) => CompiledDeployment | undefined,
    /** The workers that can take a probe now (ready, not draining). */
    workers: () => readonly number[],
    /** Sends changed states to every worker. */
    broadcast: (states: BreakerMirrorState[]) => void,
    schedule_: Schedule = realSchedule,
  ) {
    this.tracker = tracker;
    this.clock = clock;
    this.deployment = deployment;
    this.workers = workers;
    this.broadcast = broadcast;
    this.schedule_ = schedule_;
  }

  /** Every breaker as the mirrors should have it (a worker that just started). */
  states(): BreakerMirrorState[] {
    return Object.keys(this.tracker.snapshot()).map((id) => this.mirror(id));
  }

  record(deploymentId: string, outcome: Outcome, at?: number): void {
    const before = this.tracker.state(deploymentId).openUntil;
    this.tracker.record(deploymentId, outcome, at);
    const after = this.tracker.state(deploymentId).openUntil;
    if (before === after) return;
    this.clearGrant(deploymentId);
    if (after !== null) this.schedule(deploymentId, after);
    this.broadcast([this.mirror(deploymentId)]);
  }

  claimed(deploymentId: string, worker: number): void {
    const g = this.grants.get(deploymentId);
    if (g && g.worker === worker) {
      g.claimed = true;
      this.cancelTimer(deploymentId);
      // A probe whose outcome never arrives (its worker lost the request without a word) lapses
      // with the tracker's lease, and the next worker gets it, as in process.
      if (!this.closed)
        this.timers.set(
          deploymentId,
          this.schedule_(() => this.lapse(deploymentId, worker), this.tracker.probeLeaseMs),
        );
    }
  }

  /** A claimed probe's lease ended without its outcome: grant it again. */
  private lapse(deploymentId: string, worker: number): void {
    this.timers.delete(deploymentId);
    const g = this.grants.get(deploymentId);
    if (!g || g.worker !== worker || !g.claimed) return;
    this.grants.delete(deploymentId);
    this.grant(deploymentId);
  }

  /** The worker gave its probe back (the request was answered by an earlier deployment). */
  released(deploymentId: string, worker: number): void {
    const g = this.grants.get(deploymentId);
    if (!g || g.worker !== worker) return;
    this.tracker.releaseProbe(deploymentId);
    this.clearGrant(deploymentId);
    this.grant(deploymentId);
  }

  /** A worker is gone: its grants go to others. */
  workerGone(worker: number): void {
    for (const [id, g] of [...this.grants]) {
      if (g.worker !== worker) continue;
      this.tracker.releaseProbe(id);
      this.clearGrant(id);
      this.grant(id);
    }
  }

  close(): void {
    this.closed = true;
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
  }

  private mirror(deploymentId: string): BreakerMirrorState {
    const g = this.grants.get(deploymentId);
    return {
      deploymentId,
      openUntil: this.tracker.state(deploymentId).openUntil,
      probeWorker: g && !g.claimed ? g.worker : null,
    };
  }

  /** At the end of the cool-down, grant the probe. */
  private schedule(deploymentId: string, openUntil: number): void {
    this.cancelTimer(deploymentId);
    if (this.closed) return;
    this.timers.set(
      deploymentId,
      this.schedule_(() => this.grant(deploymentId), Math.max(0, openUntil - this.clock.now())),
    );
  }

  private grant(deploymentId: string): void {
    this.timers.delete(deploymentId);
    if (this.closed) return;
    const d = this.deployment(deploymentId);
    const workers = this.workers();
    const openUntil = this.tracker.state(deploymentId).openUntil;
    if (!d || openUntil === null || workers.length === 0) return;
    const now = this.clock.now();
    if (now < openUntil) {
      this.schedule(deploymentId, openUntil);
      return;
    }
    // The tracker's own claim: false means the probe was free and is now held for this grant.
    if (this.tracker.isDown(d, now)) {
      this.schedule(deploymentId, now + GRANT_MS);
      return;
    }
    const worker = workers[this.turn++ % workers.length] as number;
    this.grants.set(deploymentId, { worker, claimed: false });
    this.timers.set(
      deploymentId,
      this.schedule_(() => this.expire(deploymentId, worker), GRANT_MS),
    );
    this.broadcast([this.mirror(deploymentId)]);
  }

  /** Unclaimed for GRANT_MS: the next worker gets it. */
  private expire(deploymentId: string, worker: number): void {
    this.timers.delete(deploymentId);
    const g = this.grants.get(deploymentId);
    if (!g || g.worker !== worker || g.claimed) return;
    this.tracker.releaseProbe(deploymentId);
    this.grants.delete(deploymentId);
    this.grant(deploymentId);
  }

  private clearGrant(deploymentId: string): void {
    this.grants.delete(deploymentId);
    this.cancelTimer(deploymentId);
  }

  private cancelTimer(deploymentId: string): void {
    this.timers.get(deploymentId)?.();
    this.timers.delete(deploymentId);
  }
}
