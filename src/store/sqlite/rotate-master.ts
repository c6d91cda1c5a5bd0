// Master-key rotation: every sealed row re-sealed under a new key in one transaction, each one read
// back and opened with the new key before the commit, the old ciphertexts scrubbed from the file.
// Nothing here puts a plaintext or a key into an error message.
import type { SqliteDatabase } from './db.ts';
import { type MasterKey, type Sealed, seal, SecretError, unseal } from '../seal.ts';
import type { RotationResult } from '../secret-rules.ts';

interface SealedRow {
  name: string;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
  key_id: string;
}

/** How a value is sealed under the new key; tests pass a faulty one to prove a bad row rolls back. */
export type Sealer = (master: MasterKey, name: string, plaintext: string) => Sealed;

const SELECT_ALL = 'SELECT name, nonce, ciphertext, tag, key_id FROM secrets ORDER BY name';

/**
 * Re-seals every row from `current` to `next`. `current` is asked for only when rows exist (a
 * database without sealed rows needs no old key). Every row must open under the current key first: a
 * row sealed under another key or tampered with stops the rotation before anything is written, named
 * in the error. The new rows are then read back and opened with `next`; any mismatch rolls the whole
 * transaction back. `updated_at` is left alone: the values did not change, only their sealing.
 */
export function rotateSealedRows(
  db: SqliteDatabase,
  current: () => MasterKey,
  next: MasterKey,
  sealer: Sealer = seal,
): RotationResult {
  const previousSecureDelete = db.pragma('secure_delete', { simple: true }) as number;
  // Overwrite freed cell space with zeros, so an old ciphertext does not linger in a page.
  db.pragma('secure_delete = ON');
  try {
    const run = db.transaction((): Omit<RotationResult, 'scrubbed'> => {
      const rows = db.prepare(SELECT_ALL).all() as SealedRow[];
      if (rows.length === 0) return { resealed: [], fromKeyId: null, toKeyId: next.id };
      const old = current();
      if (old.id === next.id) {
        throw new SecretError(
          'same_master_key',
          `the new master key is the current one (key ${old.id}); give a different key`,
        );
      }
      const plain = new Map<string, string>();
      for (const row of rows) plain.set(row.name, openRow(old, row));
      const update = db.prepare('UPDATE secrets SET nonce = ?, ciphertext = ?, tag = ?, key_id = ? WHERE name = ?');
      for (const row of rows) {
        const s = sealer(next, row.name, plain.get(row.name) as string);
        update.run(s.nonce, s.ciphertext, s.tag, next.id, row.name);
      }
      verify(db, next, plain);
      return { resealed: rows.map((r) => r.name), fromKeyId: old.id, toKeyId: next.id };
    });
    const result = run.immediate();
    return { ...result, scrubbed: result.resealed.length === 0 || checkpoint(db) };
  } finally {
    db.pragma(`secure_delete = ${previousSecureDelete}`);
  }
}

/** Opens a row under the current key, or says which row stops the rotation and why. */
function openRow(old: MasterKey, row: SealedRow): string {
  if (row.key_id !== old.id) {
    throw new SecretError(
      'wrong_master_key',
      `secret "${row.name}" is sealed with master key ${row.key_id} but PI_MASTER_KEY is key ${old.id}; nothing was rotated`,
    );
  }
  try {
    return unseal(old, row.name, { nonce: row.nonce, ciphertext: row.ciphertext, tag: row.tag });
  } catch (err) {
    if (!(err instanceof SecretError)) throw err;
    throw new SecretError(
      err.code,
      `${err.message}; nothing was rotated (set that secret again with \`pi-gateway secret set ${row.name}\`, or remove it, then rotate)`,
    );
  }
}

/** Every row now carries the new key id and opens under the new key to exactly its old value. */
function verify(db: SqliteDatabase, next: MasterKey, plain: Map<string, string>): void {
  const rows = db.prepare(SELECT_ALL).all() as SealedRow[];
  if (rows.length !== plain.size)
    throw new SecretError(
      'rotation_failed',
      `rotation re-read ${rows.length} rows, expected ${plain.size}; nothing was rotated`,
    );
  for (const row of rows) {
    let ok = row.key_id === next.id;
    if (ok) {
      try {
        ok =
          unseal(next, row.name, { nonce: row.nonce, ciphertext: row.ciphertext, tag: row.tag }) ===
          plain.get(row.name);
      } catch {
        ok = false;
      }
    }
    if (!ok)
      throw new SecretError(
        'rotation_failed',
        `secret "${row.name}" did not open under the new key after re-sealing; nothing was rotated`,
      );
  }
}

/** Moves the WAL into the database file and truncates it; true when every frame was written back. */
function checkpoint(db: SqliteDatabase): boolean {
  const r = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[];
  const row = r[0];
  return row !== undefined && row.busy === 0 && row.log === row.checkpointed;
}
