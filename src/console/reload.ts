// POST /admin/reload: re-reads, validates and compiles the config directory the process serves and
// swaps it in — the same reload as SIGHUP, queued behind any reload already running. It exists for
// the processes no local signal reaches: each node of a fleet, reloaded from one operator machine
// (`pi-gateway reload --admin URL`), with the operator token the console uses. The process that can
// reload (the CLI's runtime, which knows the config directory) hands its reloader to the admin
// listener; until then, and from the first moment of a drain, the route answers 503.
//   200  the new config serves: { ok: true, hash, problems: [], restart_needed, at, pid }
//   422  the config has problems and was refused; the running one stays: the same fields, ok false,
//        every problem as `file:line:col path: message`, and error.code `config_invalid`
import type { Lifecycle, ReloadResult } from '../observe/lifecycle.ts';
import { ConsoleError } from './http.ts';

/** A reload's result as the reloading process records it (`at`: epoch ms). */
export interface ReloadOutcome extends ReloadResult {
  at: number;
}

/** Runs one reload of the serving config directory (serialised with SIGHUP's by its owner). */
export type ConfigReloader = () => Promise<ReloadOutcome>;

export interface ReloadAnswer {
  ok: boolean;
  hash: string | null;
  problems: string[];
  restart_needed: string[];
  /** ISO-8601 UTC. */
  at: string;
  /** The process that reloaded (a fleet's nodes are told apart by address and pid). */
  pid: number;
  error?: { code: 'config_invalid'; message: string };
}

export async function reloadConfig(
  lifecycle: Lifecycle,
  reloader: ConfigReloader | null,
  attached: boolean,
): Promise<ReloadAnswer> {
  if (lifecycle.draining)
    throw new ConsoleError(503, 'draining', 'the gateway is shutting down; it reloads nothing now');
  if (reloader === null) {
    if (!attached) throw new ConsoleError(503, 'starting', 'the gateway is still starting');
    throw new ConsoleError(
      503,
      'reload_unavailable',
      'this process does not reload its config through the admin listener',
    );
  }
  let r: ReloadOutcome;
  try {
    r = await reloader();
  } catch (err) {
    throw new ConsoleError(
      500,
      'reload_failed',
      `the reload failed: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const answer: ReloadAnswer = {
    ok: r.ok,
    hash: r.hash,
    problems: [...r.problems],
    restart_needed: [...(r.restartNeeded ?? [])],
    at: new Date(r.at).toISOString(),
    pid: process.pid,
  };
  if (!r.ok) {
    const n = r.problems.length;
    answer.error = {
      code: 'config_invalid',
      message: `the config has ${n} problem${n === 1 ? '' : 's'}; the running config is kept`,
    };
  }
  return answer;
}
