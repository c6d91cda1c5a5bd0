// Where the running gateway is in its life (starting → ready → draining → stopped) and how its last
// config reload went. The composition root owns one (src/gateway.ts, `Gateway.lifecycle`); the admin
// listener's readiness reads it, metrics count its reloads, the shutdown path flips it to draining and
// the reload path records each result. Nothing here decides anything: it only holds the state.
import { type Clock, systemClock } from '../clock.ts';

/**
 *   starting   the process is up, the public listener is not (yet): not ready
 *   ready      the public listener accepts requests
 *   draining   shutting down: no new connections, in-flight requests finish (not ready)
 *   stopped    the public listener is closed (not ready)
 */
export type LifecycleState = 'starting' | 'ready' | 'draining' | 'stopped';

/** What a config reload reports (helper of `pi-gateway reload` / SIGHUP). */
export interface ReloadResult {
  ok: boolean;
  /** sourceHash of the config serving after the attempt (the new one on success, the old one kept
   *  on failure); null when unknown. */
  hash: string | null;
  /** Every problem as `file:line:col path: message`; empty on success. */
  problems: readonly string[];
  /** What the new config changes that only a restart applies (empty or absent when nothing). */
  restartNeeded?: readonly string[];
}

/** A reload result with the instant it was recorded (epoch ms). */
export interface ReloadRecord extends ReloadResult {
  at: number;
}

/** A reload record as the gateway writes it out (readiness's `last_reload`, the serving process's
 *  `<db>.reload.json`): snake_case, the instant in ISO 8601 UTC like every time it writes. */
export interface ReloadJson {
  ok: boolean;
  hash: string | null;
  problems: string[];
  restart_needed: string[];
  at: string;
}

export function reloadJson(r: ReloadRecord): ReloadJson {
  return {
    ok: r.ok,
    hash: r.hash,
    problems: [...r.problems],
    restart_needed: [...(r.restartNeeded ?? [])],
    at: new Date(r.at).toISOString(),
  };
}

export class Lifecycle {
  private current: LifecycleState = 'starting';
  private last: ReloadRecord | null = null;
  private readonly reloadListeners: ((r: ReloadRecord) => void)[] = [];

  private readonly clock: Clock;
  constructor(clock: Clock = systemClock) {
    this.clock = clock;
  }

  get state(): LifecycleState {
    return this.current;
  }

  /** The public listener is up. Only a starting gateway becomes ready this way. */
  markReady(): void {
    if (this.current === 'starting') this.current = 'ready';
  }

  /** True from the moment shutdown began (draining or stopped). */
  get draining(): boolean {
    return this.current === 'draining' || this.current === 'stopped';
  }

  /** `true` starts draining (readiness turns 503 at once); `false` returns a draining gateway to
   *  ready (a cancelled drain). A stopped gateway stays stopped. */
  set draining(on: boolean) {
    if (this.current === 'stopped') return;
    if (on) this.current = 'draining';
    else if (this.current === 'draining') this.current = 'ready';
  }

  /** The public listener is closed for good. */
  markStopped(): void {
    this.current = 'stopped';
  }

  /** The last reload's result, or null when the config was never reloaded. */
  get lastReload(): ReloadRecord | null {
    return this.last;
  }

  /** Records a reload's result (readiness shows it; metrics count it by result). */
  recordReload(result: ReloadResult): ReloadRecord {
    const record: ReloadRecord = {
      ok: result.ok,
      hash: result.hash,
      problems: [...result.problems],
      restartNeeded: [...(result.restartNeeded ?? [])],
      at: this.clock.now(),
    };
    this.last = record;
    for (const l of this.reloadListeners) l(record);
    return record;
  }

  /** Calls `listener` with every reload result recorded from now on. */
  onReload(listener: (r: ReloadRecord) => void): void {
    this.reloadListeners.push(listener);
  }
}
