// Writes of several requests inside one transaction (a group commit) where one request's refused
// write must never take the others down: everything is first written in one savepoint (the fast
// path: one SAVEPOINT and one RELEASE more than writing without it); when anything in it is refused,
// that savepoint is rolled back and each item is written in a savepoint of its own, so only the
// refused items are left out. Nothing is retried blind: an item refused alone is refused for itself.
//
// A failure SQLite answers by rolling the whole transaction back (a full disk, an I/O error) is not
// the items' doing: the COMMIT that follows then fails, and the caller learns that nothing was written.
import type { SqliteDatabase } from './db.ts';

export interface RefusedItem<T> {
  item: T;
  error: unknown;
}

/**
 * Runs inside a transaction. `all` writes every item at once (it may batch what items share);
 * `one` writes a single item. Returns the items refused on their own, in order (empty on the fast path).
 */
export function writeIsolated<T>(db: SqliteDatabase, items: readonly T[], all: (items: readonly T[]) => void, one: (item: T) => void): RefusedItem<T>[] {
  if (!db.inTransaction) throw new Error('writeIsolated must run inside a transaction');
  if (items.length === 0) return [];
  try {
    // Nested in the caller's transaction, better-sqlite3 runs this in a savepoint: rolled back alone.
    db.transaction(() => all(items))();
    return [];
  } catch (err) {
    if (!db.inTransaction) throw err;
  }
  const refused: RefusedItem<T>[] = [];
  for (const item of items) {
    try {
      db.transaction(() => one(item))();
    } catch (error) {
      if (!db.inTransaction) throw error;
      refused.push({ item, error });
    }
  }
  return refused;
}
