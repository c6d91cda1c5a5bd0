// The files beside a served database that say who serves it: the owner lock (`<db>.lock`, held by
// the serving process, src/store/sqlite/owner-lock.ts), the owner's pid (`<db>.pid`, what `pi-gateway reload`
// signals), the config directory it serves (`<db>.config-dir`, where the store commands look for
// workspaces) and the last config reload's result (`<db>.reload.json`, what `reload` waits for and
// prints). The lock decides whether a server runs; the others are written by the lock holder only,
// readable by their owner only, like the database.
import { readFileSync, renameSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ReloadResult } from '../gateway.ts';
import { type ReloadJson, reloadJson } from '../observe/lifecycle.ts';
import { acquireOwnerLock, type OwnerLock, ownerLockFile, writePrivateFile } from '../store/sqlite/store.ts';

export function pidFile(db: string): string {
  return `${db}.pid`;
}

export function reloadFile(db: string): string {
  return `${db}.reload.json`;
}

export function configDirFile(db: string): string {
  return `${db}.config-dir`;
}

/** What `<db>.reload.json` holds: the result (as readiness shows it: snake_case, `at` in ISO 8601
 *  UTC), which process wrote it, and its sequence number there. */
export interface ReloadRecord extends ReloadJson {
  pid: number;
  seq: number;
}

/** The serving process's claim on a database: its lock, its pid file, its reload record. */
export interface Owner {
  readonly db: string;
  /** Records a reload result for `pi-gateway reload` to read. */
  recordReload(result: ReloadResult): void;
  /** Gives the database up: the pid file is removed (if still ours), the lock released. */
  release(): void;
}

export class ClaimError extends Error {}

/** The pid the owner wrote, or null when there is none (or it is unreadable). */
export function readOwnerPid(db: string): number | null {
  try {
    const pid = Number(readFileSync(pidFile(db), 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

export function readReloadRecord(db: string): ReloadRecord | null {
  try {
    return JSON.parse(readFileSync(reloadFile(db), 'utf8')) as ReloadRecord;
  } catch {
    return null;
  }
}

/**
 * The config directory (absolute) the last server of `db` ran with, or null when none recorded one.
 * Kept after that server stops: its workspaces are still the ones the database's keys belong to.
 */
export function readServedConfigDir(db: string): string | null {
  try {
    const dir = readFileSync(configDirFile(db), 'utf8').trim();
    return dir === '' ? null : dir;
  } catch {
    return null;
  }
}

/** Written whole or not at all (a reader never sees half a file), readable by its owner only. */
function writeAtomically(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writePrivateFile(tmp, text);
  renameSync(tmp, file);
}

/**
 * Claims `db` for this process (`serve`, `demo`, serving `served.configDir`), or throws ClaimError
 * naming the file and the pid that holds it. One server per database file: a second would admit
 * against its own in-memory wallets and overdraw them.
 */
export function claimDatabase(db: string, served: { configDir: string }): Owner {
  // An in-memory database belongs to its process by nature: nothing to lock or signal.
  if (db === ':memory:' || db === '') return { db, recordReload: () => undefined, release: () => undefined };
  let lock: OwnerLock | null;
  try {
    lock = acquireOwnerLock(db);
  } catch (err) {
    throw new ClaimError(err instanceof Error ? err.message : String(err));
  }
  if (lock === null) {
    const pid = readOwnerPid(db);
    throw new ClaimError(
      `the database ${resolve(db)} is already served by another pi-gateway process (${pid === null ? 'pid unknown' : `pid ${pid}`}; lock ${ownerLockFile(resolve(db))}); ` +
        'one server per database file: stop that one first, or use another --db',
    );
  }
  const held = lock;
  writeAtomically(pidFile(db), `${process.pid}\n`);
  writeAtomically(configDirFile(db), `${resolve(served.configDir)}\n`);
  let seq = 0;
  return {
    db,
    recordReload(result) {
      seq++;
      try {
        writeAtomically(
          reloadFile(db),
          JSON.stringify({ ...reloadJson(result), pid: process.pid, seq } satisfies ReloadRecord) + '\n',
        );
      } catch {
        // The result is still on the gateway and in the log; `reload` then times out waiting.
      }
    },
    release() {
      if (readOwnerPid(db) === process.pid) rmSync(pidFile(db), { force: true });
      held.release();
    },
  };
}
