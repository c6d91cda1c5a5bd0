// The gateway's process lifecycle as steps over the request path: the graceful drain (SIGTERM) and
// the record a config reload (SIGHUP) leaves. The composition root (src/gateway.ts) calls these; the
// CLI sends the signals.
//
// Drain, in order:
//   1. stop accepting: the listening socket closes (the kernel refuses new connections); answers
//      from now on carry `Connection: close`, so a request that still arrives on a kept-alive
//      connection is served like any in-flight one and its connection then closed;
//   2. in-flight requests and streams run on, up to the deadline;
//   3. at the deadline the stop switch ends the rest: a live stream gets the protocol's error event
//      (never its normal end marker) and is logged `drained`, billed on the estimate; a request with
//      nothing committed yet gets 503 provider_unavailable; no new attempt starts;
//   4. each request leaves only after its settlement or release and its request-log row, so once
//      none is in flight every hold is settled or released and every row queued;
//   5. close: connections dropped, the wallet book and request log flushed.
// A request that does not finish within DRAIN_GRACE_MS of the stop (a client that stopped sending
// its upload) is dropped with its connection; if it still has not finished, its hold stays open in
// the database and is released at the next start (reported as `drain_incomplete`).
import type { GatewayContext } from './context.ts';

/** How long requests may take to wind down after the stop switch, and again after close. */
export const DRAIN_GRACE_MS = 5000;

export interface DrainReport {
  /** Requests in flight when the drain began. */
  inFlightAtStart: number;
  /** Requests still running at the deadline, ended by the stop switch. */
  endedAtDeadline: number;
  /** Requests that never finished (their holds are released at the next start). */
  unfinished: number;
  ms: number;
}

/** One config reload attempt: what the admin listener's readiness and metrics report. */
export interface ReloadResult {
  ok: boolean;
  /** sha256 of the config files it read (applied when ok; refused otherwise); null if unreadable. */
  hash: string | null;
  /** Every problem as `file:line:col path: message`; empty when ok. */
  problems: string[];
  /** What the new config changes that only a restart applies (the running server keeps the old). */
  restartNeeded: string[];
  /** When it happened (ms since the epoch). */
  at: number;
}

export interface DrainSteps {
  ctx: GatewayContext;
  /** Step 1 (the server's stopAccepting). */
  stopAccepting(): void;
  /** Step 5. */
  close(): Promise<void>;
  log(event: string, fields?: Record<string, unknown>): void;
  /** From the current config (limits.drain_timeout_ms); tests use short ones. */
  deadlineMs: number;
}

/** Resolves with `true` when idle came first, `false` after `ms`. */
function idleWithin(ctx: GatewayContext, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void ctx.inFlight.idle().then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

export async function drainGateway(steps: DrainSteps): Promise<DrainReport> {
  const { ctx, log } = steps;
  const started = performance.now();
  steps.stopAccepting();
  const inFlightAtStart = ctx.inFlight.size;
  log('draining', { in_flight: inFlightAtStart, deadline_ms: steps.deadlineMs });
  let endedAtDeadline = 0;
  if (!(await idleWithin(ctx, steps.deadlineMs))) {
    endedAtDeadline = ctx.inFlight.size;
    log('drain_deadline', { ending: endedAtDeadline });
    ctx.stop.stop();
    await idleWithin(ctx, DRAIN_GRACE_MS);
  }
  const close = steps.close();
  // Dropping the connections aborts what still waits on a client; give those a moment to log.
  if (ctx.inFlight.size > 0) await idleWithin(ctx, DRAIN_GRACE_MS);
  await close;
  const unfinished = ctx.inFlight.size;
  if (unfinished > 0) log('drain_incomplete', { unfinished });
  const report = { inFlightAtStart, endedAtDeadline, unfinished, ms: Math.round(performance.now() - started) };
  log('drained', drainedFields(report));
  return report;
}

/** The `drained` log line's fields (snake_case, like every log field). */
export function drainedFields(r: DrainReport): Record<string, number> {
  return {
    in_flight_at_start: r.inFlightAtStart,
    ended_at_deadline: r.endedAtDeadline,
    unfinished: r.unfinished,
    ms: r.ms,
  };
}
