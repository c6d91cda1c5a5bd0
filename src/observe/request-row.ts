// The request-log row: what one finished request records, written by the store's request log and read
// by every other observer of the request (access log, metrics, traces). Nothing secret goes here.
import type { RequestEnd } from './request-end.ts';

/** The `endpoint` of token counting's rows (POST /v1/messages/count_tokens): not an endpoint of the
 *  vocabulary (no model is registered for it; it counts on a Messages deployment that can). */
export const COUNT_TOKENS_ENDPOINT = 'count_tokens';

/** Endpoints whose answers are never billed: no hold, no settlement, so a 2xx row of one has no
 *  ledger rows by design (`ledger verify` does not ask for them). */
export const UNBILLED_ENDPOINTS: readonly string[] = [COUNT_TOKENS_ENDPOINT];

/** One upstream attempt of a request, as logged. */
export interface AttemptLogEntry {
  provider: string;
  model: string;
  deployment: string;
  /** As the failover loop describes it: `ok`, `status_<code>`, `committed_<why>`, or the failure reason. */
  outcome: string;
  /** Upstream HTTP status; null when none was received. */
  status: number | null;
  ms: number;
}

/**
 * One request-log row. Nothing secret goes here: no API key, credential or prompt text — only ids,
 * routing outcome, timings, token counts and the sanitised attribution headers.
 */
export interface RequestLogRow {
  trace_id: string;
  ts: number;
  workspace: string | null;
  key_id: string | null;
  endpoint: string;
  model_requested: string | null;
  model_served: string | null;
  provider: string | null;
  deployment: string | null;
  attempts: number;
  attempts_json: AttemptLogEntry[];
  stream: boolean;
  status: number;
  error_code: string | null;
  latency_ms: number | null;
  ttfb_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  reasoning_tokens: number | null;
  cached_tokens: number | null;
  cost_nano: bigint | null;
  app_title: string | null;
  app_origin: string | null;
  session_id: string | null;
  /** How the request ended; null only on rows written before this was recorded. */
  ended: RequestEnd | null;
}
