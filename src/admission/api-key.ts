// API key authentication (spec: Authentication). The key comes from `Authorization` (with or without
// "Bearer "), or from `X-Api-Key` only when Authorization is absent or empty. The third SDK credential
// header (x-goog-api-key) and cookies are never read. Public routes never call this.
import { GatewayError } from '../errors.ts';

/** The presented key, or null when neither header carries one. */
export function presentedKey(headers: Record<string, string>): string | null {
  const auth = (headers['authorization'] ?? '').trim();
  const raw = auth !== '' ? auth : (headers['x-api-key'] ?? '').trim();
  if (raw === '') return null;
  return /^bearer\s+/i.test(raw) ? raw.replace(/^bearer\s+/i, '').trim() : raw;
}

export type KeyCheck = 'ok' | 'invalid' | 'not_found' | 'revoked' | 'expired';

/** The spec's 401 for a failed check. */
export function authError(result: Exclude<KeyCheck, 'ok'> | 'missing'): GatewayError {
  switch (result) {
    case 'missing':
      return new GatewayError('invalid_api_key', 'missing API key: send it as "Authorization: Bearer <key>" or in the X-Api-Key header');
    case 'invalid':
      return new GatewayError('invalid_api_key', 'malformed API key: pi-gateway keys start with "sk-pi-"');
    case 'not_found':
      return new GatewayError('api_key_not_found', 'unknown API key');
    case 'revoked':
      return new GatewayError('api_key_revoked', 'this API key has been revoked');
    case 'expired':
      return new GatewayError('api_key_expired', 'this API key has expired');
  }
}
