// The settlements and releases a node decides in one event-loop turn, sent to PostgreSQL as ONE
// statement (src/store/postgres/holds.ts `closeMany`): one round trip instead of one per request, and a
// hot wallet's row updated (and locked until the commit's flush) once per turn instead of once per
// request. Batches pipeline: the next turn's closes go out while the previous statement is in
// flight, on another pooled connection.
//
// Isolation (isolated-batch.ts): a batch the database refuses as a whole is re-run one close per
// statement; a batch PostgreSQL did not answer is rejected for every close in it, and each caller
// retries (closes are idempotent per trace: a retry of a close that did commit matches no open hold).
import type { Clock } from '../clock.ts';
import type { HoldClose, PgHolds } from '../store/postgres/holds.ts';
import type { RequestLogRow } from '../store/types.ts';
import { chargeBeforeRow, type Pending, writeIsolated } from './isolated-batch.ts';

export class CloseBatcher {
  private gathering: Pending<HoldClose>[] = [];
  private scheduled = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly holds: PgHolds;
  private readonly clock: Clock;
  private readonly many: (items: HoldClose[]) => Promise<Set<string>>;

  /** `rowAside`: where a log row goes that its settlement could not carry (the request log). */
  constructor(holds: PgHolds, clock: Clock, rowAside: (row: RequestLogRow) => void) {
    this.holds = holds;
    this.clock = clock;
    this.many = chargeBeforeRow((items) => this.holds.closeMany(items, this.clock.now()), {
      rowOf: (c) => (c.kind === 'settle' ? c.logRow : undefined),
      without: (c) => (c.kind === 'settle' ? { ...c, logRow: undefined } : c),
      aside: rowAside,
    });
  }

  /** Closes the hold with the others of this turn; resolves to whether it was open (and is closed now). */
  close(close: HoldClose): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.gathering.push({ item: close, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => this.send());
    });
  }

  /** Resolves once every close handed over so far was answered. */
  async drain(): Promise<void> {
    if (this.scheduled) this.send();
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  private send(): void {
    this.scheduled = false;
    const batch = this.gathering;
    this.gathering = [];
    if (batch.length === 0) return;
    const run = this.write(batch).finally(() => this.inFlight.delete(run));
    this.inFlight.add(run);
  }

  private async write(batch: Pending<HoldClose>[]): Promise<void> {
    await writeIsolated(batch, this.many);
  }
}
