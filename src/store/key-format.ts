// The gateway API key format and rules both store backends keep: the `sk-pi-` prefix and its random
// body, the stored sha256, the name and expiry rules, and a key's state at a given time.
import { createHash } from 'node:crypto';
import type { ApiKeyRecord, ApiKeyState } from './types.ts';

export const KEY_PREFIX = 'sk-pi-';
/** base64url of 32 random bytes, unpadded. */
const BODY_CHARS = 43;
const KEY_FORMAT = new RegExp(`^${KEY_PREFIX}[A-Za-z0-9_-]{${BODY_CHARS}}$`);
/** A whole key inside other text: the prefix and at least the body's characters, whatever is next to
 *  it (a key's own characters include - and _, so `refund-sk-pi-…` or `…_x` still hold one). */
const KEY_IN_TEXT = new RegExp(`${KEY_PREFIX}[A-Za-z0-9_-]{${BODY_CHARS},}`, 'g');

/** Characters (code points) a key's name may have: a label people read in lists, not a document. */
export const MAX_KEY_NAME_CHARS = 128;

/** Why a key name cannot be stored (too long, or carrying a control character), or null. The one
 *  rule the console, the admin API, the CLI and both stores apply. */
export function keyNameProblem(name: string): string | null {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
  if (/[\x00-\x1f\x7f]/.test(name)) return 'a key name may not contain control characters';
  const n = Array.from(name).length;
  if (n > MAX_KEY_NAME_CHARS) return `a key name is at most ${MAX_KEY_NAME_CHARS} characters, got ${n}`;
  // Every key list and every request-log view would show the secret.
  if (containsWholeKey(name)) return "a key name may not hold a whole API key, a secret: name it by the key's prefix";
  return null;
}

/** Why an expiry cannot be set at `now` (it is not in the future), or null. The CLI, the admin API
 *  and the console refuse such an expiry (a key to stop now is revoked). */
export function pastExpiryProblem(expiresAt: number, now: number): string | null {
  return expiresAt <= now
    ? `the expiry ${new Date(expiresAt).toISOString()} is not in the future (now is ${new Date(now).toISOString()}); to stop a key now, revoke it`
    : null;
}

export interface CreateKeyInput {
  workspace: string;
  name?: string | undefined;
  /** Epoch ms. */
  expiresAt?: number | undefined;
  rpm?: number | undefined;
}

export function hashKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Characters of the random part kept as the lookup prefix (48 bits: collisions are rare and handled). */
const LOOKUP_CHARS = 8;

/** The part of a key stored in the clear and looked up by (`sk-pi-` and 8 random characters). */
export function lookupPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + LOOKUP_CHARS);
}

/** Well-formed: `sk-pi-` plus 43 base64url characters. */
export function isWellFormedKey(presented: string): boolean {
  return KEY_FORMAT.test(presented);
}

/** Whether `text` holds a whole key anywhere (a note or a name an operator pasted one into). */
export function containsWholeKey(text: string): boolean {
  KEY_IN_TEXT.lastIndex = 0;
  return KEY_IN_TEXT.test(text);
}

/** `text` with every whole key in it cut to its first `shown` characters and an ellipsis. */
export function maskWholeKeys(text: string, shown: number): string {
  return text.replace(KEY_IN_TEXT, (key) => `${key.slice(0, shown)}…`);
}

export function keyState(key: ApiKeyRecord, now: number): ApiKeyState {
  if (key.revokedAt !== null) return 'revoked';
  if (key.expiresAt !== null && key.expiresAt <= now) return 'expired';
  return 'active';
}
