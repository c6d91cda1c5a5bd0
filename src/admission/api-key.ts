// API key authentication (docs/api.md: Authentication). The key comes from `Authorization` (with or without
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

const KEY_PREFIX = 'sk-pi-';
/** Length of the random part of a key: 32 bytes as unpadded base64url. */
const KEY_BODY_CHARS = 43;

/**
 * Why a presented key is malformed, never echoing it: a key without the prefix is told the prefix; a
 * key with the prefix is told the shape after it (a truncated paste, a stray quote or space), which
 * the prefix message alone would leave a puzzle ("it does start with sk-pi-").
 */
function malformedKeyMessage(presented: string): string {
  if (!presented.startsWith(KEY_PREFIX)) return `malformed API key: pi-gateway keys start with "${KEY_PREFIX}"`;
  const body = presented.slice(KEY_PREFIX.length);
  const stray = /[^A-Za-z0-9_-]/.test(body);
  const what = [
    body.length !== KEY_BODY_CHARS ? `${body.length} characters after it` : null,
    stray ? 'characters outside A-Z a-z 0-9 _ -' : null,
  ].filter((x) => x !== null);
  return (
    `malformed API key: it starts with "${KEY_PREFIX}" but a pi-gateway key is "${KEY_PREFIX}" followed by exactly ` +
    `${KEY_BODY_CHARS} characters of A-Z a-z 0-9 _ -, and this one has ${what.join(' and ')}; check that the whole key was copied`
  );
}

/** The API's 401 for a failed check; `presented` lets a malformed key be told what is wrong with it. */
export function authError(result: Exclude<KeyCheck, 'ok'> | 'missing', presented = ''): GatewayError {
  switch (result) {
    case 'missing':
      return new GatewayError(
        'invalid_api_key',
        'missing API key: send it as "Authorization: Bearer <key>" or in the X-Api-Key header',
      );
    case 'invalid':
      return new GatewayError('invalid_api_key', malformedKeyMessage(presented));
    case 'not_found':
      return new GatewayError('api_key_not_found', 'unknown API key');
    case 'revoked':
      return new GatewayError('api_key_revoked', 'this API key has been revoked');
    case 'expired':
      return new GatewayError('api_key_expired', 'this API key has expired');
  }
}
