// A serving thread's breaker board under `serve --workers N`: one breaker view per deployment for
// every thread. The coordinator's HealthTracker is the only place outcomes are judged; each worker
// keeps a mirror it is sent on every change, because routing reads breakers synchronously. The
// single half-open probe is granted by the coordinator to one worker at a time: only that worker's
// mirror answers "up" to one caller, and tells the coordinator it claimed it (or gives it back when
// the request never reached the deployment, so the coordinator can grant it again).
import type { Clock } from '../clock.ts';
import type { HealthView } from '../availability/serving.ts';
import type { CompiledDeployment } from '../config/compiled.ts';
import type { BreakerBoard, DeploymentHealth, Outcome } from '../routing/health.ts';
import type { CoordinatorClient } from './coordinator-client.ts';
import type { BreakerMirrorState } from './protocol.ts';

interface Mirrored extends BreakerMirrorState {
  /** This worker handed out its granted probe (until the next state from the coordinator). */
  claimed: boolean;
}

export class BreakerMirror implements BreakerBoard {
  private readonly states = new Map<string, Mirrored>();
  readonly passive: HealthView;

  private readonly worker: number;
  private readonly client: Pick<CoordinatorClient, 'tell' | 'tellLater'>;
  private readonly clock: Clock;
  constructor(
    worker: number,
    client: Pick<CoordinatorClient, 'tell' | 'tellLater'>,
    clock: Clock,
    initial: readonly BreakerMirrorState[] = [],
  ) {
    this.worker = worker;
    this.client = client;
    this.clock = clock;
    this.update(initial);
    this.passive = { isDown: (d) => d.status === 'down' || (this.states.get(d.id)?.openUntil ?? null) !== null };
  }

  /** The coordinator's latest states (sent on every change). */
  update(states: readonly BreakerMirrorState[]): void {
    for (const s of states) this.states.set(s.deploymentId, { ...s, claimed: false });
  }

  isDown(d: CompiledDeployment, nowMs: number): boolean {
    if (d.status === 'down') return true;
    const s = this.states.get(d.id);
    if (!s || s.openUntil === null) return false;
    if (nowMs < s.openUntil) return true;
    // Half-open: up for one caller, on the worker the probe was granted to.
    if (s.probeWorker !== this.worker || s.claimed) return true;
    s.claimed = true;
    this.client.tell({ op: 'probe-claimed', deploymentId: d.id });
    return false;
  }

  /** This worker holds the half-open probe's grant and has not handed it out yet. */
  hasGrant(deploymentId: string): boolean {
    const s = this.states.get(deploymentId);
    return s !== undefined && s.probeWorker === this.worker && !s.claimed;
  }

  releaseProbe(deploymentId: string): void {
    const s = this.states.get(deploymentId);
    if (!s?.claimed) return;
    // The grant is gone with it: the coordinator grants the probe again (perhaps to another worker).
    s.claimed = false;
    s.probeWorker = null;
    this.client.tell({ op: 'probe-release', deploymentId });
  }

  /** A success on a closed breaker changes nothing anyone waits for: it rides with the next message
   *  (in order: a failure told after it still arrives after it); anything else goes this turn. Each
   *  carries when it ended: another thread's failure may reach the coordinator before it. */
  record(deploymentId: string, outcome: Outcome, at: number = this.clock.now()): void {
    const call = { op: 'record', deploymentId, outcome, at } as const;
    if (outcome.ok && (this.states.get(deploymentId)?.openUntil ?? null) === null) this.client.tellLater(call);
    else this.client.tell(call);
  }

  state(deploymentId: string): DeploymentHealth {
    const s = this.states.get(deploymentId);
    if (!s || s.openUntil === null) return { state: 'closed', consecutiveFailures: 0, errorRate: 0, openUntil: null };
    return {
      state: this.clock.now() < s.openUntil ? 'open' : 'half_open',
      consecutiveFailures: 0,
      errorRate: 0,
      openUntil: s.openUntil,
    };
  }

  /** The coordinator's tracker takes a reload's thresholds. */
  reconfigure(): void {}
}
