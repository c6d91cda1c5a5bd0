// Reading a platform's own error bodies into the gateway's error model (ProviderError), for adapters
// whose platform does not answer errors in the inbound protocol's shape: Google's
// `{"error":{"code":429,"message":…,"status":"RESOURCE_EXHAUSTED"}}` (also sent as a one-element
// array), Azure's `{"error":{"code":"429","message":…}}` without a `type`, a front door's
// `{"statusCode":401,"message":…}`, AWS's `{"message":…}`, or no JSON at all. A body already in the
// protocol's shape is left alone (null): it goes on byte for byte, as a first-party provider's does.
import { type ProviderError, errorTypeForStatus } from '../errors.ts';

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The body parsed as JSON, or undefined when it is not JSON. */
export function jsonOf(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** Already the inbound protocol's error: Messages `{"type":"error","error":{"type":…}}`; the OpenAI
 *  protocols' `{"error":{"message":…,"type":…}}` (both strings: what their SDKs read). */
export function inProtocolShape(value: unknown, endpoint: string): boolean {
  if (!isObject(value) || !isObject(value['error'])) return false;
  const error = value['error'];
  if (endpoint === 'messages') return value['type'] === 'error' && typeof error['type'] === 'string';
  return typeof error['message'] === 'string' && typeof error['type'] === 'string';
}

/** A string code worth passing on: a name, not the HTTP status again in digits. */
function codeOf(v: unknown): string | null {
  return typeof v === 'string' && v !== '' && !/^\d+$/.test(v) ? v : null;
}

/** Google's error object (`error.status` is its code: RESOURCE_EXHAUSTED, PERMISSION_DENIED…). */
function googleError(value: unknown): { message: string; code: string | null } | null {
  const first = Array.isArray(value) ? (value[0] as unknown) : value;
  if (!isObject(first) || !isObject(first['error'])) return null;
  const e = first['error'];
  if (typeof e['message'] !== 'string' || typeof e['code'] !== 'number') return null;
  return { message: e['message'], code: codeOf(e['status']) };
}

const OWN_MEMBERS = new Set(['message', 'type', 'code', 'status']);

/** An OpenAI-like error object missing what the protocol needs (Azure's lacks `type`): its message,
 *  its code, and its other members kept (Azure's `innererror`, `param`). */
function openAiLikeError(value: unknown): { message: string; code: string | null; extra: Json } | null {
  if (!isObject(value) || !isObject(value['error'])) return null;
  const e = value['error'];
  if (typeof e['message'] !== 'string') return null;
  const extra: Json = {};
  for (const [k, v] of Object.entries(e)) if (!OWN_MEMBERS.has(k)) extra[k] = v;
  return { message: e['message'], code: codeOf(e['code']), extra };
}

/** A bare `{"message": …}` (AWS, API gateways in front of a cloud), also spelled `Message`. */
export function plainMessage(value: unknown): string | null {
  if (!isObject(value)) return null;
  const m = value['message'] ?? value['Message'];
  return typeof m === 'string' ? m : null;
}

/**
 * A platform's error answer in the gateway's terms, or null when it already is the inbound
 * protocol's error. `platform` names the cloud in the message made up for a body that says nothing
 * readable (not JSON, or JSON without a message).
 */
export function readPlatformError(
  status: number,
  body: Buffer,
  endpoint: string,
  platform: string,
  code: string | null = null,
): ProviderError | null {
  const value = jsonOf(body);
  if (inProtocolShape(value, endpoint)) return null;
  const type = errorTypeForStatus(status);
  const google = googleError(value);
  if (google) return { status, type, code: google.code ?? code, message: google.message };
  const openAiLike = openAiLikeError(value);
  if (openAiLike) {
    const err: ProviderError = { status, type, code: openAiLike.code ?? code, message: openAiLike.message };
    if (Object.keys(openAiLike.extra).length > 0) err.extra = openAiLike.extra;
    return err;
  }
  const message = plainMessage(value) ?? `${platform} answered HTTP ${status}${code ? ` (${code})` : ''}`;
  return { status, type, code, message };
}
