// The one rule of the fleet's batched writes to PostgreSQL (a turn's hold closes, escrow's
// settlements): a batch goes as ONE statement; a trace twice in a batch is decided by its first
// occurrence (the later ones find it done, as one statement after the other would); a batch the
// database refuses as a whole (an amount outside its column, a deadlock with another node's batch, a
// statement that ran out of time waiting for one wallet's row) is re-run one item per statement, so
// each request gets its own outcome and no other request's write is lost or held up with it; a batch
// PostgreSQL did not answer is rejected for every item in it, and each caller retries as it would a
// single statement (the writes are idempotent per trace).
import { isDataRefusal, isUnavailable, type PgStore } from '../store/postgres/store.ts';
import type { RequestLogRow } from '../store/types.ts';

export interface Pending<T> {
  item: T;
  /** Whether the statement wrote this item (false: nothing to do, e.g. already closed). */
  resolve: (written: boolean) => void;
  reject: (err: unknown) => void;
}

/**
 * Writes `batch` through `many`, which answers the trace ids it wrote, and settles every pending
 * item; resolves to the number of distinct items the batch statement carried.
 */
export async function writeIsolated<T extends { traceId: string }>(
  batch: readonly Pending<T>[],
  many: (items: T[]) => Promise<Set<string>>,
): Promise<number> {
  const first = new Map<string, Pending<T>>();
  const later: Pending<T>[] = [];
  for (const p of batch) {
    if (first.has(p.item.traceId)) later.push(p);
    else first.set(p.item.traceId, p);
  }
  const items = [...first.values()];
  try {
    const written = await many(items.map((p) => p.item));
    for (const p of items) p.resolve(written.has(p.item.traceId));
  } catch (err) {
    if (isUnavailable(err) || items.length === 1) {
      for (const p of batch) p.reject(err);
      return items.length;
    }
    for (const p of items) await alone(p, many);
  }
  for (const p of later) p.resolve(false);
  return items.length;
}

/** One item in its own statement: its own outcome, whatever the others' was. */
async function alone<T extends { traceId: string }>(
  p: Pending<T>,
  many: (items: T[]) => Promise<Set<string>>,
): Promise<void> {
  try {
    p.resolve((await many([p.item])).has(p.item.traceId));
  } catch (err) {
    p.reject(err);
  }
}

/** How a batch's items carry their request's log row (a settlement's, committed with its charge). */
export interface RowCarrier<T> {
  rowOf(item: T): RequestLogRow | undefined;
  without(item: T): T;
  /** Where a row goes that its settlement could not carry: the request log's own batches. */
  aside(row: RequestLogRow): void;
}

/**
 * `many`, except that an item whose data the database refuses alone is tried once more without its
 * log row, the row handed `aside`: a charge never depends on its log row (the row's values are made
 * storable before they are sent, so this is a last guard). Any other error is the caller's, as
 * before (an outage or a timeout is retried with the row).
 */
export function chargeBeforeRow<T extends { traceId: string }>(
  many: (items: T[]) => Promise<Set<string>>,
  rows: RowCarrier<T>,
): (items: T[]) => Promise<Set<string>> {
  return async (items) => {
    try {
      return await many(items);
    } catch (err) {
      const item = items.length === 1 ? (items[0] as T) : null;
      const row = item ? rows.rowOf(item) : undefined;
      if (!item || !row || !isDataRefusal(err)) throw err;
      const written = await many([rows.without(item)]);
      rows.aside(row);
      return written;
    }
  };
}

/** A settlement's log row its statement could not carry: written in the request log's batch, still
 *  to be replaced by the request's final row (which follows the settlement, already over). */
export function rowAside(store: PgStore, row: RequestLogRow): void {
  store.requestLog.append(row);
  store.requestLog.carried(row.trace_id, Promise.resolve());
}
