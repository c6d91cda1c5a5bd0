// `logs --follow`'s loop: new request-log rows, each printed once, one poll after it first appeared.
// A charged request's row is written twice under one id: first with its charge (what was known when
// the answer was charged), then updated in place by the request's final row (total latency, how it
// ended) once the answer's last byte went out — within milliseconds on a database file, within a
// request-log batch (`request_log.flush_interval_ms`) on a fleet node. Printing a row as soon as its
// id appears would show the first version and never the update; waiting one poll shows the final
// row whenever it came within a poll of the first.
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
 * once, a poll after the one that first saw it, as it stands then; once stopped, every row not yet
 * printed is printed as it stands.
 */
export async function followLog(parts: FollowParts, afterId: number): Promise<void> {
  let printed = afterId;
  /** The newest id the last poll saw: rows up to it are due at the next one. */
  let seen = afterId;

  /** Prints the rows up to `due`; reads on past them (every page) to learn the newest id. */
  const poll = async (due: number): Promise<void> => {
    let cursor = printed;
    for (;;) {
      const rows = await parts.query(cursor, PAGE);
      const last = rows.at(-1);
      if (last === undefined) return;
      seen = Math.max(seen, last.id);
      // Oldest first: the rows due are the page's first ones.
      const ready = rows.filter((r) => r.id <= due);
      const lastReady = ready.at(-1);
      if (lastReady !== undefined) {
        parts.print(ready);
        printed = lastReady.id;
      }
      if (rows.length < PAGE) return;
      cursor = last.id;
    }
  };

  while (!parts.stopped()) {
    await parts.wait();
    await poll(parts.stopped() ? Number.POSITIVE_INFINITY : seen);
  }
  // Stopped while a poll read: what it held back goes out now.
  await poll(Number.POSITIVE_INFINITY);
}
