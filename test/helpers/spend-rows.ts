// Request-log rows with known latencies, outcomes and costs for the spend-series suites: a gateway's
// own latencies are real time (they cannot be asserted exactly), so the series tests write these
// rows into the log of either store and assert exact percentiles, counts and nano-USD sums.
import type { RequestLogRow } from '../../src/store/types.ts';
import { logRow } from './log-rows.ts';

/** The workspace and key the rows belong to (no known traffic touches them). */
export const SERIES_WORKSPACE = 'slow';
export const SERIES_KEY = 'key_series';
const H09 = Date.UTC(2026, 0, 14, 9, 0, 0);
const H10 = Date.UTC(2026, 0, 14, 10, 0, 0);

function row(n: number, at: number, over: Partial<RequestLogRow>): RequestLogRow {
  return logRow(`series-${n}`, {
    ts: at,
    workspace: SERIES_WORKSPACE,
    key_id: SERIES_KEY,
    model_requested: 'acme/chat-small',
    model_served: 'acme/chat-small',
    provider: 'alpha',
    deployment: 'alpha/chat-small',
    latency_ms: 0,
    ttfb_ms: null,
    prompt_tokens: 10,
    completion_tokens: 5,
    cost_nano: 123_456_789n,
    ...over,
  });
}

/**
 * 2026-01-14 09:00–10:00 UTC: ten billed requests of 100…1000 ms ($0.123456789 each), one refused
 * (429 after 1 ms: not in the percentiles, not an error), one that failed upstream (502 after
 * 5000 ms: unbilled, an error). 10:00–11:00: three billed requests of acme/chat-big through beta,
 * 50, 70 and 60 ms, 1 nano-USD each.
 *
 * Hour 09 (nearest rank over the 11 requests not rejected): p50 = 6th = 600, p95 = 11th = 5000.
 * Hour 10: p50 = 2nd of 3 = 60, p95 = 3rd = 70.
 */
export function seriesRows(): RequestLogRow[] {
  const rows: RequestLogRow[] = [];
  for (let i = 1; i <= 10; i++) rows.push(row(i, H09 + i * 60_000, { latency_ms: i * 100 }));
  rows.push(
    row(11, H09 + 30 * 60_000, {
      status: 429,
      error_code: 'rate_limited',
      ended: 'rejected',
      latency_ms: 1,
      model_served: null,
      provider: null,
      deployment: null,
      attempts: 0,
      prompt_tokens: null,
      completion_tokens: null,
      cost_nano: null,
    }),
    row(12, H09 + 40 * 60_000, {
      status: 502,
      error_code: 'upstream_error',
      ended: 'failed',
      latency_ms: 5000,
      model_served: null,
      provider: null,
      deployment: null,
      prompt_tokens: null,
      completion_tokens: null,
      cost_nano: null,
    }),
  );
  [50, 70, 60].forEach((ms, i) => {
    rows.push(
      row(13 + i, H10 + (i + 1) * 60_000, {
        latency_ms: ms,
        model_requested: 'acme/chat-big',
        model_served: 'acme/chat-big',
        provider: 'beta',
        deployment: 'beta/chat-big',
        cost_nano: 1n,
      }),
    );
  });
  return rows;
}

/** What GET /admin/spend/series?workspace=slow&interval=hour over 09:00–11:00 must answer. */
export const SERIES_TOTAL = {
  key: '',
  requests: [10, 3],
  rejected: [1, 0],
  unbilled: [1, 0],
  errors: [1, 0],
  p50_ms: [600, 60],
  p95_ms: [5000, 70],
  cost_usd: ['1.23456789', '0.000000003'],
  total_cost_usd: '1.234567893',
};
export const SERIES_QUERY =
  '/admin/spend/series?workspace=slow&interval=hour&from=2026-01-14T09:00:00Z&to=2026-01-14T11:00:00Z';
