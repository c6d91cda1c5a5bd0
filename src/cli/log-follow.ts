// `logs --follow`'s loop: new request-log rows, each printed once, one poll after it first appeared.
// A charged request's row is written twice: first with its charge (what was known when the answer
// was charged), then replaced in place, under the same id, by the request's final row (total
// latency, how it ended) a few milliseconds later, once the answer's last byte went out. Printing a
// row as soon as its id appears would show the first version, and never the replacement; waiting
// one poll shows the final row whenever it came within a poll of the first.
import type { RequestLogEntry } from '../store/types.ts';

/** Rows fetched per query. */
const PAGE = 1000;

export interface FollowParts {
  /** Rows with an id above `afterId`, oldest first, at most `limit`. */
  query(afterId: number, limit: number): Promise<RequestLogEntry[]>;
  print(rows: RequestLogEntry[]): void;
  /** Waits one poll interval. */
  wait(): Promise<void>;
  stopped(): boolean;
}

/**
 * Follows the log from `afterId` (the last row already printed) until `stopped()`. A row is printed
 * once a poll after the one that first saw it, as it stands then; on stop, the rows seen but not yet
 * printed are printed as they stand.
 */
export async function followLog(parts: FollowParts, afterId: number): Promise<void> {
  let printed = afterId;
  /** The newest id seen by the last poll: rows up to it are due at the next one. */
  let seen = afterId;
  while (!parts.stopped()) {
    await parts.wait();
    const due = parts.stopped() ? Number.POSITIVE_INFINITY : seen;
    for (;;) {
      const rows = await parts.query(printed, PAGE);
      const last = rows.at(-1);
      if (last === undefined) break;
      seen = Math.max(seen, last.id);
      const ready = rows.filter((r) => r.id <= due);
      const lastReady = ready.at(-1);
      if (lastReady === undefined) break;
      parts.print(ready);
      printed = lastReady.id;
      if (ready.length < rows.length || rows.length < PAGE) break;
    }
  }
}
