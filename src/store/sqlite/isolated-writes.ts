// Writes of several requests in one transaction (a group commit) where one request's refused write
// must never take the others down. The transaction first runs as it always did, everything at once
// (`transactIsolated` with isolated = false: no cost on the path every commit takes). When anything
// in it is refused after it began, it is rolled back and run again with isolated = true, and the
// writer then puts each item in a savepoint of its own (`writeEach`), so only the refused items are
// left out. A savepoint is not free — inside one, SQLite journals every page a write changes so it
// can roll it back (measured: one savepoint around every group commit cost ~20 µs of CPU a request,
// two thirds more) — which is why only a commit that already failed once pays for them.
//
// A transaction that never began (the write lock not given within the busy timeout) is not retried:
// that is no item's doing, and the caller learns that nothing was written. Nor is one whose retry
// fails too (a full disk): the error reaches the caller, nothing of it written.
import type { SqliteDatabase } from './db.ts';

/** One savepoint runner per connection: better-sqlite3 prepares a transaction function's statements
 *  when it is made, so it is made once, not per item. Called inside a transaction it runs a savepoint. */
const SAVEPOINTS = new WeakMap<SqliteDatabase, (write: () => void) => void>();

function savepoint(db: SqliteDatabase): (write: () => void) => void {
  let run = SAVEPOINTS.get(db);
  if (!run) {
    run = db.transaction((write: () => void) => write());
    SAVEPOINTS.set(db, run);
  }
  return run;
}

/**
 * `write(false)` in one transaction run by `transact` (an IMMEDIATE one); when something in it is
 * refused after it began, `write(true)` in another.
 */
export function transactIsolated<T>(transact: <R>(fn: () => R) => R, write: (isolated: boolean) => T): T {
  let began = false;
  try {
    return transact(() => {
      began = true;
      return write(false);
    });
  } catch (err) {
    if (!began) throw err;
  }
  return transact(() => write(true));
}

export interface RefusedItem<T> {
  item: T;
  error: unknown;
}

/** Inside a transaction: each item written by `one` in a savepoint of its own; the refused ones, in order. */
export function writeEach<T>(db: SqliteDatabase, items: readonly T[], one: (item: T) => void): RefusedItem<T>[] {
  if (!db.inTransaction) throw new Error('writeEach must run inside a transaction');
  const run = savepoint(db);
  const refused: RefusedItem<T>[] = [];
  for (const item of items) {
    try {
      run(() => one(item));
    } catch (error) {
      // SQLite rolled the whole transaction back (the disk, not the item): nothing to isolate.
      if (!db.inTransaction) throw error;
      refused.push({ item, error });
    }
  }
  return refused;
}
