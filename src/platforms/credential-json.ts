// Structured credentials: a sealed credential that is a JSON object (AWS keys, a Google service
// account, Microsoft Entra client credentials) instead of one opaque key. Parsing is per call and
// cheap; nothing here keeps, logs or quotes the text (errors name the missing field only).
import { CredentialError } from './types.ts';

/** The credential as a JSON object, or null when it is an opaque key (anything not starting with `{`). */
export function credentialObject(credential: string, platform: string): Record<string, unknown> | null {
  const text = credential.trimStart();
  if (!text.startsWith('{')) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CredentialError(`provider "${platform}": the sealed credential starts like JSON but is not valid JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new CredentialError(`provider "${platform}": the sealed credential is not a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

/** A required non-empty string field of a structured credential. */
export function credentialField(obj: Record<string, unknown>, field: string, platform: string, what: string): string {
  const v = obj[field];
  if (typeof v !== 'string' || v === '')
    throw new CredentialError(`provider "${platform}": the sealed ${what} has no "${field}"`);
  return v;
}

/** An optional string field (absent or empty: undefined). */
export function optionalField(obj: Record<string, unknown>, field: string): string | undefined {
  const v = obj[field];
  return typeof v === 'string' && v !== '' ? v : undefined;
}
