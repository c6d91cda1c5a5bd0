// A credit's trace id, and the idempotency key that may choose it. Without a key a credit gets a fresh
// random id. With one, the id is derived from the workspace and the key, so a repeated credit (a retry
// after an answer was lost, a form sent twice) finds the first one's ledger row by that id and credits
// nothing again; the ledger's unique index on a credit's trace id backs that up. Both backends use it.
import { createHash, randomUUID } from 'node:crypto';
import { nanoToDecimal } from '../money.ts';
import { WalletError } from './errors.ts';

/** The longest idempotency key taken, in characters. */
export const IDEMPOTENCY_KEY_MAX = 255;

/** Why `key` cannot be an idempotency key, or null: 1–255 visible ASCII characters, as HTTP carries. */
export function idempotencyKeyProblem(key: string): string | null {
  if (key.length === 0) return 'the idempotency key is empty';
  if (key.length > IDEMPOTENCY_KEY_MAX)
    return `the idempotency key is ${key.length} characters; at most ${IDEMPOTENCY_KEY_MAX} are taken`;
  if (!/^[\x21-\x7e]+$/.test(key))
    return 'the idempotency key may carry only visible ASCII characters (no spaces, no control bytes)';
  return null;
}

/** The trace id of a credit: random, or the same for every credit of one workspace and one key. */
export function creditTraceId(workspace: string, idempotencyKey?: string): string {
  if (idempotencyKey === undefined) return `credit_${randomUUID()}`;
  const h = createHash('sha256')
    .update(JSON.stringify([workspace, idempotencyKey]))
    .digest('hex');
  // Laid out as a UUID (version 8, RFC 9562's variant) so that it reads like the random ones.
  const variant = (8 | (Number.parseInt(h[16] ?? '0', 16) & 3)).toString(16);
  return `credit_${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The credit a key already made: its ledger row's columns, as both stores read them. */
export interface EarlierCredit {
  workspace: string;
  amount_nano: bigint;
  note: string | null;
}

/**
 * Whether a credit with an idempotency key repeats `earlier` (then it is not applied again) or reuses
 * the key for a different credit, which is refused: a key names one credit, whatever else is sent.
 */
export function checkRepeat(earlier: EarlierCredit, workspace: string, amountNano: bigint, note: string): void {
  // Notes compare without their outer spaces: the console trims a note before it is stored, the CLI
  // keeps it as given, and a repeat through the other must still be a repeat.
  const sameNote = (earlier.note ?? '').trim() === note.trim();
  if (earlier.workspace === workspace && earlier.amount_nano === amountNano && sameNote) return;
  throw new WalletError(
    'idempotency_key_reused',
    `this idempotency key already credited ${nanoToDecimal(earlier.amount_nano)} USD to ${earlier.workspace}` +
      `${earlier.note === null ? '' : ` with the note ${JSON.stringify(earlier.note)}`}; a key names one credit, ` +
      'so this different one was not applied (send it with a new key)',
  );
}
