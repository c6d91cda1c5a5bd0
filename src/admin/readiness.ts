// Whether the gateway should receive traffic now, and why not: the lifecycle is `ready` (not
// starting, draining or stopped), a config is loaded, the store answers, and at least one deployment
// can be called (active, on an active resource, with its upstream credential stored). Also reports
// the serving config's hash and the last reload's result.
import { unservableReason } from '../availability/serving.ts';
import type { ConfigIndex } from '../config/index.ts';
import { type Lifecycle, type LifecycleState, type ReloadJson, reloadJson } from '../observe/lifecycle.ts';

/** What readiness reads of the running gateway. */
export interface ServingView {
  /** The config serving now (after a reload, the new one). */
  index(): ConfigIndex;
  /** Names of the stored upstream credentials; throws when the store does not answer. */
  credentialNames(): ReadonlySet<string>;
  /** The serving threads of `serve --workers N` (absent: one process serves). */
  workers?(): readonly WorkerReadiness[];
}

/** One serving thread as readiness reports it. */
export interface WorkerReadiness {
  worker: number;
  state: 'starting' | 'ready' | 'draining' | 'exited';
  restarts: number;
  threadId: number | null;
}

export interface ReadinessReport {
  status: 'ready' | 'not_ready';
  state: LifecycleState;
  /** Why not ready, one sentence each; empty when ready. */
  reasons: string[];
  config: { loaded: boolean; hash: string | null };
  store: { ok: boolean; error?: string };
  deployments: { total: number; callable: number };
  last_reload: ReloadJson | null;
  /** `serve --workers N`: every serving thread; ready only while all of them listen. */
  workers?: { worker: number; state: WorkerReadiness['state']; restarts: number; thread_id: number | null }[];
}

const STATE_REASON: Record<Exclude<LifecycleState, 'ready'>, string> = {
  starting: 'starting: the public listener is not up yet',
  draining: 'draining: shutting down, in-flight requests are finishing',
  stopped: 'stopped: the public listener is closed',
};

export function readiness(lifecycle: Lifecycle, view: ServingView | null): ReadinessReport {
  const state = lifecycle.state;
  const reasons: string[] = state === 'ready' ? [] : [STATE_REASON[state]];
  const last = lifecycle.lastReload;
  const report: ReadinessReport = {
    status: 'not_ready',
    state,
    reasons,
    config: { loaded: false, hash: null },
    store: { ok: false },
    deployments: { total: 0, callable: 0 },
    last_reload: last && reloadJson(last),
  };
  if (!view) {
    reasons.push('no config is loaded yet');
    return report;
  }
  const workers = view.workers?.();
  if (workers) {
    report.workers = workers.map((w) => ({
      worker: w.worker,
      state: w.state,
      restarts: w.restarts,
      thread_id: w.threadId,
    }));
    for (const w of workers)
      if (w.state !== 'ready' && state === 'ready') reasons.push(`worker ${w.worker} is not serving (${w.state})`);
  }
  const index = view.index();
  report.config = { loaded: true, hash: index.config.sourceHash };
  let names: ReadonlySet<string>;
  try {
    names = view.credentialNames();
    report.store = { ok: true };
  } catch (err) {
    report.store = { ok: false, error: err instanceof Error ? err.message : String(err) };
    reasons.push('the store does not answer');
    return report;
  }
  const creds = { has: (name: string) => names.has(name) };
  const deployments = index.config.deployments;
  const callable = deployments.filter((d) => unservableReason(index, d, creds) === null).length;
  report.deployments = { total: deployments.length, callable };
  if (callable === 0)
    reasons.push(
      'no deployment can be called: none is active with its upstream credential stored (pi-gateway secret set NAME)',
    );
  if (reasons.length === 0) report.status = 'ready';
  return report;
}
