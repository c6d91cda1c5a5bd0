// The database and every file beside it hold key hashes, sealed secrets and the ledger: each is
// created readable and writable by its owner only (0600), whatever the process's umask.
import { closeSync, fchmodSync, openSync, writeSync } from 'node:fs';

export const PRIVATE_MODE = 0o600;

/**
 * Creates `file` empty with mode 0600 unless it exists (an existing file keeps the mode its operator
 * gave it). SQLite then opens it as a new database, and creates the `-wal` and `-shm` files beside it
 * with the main file's mode, so they are private too. In-memory and URI names are left alone.
 */
export function createPrivateFile(file: string): void {
  if (file === '' || file === ':memory:' || file.startsWith('file:')) return;
  let fd: number;
  try {
    fd = openSync(file, 'wx', PRIVATE_MODE);
  } catch (err) {
    // Exists already, or cannot be created: opening it says why, with the caller's own words.
    if (err instanceof Error && 'code' in err) return;
    throw err;
  }
  try {
    // The mode given to open() is narrowed by the umask, never widened: set it exactly.
    fchmodSync(fd, PRIVATE_MODE);
  } finally {
    closeSync(fd);
  }
}

/** Writes `text` to `file` (created or truncated), leaving it with mode 0600. */
export function writePrivateFile(file: string, text: string): void {
  const fd = openSync(file, 'w', PRIVATE_MODE);
  try {
    fchmodSync(fd, PRIVATE_MODE);
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}
