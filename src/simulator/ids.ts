// Provider-style ids (chatcmpl-…, resp_…, msg_…, req_…) from a pooled random source: one
// randomFillSync per 4 KiB instead of one crypto call per id.
import { randomFillSync, randomUUID } from 'node:crypto';

const POOL = Buffer.alloc(4096);
let pos = POOL.length;

function byte(): number {
  if (pos >= POOL.length) {
    randomFillSync(POOL);
    pos = 0;
  }
  return POOL[pos++] as number;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const HEX = '0123456789abcdef';

/** `n` random characters of `alphabet` (bias from the modulo is irrelevant for ids). */
export function randomChars(n: number, alphabet: string): string {
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[byte() % alphabet.length];
  return s;
}

/** `chatcmpl-` + 29 alphanumerics, as OpenAI mints them. */
export const chatCompletionId = (): string => 'chatcmpl-' + randomChars(29, ALNUM);
/** `resp_` + 48 hex digits. */
export const responseId = (): string => 'resp_' + randomChars(48, HEX);
/** Responses output item id: `msg_` + 48 hex digits. */
export const outputMessageId = (): string => 'msg_' + randomChars(48, HEX);
/** Anthropic message id: `msg_01` + 22 base58 characters. */
export const anthropicMessageId = (): string => 'msg_01' + randomChars(22, BASE58);
/** OpenAI `x-request-id`: `req_` + 32 hex digits. */
export const openaiRequestId = (): string => 'req_' + randomChars(32, HEX);
/** Anthropic `request-id`: `req_011C` + 20 base58 characters. */
export const anthropicRequestId = (): string => 'req_011C' + randomChars(20, BASE58);
/** A system fingerprint (`fp_` + 10 hex), fixed per simulator. */
export const systemFingerprint = (): string => 'fp_' + randomChars(10, HEX);
export const organizationId = (): string => randomUUID();

/** Random padding strings for the `obfuscation` field of streamed deltas, 1–16 characters. */
export function obfuscationPool(size = 64): string[] {
  const out: string[] = [];
  for (let i = 0; i < size; i++) out.push(randomChars(1 + (byte() % 16), ALNUM));
  return out;
}
