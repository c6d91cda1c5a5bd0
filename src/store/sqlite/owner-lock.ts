// One serving process per database file. The gateway admits against wallets it keeps in memory, so
// two servers on one file would each admit against their own copy and overdraw. `serve` takes an
// exclusive lock first and refuses to start without it.
//
// The lock is SQLite's exclusive locking mode on a side file (`<db>.lock`, a tiny database of its
// own): after one write the connection holds an OS file lock (POSIX fcntl) until it closes, and the
// OS drops that lock when the process dies, however it dies, so a crashed owner never leaves a stale
// lock behind. The database itself is not locked: the CLI keeps working beside the server.
//
// The side file is never deleted (a process could be holding a lock on it while another creates a new
// file of the same name). Which process holds it is written by the owner to `<db>.pid` (see
// src/runtime/owner-files.ts); the lock, not that file, decides whether a server runs.
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { sqliteAddon } from './db.ts';
import { createPrivateFile } from './private-file.ts';

export class OwnerLockError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OwnerLockError';
  }
}

export interface OwnerLock {
  /** The side file that carries the lock. */
  readonly file: string;
  /** Gives the lock up (the process exiting does the same). Idempotent. */
  release(): void;
}

/** The side file the lock of database `dbFile` lives in. */
export function ownerLockFile(dbFile: string): string {
  return `${dbFile}.lock`;
}

/** Takes the lock, or returns null when another process (or another lock in this one) holds it. */
export function acquireOwnerLock(dbFile: string): OwnerLock | null {
  const file = ownerLockFile(dbFile);
  const dir = dirname(resolve(file));
  // The same words as opening the database itself would use (db.ts): the lock is only taken first.
  if (!existsSync(dir))
    throw new OwnerLockError(
      `cannot open database ${dbFile}: the directory ${dir} does not exist (create it, or choose another --db / PI_DB)`,
    );
  let db: Database.Database;
  try {
    createPrivateFile(file);
    db = new Database(file, sqliteAddon());
  } catch (err) {
    throw new OwnerLockError(`cannot open the lock file ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    db.pragma('busy_timeout = 0');
    // No journal file beside it (OFF is not honoured by this build; MEMORY keeps it in memory).
    db.pragma('journal_mode = MEMORY');
    db.pragma('locking_mode = EXCLUSIVE');
    // A write takes the exclusive lock; in exclusive locking mode it is kept until close.
    db.pragma(`user_version = ${process.pid}`);
  } catch (err) {
    db.close();
    if (err instanceof Error && 'code' in err && (err.code === 'SQLITE_BUSY' || err.code === 'SQLITE_LOCKED'))
      return null;
    throw new OwnerLockError(`cannot lock ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let held = true;
  return {
    file,
    release() {
      if (!held) return;
      held = false;
      db.close();
    },
  };
}

/** Whether a process holds the lock of `dbFile` now (takes and gives it back when free). */
export function ownerLockHeld(dbFile: string): boolean {
  // No lock file: no server ever ran on this database (and none is created just to ask).
  if (!existsSync(ownerLockFile(dbFile))) return false;
  const lock = acquireOwnerLock(dbFile);
  if (lock === null) return true;
  lock.release();
  return false;
}
