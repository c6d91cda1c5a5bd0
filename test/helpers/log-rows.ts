// A request-log row for tests that write the log directly: every column set (a billed, completed
// chat completion), the test's own values over it.
import type { RequestLogRow } from '../../src/store/types.ts';

export function logRow(traceId: string, over: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    trace_id: traceId,
    ts: 1,
    workspace: 'w',
    key_id: 'k',
    endpoint: 'chat_completions',
    model_requested: 'm',
    model_served: 'm',
    provider: 'p',
    deployment: 'd',
    attempts: 1,
    attempts_json: [],
    stream: false,
    status: 200,
    error_code: null,
    latency_ms: 5,
    ttfb_ms: 2,
    prompt_tokens: 1,
    completion_tokens: 1,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: null,
    app_title: null,
    app_origin: null,
    session_id: null,
    ended: 'completed',
    ...over,
  };
}
