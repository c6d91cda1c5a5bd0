// The one shape of every operational log line the gateway writes (stderr, one JSON object a line):
// `time` (ISO 8601 UTC with milliseconds), `level`, `event`, then the event's own fields, all in
// snake_case. The level is the event's, from one table, so every writer — the composition root, the
// CLI, the writer thread, the serving threads — gives an event the same level (docs/observability.md):
//
//   error  something failed that an operator must look at: a bug (an exception nothing expected),
//          money or records at risk (a ledger, settlement or request-log write that failed, holds
//          left open), a part of the gateway down (a serving thread, the store), nothing servable
//   warn   the gateway keeps serving, degraded or on a fallback, or something in its config or
//          surroundings wants attention (a missing credential, a refused reload, a collector or
//          Redis that does not answer, requests cut at the drain deadline, a slow commit)
//   info   the expected life of the process (listening, stopping, draining, drained, a reload
//          applied, a recovery)

export type LogLevel = 'info' | 'warn' | 'error';

type LevelRule = LogLevel | ((fields: Readonly<Record<string, unknown>>) => LogLevel);

/** The level of every event the gateway logs. */
export const LOG_LEVELS: Readonly<Record<string, LevelRule>> = {
  // The life of the process.
  listening: 'info',
  stopping: 'info',
  draining: 'info',
  drained: 'info',
  redis_recovered: 'info',
  escrow_resumed: 'info',
  per_node_limits: 'info',
  config_reload: (f) => (f['ok'] === true ? 'info' : 'warn'),
  // Serving, degraded or needing attention.
  admin_token_unused: 'warn',
  admin_sign_in_failed: 'warn',
  admin_sign_in_limited: 'warn',
  body_budget_spent: 'warn',
  workers_above_cores: 'warn',
  credential_missing: 'warn',
  credential_check_failed: 'warn',
  secret_unused: 'warn',
  drain_deadline: 'warn',
  stopping_now: 'warn',
  reload_problem: 'warn',
  redis_unreachable: 'warn',
  released_orphaned_holds: 'warn',
  released_lapsed_holds: 'warn',
  released_lapsed_slices: 'warn',
  escrow_paused: 'warn',
  settlement_capped: 'warn',
  pin_set_failed: 'warn',
  slice_lapsed: 'warn',
  sealed_secret_kept_after_rotation: 'warn',
  store_connection_lost: 'warn',
  trace_export_failed: 'warn',
  token_fetch_failed: 'warn',
  usage_capped: 'warn',
  writer_slow_commit: 'warn',
  // Failures.
  admin_error: 'error',
  audit_write_failed: 'error',
  drain_incomplete: 'error',
  lease_tick_failed: 'error',
  ledger_write_failed: 'error',
  nothing_servable: 'error',
  observer_failed: 'error',
  release_failed: 'error',
  reload_failed: 'error',
  request_failed: 'error',
  request_log_write_failed: 'error',
  sealed_secret_refused: 'error',
  settlement_refused: 'error',
  settlement_failed: 'error',
  slice_return_failed: 'error',
  stop_failed: 'error',
  store_unavailable: 'error',
  uncaught_error: 'error',
  unexpected_error: 'error',
  worker_exited: 'error',
  worker_failed: 'error',
  worker_restart_failed: 'error',
  worker_release_failed: 'error',
  writer_thread_failed: 'error',
};

/** An event missing from the table (a test keeps the table whole) still stands out. */
const UNLISTED: LogLevel = 'warn';

export function logLevel(event: string, fields: Readonly<Record<string, unknown>> = {}): LogLevel {
  const rule = Object.hasOwn(LOG_LEVELS, event) ? LOG_LEVELS[event] : undefined;
  if (rule === undefined) return UNLISTED;
  return typeof rule === 'function' ? rule(fields) : rule;
}

/** One log line, newline included. `time`, `level` and `event` come first and are never a field's. */
export function logLine(event: string, fields: Readonly<Record<string, unknown>> = {}, now: Date = new Date()): string {
  const time = now.toISOString();
  const level = logLevel(event, fields);
  const line: Record<string, unknown> = { time, level, event, ...fields };
  // A field of the same name does not replace them (the keys keep their first place).
  line['time'] = time;
  line['level'] = level;
  line['event'] = event;
  return JSON.stringify(line) + '\n';
}
