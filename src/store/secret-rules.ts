// The rules of sealed upstream credentials both store backends keep: which names may be stored, the
// error for secrets sealed under another master key, what a listing shows and what a master-key
// rotation reports. The sealing itself is seal.ts.
import { SecretError } from './seal.ts';

export interface SecretInfo {
  name: string;
  createdAt: number;
  updatedAt: number;
}

export interface RotationResult {
  /** Names re-sealed, sorted; empty when the database held no sealed rows. */
  resealed: string[];
  /** Fingerprint of the key the rows were sealed with; null when there were none. */
  fromKeyId: string | null;
  toKeyId: string;
  /**
   * The write-ahead log was checkpointed and truncated after the commit, so the old ciphertexts are
   * gone from the files (false when another connection kept the checkpoint from finishing; the next
   * checkpoint of any connection overwrites them).
   */
  scrubbed: boolean;
}

/** Names are referenced from config (`OPENAI_API_KEY`, `azure.eastus.key`): plain, bounded, no spaces. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function checkName(name: string): void {
  if (!NAME.test(name)) {
    throw new SecretError(
      'bad_name',
      `secret name ${JSON.stringify(name)} is invalid: use 1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit`,
    );
  }
}

export function wrongKey(stored: string, current: string): SecretError {
  return new SecretError(
    'wrong_master_key',
    `secrets were sealed with master key ${stored} but PI_MASTER_KEY is key ${current}; set the original PI_MASTER_KEY`,
  );
}
