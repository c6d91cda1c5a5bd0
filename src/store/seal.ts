// AES-256-GCM sealing of upstream credentials under the operator's master key (PI_MASTER_KEY).
// Generate a key with `openssl rand -base64 32` (or `openssl rand -hex 32`).
// Nothing here ever puts a plaintext or a key into an error message.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;
export const KEY_BYTES = 32;

export type SecretErrorCode =
  | 'no_master_key'
  | 'bad_master_key'
  | 'wrong_master_key'
  | 'tampered'
  | 'bad_name'
  | 'empty_value'
  | 'same_master_key'
  | 'rotation_failed';

export class SecretError extends Error {
  readonly code: SecretErrorCode;
  constructor(code: SecretErrorCode, message: string) {
    super(message);
    this.name = 'SecretError';
    this.code = code;
  }
}

export interface MasterKey {
  readonly key: Buffer;
  /** Non-secret fingerprint stored with every sealed row, to tell "wrong key" from "tampered". */
  readonly id: string;
}

const keyHint = (what: string) =>
  `${what} must be 32 random bytes written as base64 (44 characters) or hex (64 characters); generate one with \`openssl rand -base64 32\``;

/**
 * Parses a master key (PI_MASTER_KEY, or the new key given to `secret rotate-master`, named by
 * `what` in errors): exactly 32 bytes as hex (64 digits) or base64 (standard or URL-safe alphabet,
 * padding optional). Anything else is refused rather than stretched, so a typo cannot silently
 * become a different key.
 */
export function parseMasterKey(raw: string | undefined, what = 'PI_MASTER_KEY'): MasterKey {
  if (raw === undefined || raw.trim() === '')
    throw new SecretError('no_master_key', `${what} is not set; ${keyHint(what)}`);
  const s = raw.trim();
  let key: Buffer | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(s)) {
    key = Buffer.from(s, 'hex');
  } else if (/^[A-Za-z0-9+/]{43}=?$/.test(s) || /^[A-Za-z0-9_-]{43}=?$/.test(s)) {
    const b = Buffer.from(s.replace(/=$/, ''), s.includes('-') || s.includes('_') ? 'base64url' : 'base64');
    // Node's decoder ignores stray low bits in the last character; re-encoding catches that.
    if (
      b.length === KEY_BYTES &&
      b.toString('base64url') === s.replace(/=$/, '').replace(/\+/g, '-').replace(/\//g, '_')
    )
      key = b;
  }
  if (!key) throw new SecretError('bad_master_key', `${what} is malformed (${s.length} characters); ${keyHint(what)}`);
  return { key, id: keyFingerprint(key) };
}

/** First 8 bytes (hex) of sha256("pi-gateway key id" ‖ key). */
export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update('pi-gateway key id').update(key).digest().subarray(0, 8).toString('hex');
}

export interface Sealed {
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

/** Seals with a fresh random nonce; `name` is bound as additional authenticated data. */
export function seal(master: MasterKey, name: string, plaintext: string): Sealed {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', master.key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(name, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return { nonce, ciphertext, tag: cipher.getAuthTag() };
}

/** Opens a sealed value; any changed byte of nonce, ciphertext, tag or name is a `tampered` error. */
export function unseal(master: MasterKey, name: string, sealed: Sealed): string {
  // Fixed lengths are checked first: GCM would otherwise accept a truncated tag.
  if (sealed.nonce.length !== NONCE_BYTES || sealed.tag.length !== TAG_BYTES) {
    throw new SecretError('tampered', `secret "${name}" is damaged (bad nonce or tag length); set it again`);
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', master.key, sealed.nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(name, 'utf8'));
    decipher.setAuthTag(sealed.tag);
    const out = Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
    return out.toString('utf8');
  } catch {
    throw new SecretError(
      'tampered',
      `secret "${name}" failed authentication (modified, or sealed under another name); set it again`,
    );
  }
}
