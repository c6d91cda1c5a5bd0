// Health for operators: GET /admin/health — every deployment's breaker (state, failures in a row,
// the failure share of its window, cool-down end), whether it can be called at all, and what the
// request log saw of it recently (attempts, failures, time to first byte); plus the serving config's
// hash, the last reload's result and readiness.
import type { OperatorView } from '../admin/operator-view.ts';
import { readiness } from '../admin/readiness.ts';
import { unservableReason } from '../availability/serving.ts';
import type { Lifecycle } from '../observe/lifecycle.ts';
import type { RequestLogEntry } from '../store/sqlite/store.ts';
import { iso } from './http.ts';

/** The recent window the log-based figures cover. */
export const RECENT_MS = 15 * 60_000;
/** At most this many recent rows are read for them. */
const RECENT_ROWS = 5000;

interface Recent {
  attempts: number;
  failures: number;
  ttfb: number[];
}

/** A failed attempt for health: not answered, a 5xx or 429, a broken or empty answer. A client's 4xx is not. */
export function failedForHealth(outcome: string): boolean {
  if (outcome === 'ok' || outcome.startsWith('committed')) return false;
  const status = /^status_(\d{3})$/.exec(outcome);
  if (status) return Number(status[1]) >= 500 || status[1] === '429';
  return outcome !== 'client_aborted';
}

function recentByDeployment(rows: readonly RequestLogEntry[]): Map<string, Recent> {
  const out = new Map<string, Recent>();
  const of = (id: string): Recent => {
    let r = out.get(id);
    if (!r) out.set(id, (r = { attempts: 0, failures: 0, ttfb: [] }));
    return r;
  };
  for (const row of rows) {
    for (const a of row.attempts_json) {
      const r = of(a.deployment);
      r.attempts++;
      if (failedForHealth(a.outcome)) r.failures++;
    }
    if (row.deployment !== null && row.ttfb_ms !== null) of(row.deployment).ttfb.push(row.ttfb_ms);
  }
  return out;
}

/** The q-quantile (nearest rank) of some numbers, or null when there are none. */
function quantile(xs: number[], q: number): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] as number;
}

/**
 * Whether the router would send traffic to a deployment now, in one word and why: `yes`;
 * `last_resort` — declared down, or down by its breaker: tried only after every healthy deployment
 * of its tier; `no` — it cannot be called at all (inactive, no sealed credential). `callable` alone
 * says only the last, so a deployment declared down read "callable" as if it were serving.
 */
function servesJson(
  declared: string,
  unservable: string | null,
  down: boolean,
): { serves: 'yes' | 'last_resort' | 'no'; serves_why: string | null } {
  if (unservable !== null) return { serves: 'no', serves_why: unservable };
  if (declared === 'down') return { serves: 'last_resort', serves_why: 'declared down in the config' };
  if (down) return { serves: 'last_resort', serves_why: 'down by its breaker' };
  return { serves: 'yes', serves_why: null };
}

export async function healthReport(view: OperatorView, lifecycle: Lifecycle): Promise<unknown> {
  const now = view.now();
  const index = view.index();
  const recent = recentByDeployment(
    (await view.store.requestLog.search({ fromMs: now - RECENT_MS }, RECENT_ROWS)).rows,
  );
  const ready = readiness(lifecycle, view);
  const deployments = index.config.deployments.map((d) => {
    const b = view.health.state(d.id);
    const r = recent.get(d.id) ?? { attempts: 0, failures: 0, ttfb: [] };
    const unservable = unservableReason(index, d, view.creds);
    const down = view.health.passive.isDown(d, now);
    return {
      id: d.id,
      provider: d.platform,
      model: d.model,
      resource: d.resource,
      declared_status: d.status,
      callable: unservable === null,
      unservable_reason: unservable,
      down,
      ...servesJson(d.status, unservable, down),
      breaker: {
        state: b.state,
        consecutive_failures: b.consecutiveFailures,
        error_rate: b.errorRate,
        open_until: iso(b.openUntil),
      },
      recent: {
        attempts: r.attempts,
        failures: r.failures,
        failure_rate: r.attempts === 0 ? null : r.failures / r.attempts,
        ttfb_p50_ms: quantile(r.ttfb, 0.5),
        ttfb_p95_ms: quantile(r.ttfb, 0.95),
      },
    };
  });
  return {
    now: iso(now),
    state: lifecycle.state,
    ready: ready.status === 'ready',
    reasons: ready.reasons,
    config: { hash: index.config.sourceHash },
    last_reload: ready.last_reload,
    recent_window_minutes: RECENT_MS / 60_000,
    deployments,
  };
}
