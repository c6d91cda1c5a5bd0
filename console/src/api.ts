// The console's calls to the admin JSON endpoints of its own listener. The session cookie goes along
// by itself (same origin); posts also carry the session's secret (./session.ts), without which the
// server refuses a cookie-authenticated write.
import { forgetSession, sessionSecret } from './session.ts';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function call<T>(
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  extra: Record<string, string> = {},
): Promise<T> {
  const headers: Record<string, string> = { ...extra, accept: 'application/json' };
  if (method === 'POST') {
    headers['content-type'] = 'application/json';
    headers['x-pi-console-secret'] = sessionSecret();
  }
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (res.status === 401) {
    // The session ended (expired, signed out elsewhere, gateway restarted): back to the sign-in form.
    forgetSession();
    location.href = '/console';
    throw new ApiError(401, 'signed out');
  }
  const json = (await bodyOf(res)) as T & { error?: { code?: string; message: string } };
  if (res.status === 403 && json.error?.code === 'session_secret_required') {
    // Signed in again elsewhere in this browser: this tab's secret belongs to the old session.
    forgetSession();
    location.reload();
  }
  if (!res.ok) throw new ApiError(res.status, json.error?.message ?? `HTTP ${res.status}`);
  return json;
}

/** The answer's JSON; an error answer that is not JSON (a proxy's HTML page for a 502, a cut-off
 *  body) is told by its status, not by the parser's "Unexpected token '<'". */
async function bodyOf(res: Response): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch (e) {
    if (res.ok) throw e;
    return {};
  }
}

export const get = <T>(path: string): Promise<T> => call<T>('GET', path);
export const post = <T>(path: string, body: unknown, headers?: Record<string, string>): Promise<T> =>
  call<T>('POST', path, body, headers);

/** A fresh idempotency key: 128 random bits in hex (getRandomValues, which a plain-HTTP page has too). */
export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** A query string of the non-empty fields. */
export function qs(fields: Record<string, string | number | undefined | null>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

export interface Meta {
  config_hash: string;
  workspaces: { id: string; name: string }[];
  models: string[];
  providers: string[];
  endpoints: string[];
  ended: string[];
}

export interface RequestRow {
  id: number;
  trace_id: string;
  time: string;
  workspace: string | null;
  key_id: string | null;
  endpoint: string;
  model_requested: string | null;
  model_served: string | null;
  provider: string | null;
  deployment: string | null;
  attempts: number;
  stream: boolean;
  status: number;
  error_code: string | null;
  ended: string | null;
  latency_ms: number | null;
  ttfb_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  reasoning_tokens: number | null;
  cached_tokens: number | null;
  cost_usd: string | null;
  app_title: string | null;
  app_origin: string | null;
  session_id: string | null;
}

export interface RequestListRow extends RequestRow {
  key_name: string | null;
  key_prefix: string | null;
}

export interface RequestDetail extends RequestRow {
  key: { id: string; name: string | null; prefix: string; workspace: string } | null;
  attempt_list: {
    n: number;
    provider: string;
    model: string;
    deployment: string;
    outcome: string;
    status: number | null;
    ms: number;
  }[];
  ledger: { id: number; kind: string; amount_usd: string; time: string; estimated: boolean }[];
}

export interface SpendLine {
  key: string;
  /** Billed requests (a settlement, $0 included): what `pi-gateway usage` counts. */
  requests: number;
  /** Refused by the gateway before any upstream attempt. */
  rejected: number;
  /** Neither billed nor rejected (every attempt failed, the client left, token counting). */
  unbilled: number;
  cost_usd: string;
  prompt_tokens: number;
  completion_tokens: number;
}

export interface Spend {
  from: string;
  to: string;
  total: Omit<SpendLine, 'key'>;
  by_workspace: SpendLine[];
  by_model: SpendLine[];
  by_provider: SpendLine[];
  by_day: SpendLine[];
}

export interface Wallet {
  workspace: string;
  name: string | null;
  configured: boolean;
  balance_usd: string;
  held_usd: string;
  available_usd: string;
  spend_today_usd: string;
  open_holds: number;
  low_balance_usd: string | null;
  /** Available below low_balance_usd. */
  low_balance: boolean;
}

export interface LedgerRow {
  id: number;
  kind: string;
  amount_usd: string;
  trace_id: string;
  note: string | null;
  time: string;
  model: string | null;
  provider: string | null;
  estimated: boolean;
}

export interface KeyRow {
  id: string;
  prefix: string;
  workspace: string;
  name: string | null;
  state: 'active' | 'revoked' | 'expired';
  rpm: number | null;
  expires_at: string | null;
  created_at: string;
  revoked_at: string | null;
  key?: string;
}

export interface FunnelStage {
  stage: string;
  remaining: number;
  removed: { provider: string; reason: string }[];
  providers?: string[];
}

export interface PreviewDeployment {
  attempt: number | null;
  deployment: string;
  provider: string;
  upstream_model: string;
  tier: number;
  weight: number;
  share_of_tier: number | null;
  down: boolean;
  breaker: string;
  quantization: string | null;
  price: {
    prompt_usd_per_mtok: string | null;
    completion_usd_per_mtok: string | null;
    list_prompt_usd_per_mtok: string | null;
    list_completion_usd_per_mtok: string | null;
    discount_percent: number | null;
  };
}

export interface Preview {
  workspace: string;
  endpoint: string;
  ordering: 'price' | 'weighted_random';
  max_attempts: number;
  policy: Record<string, unknown>;
  eligible: boolean;
  models: { model: string; deployments: PreviewDeployment[]; funnel: FunnelStage[] }[];
}

export interface HealthDeployment {
  id: string;
  provider: string;
  model: string;
  resource: string;
  declared_status: string;
  callable: boolean;
  unservable_reason: string | null;
  serves: 'yes' | 'last_resort' | 'no';
  serves_why: string | null;
  down: boolean;
  breaker: { state: string; consecutive_failures: number; error_rate: number; open_until: string | null };
  recent: {
    attempts: number;
    failures: number;
    failure_rate: number | null;
    ttfb_p50_ms: number | null;
    ttfb_p95_ms: number | null;
  };
}

export interface Health {
  now: string;
  state: string;
  ready: boolean;
  reasons: string[];
  config: { hash: string };
  last_reload: { ok: boolean; hash: string | null; problems: string[]; restart_needed: string[]; at: string } | null;
  recent_window_minutes: number;
  deployments: HealthDeployment[];
}

export interface Series {
  from: string;
  to: string;
  interval: 'hour' | 'day';
  by: 'total' | 'workspace' | 'model' | 'provider';
  buckets: string[];
  series: {
    key: string;
    requests: number[];
    rejected: number[];
    unbilled: number[];
    errors: number[];
    p50_ms: (number | null)[];
    p95_ms: (number | null)[];
    cost_usd: string[];
    total_cost_usd: string;
  }[];
}

export interface KeySpend {
  id: string;
  prefix: string | null;
  name: string | null;
  workspace: string | null;
  state: string | null;
  expires_at: string | null;
  requests: number;
  rejected: number;
  unbilled: number;
  cost_usd: string;
  prompt_tokens: number;
  completion_tokens: number;
  last_used_at: string | null;
}

export interface Warnings {
  now: string;
  expiry_window_days: number;
  low_balance: { workspace: string; name: string; available_usd: string; low_balance_usd: string }[];
  keys_expiring: {
    id: string;
    prefix: string;
    name: string | null;
    workspace: string;
    expires_at: string;
    expires_in_hours: number;
  }[];
}
