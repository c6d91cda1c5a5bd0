// The settlements a node charges out of its wallet slices, sent to PostgreSQL as ONE statement
// (src/store/postgres/slices.ts `settleMany`) with at most one such statement in flight: while one is
// being committed (on a hot wallet, waiting for the wallet row's lock and the WAL flush), the next
// settlements gather, and go together as soon as it answers. The batch therefore grows with the load
// and the wallet row is locked once per batch, not once per request.
//
// Isolation (isolated-batch.ts): a batch the database refuses as a whole is re-run one settlement
// per statement; a batch PostgreSQL did not answer is rejected for every settlement in it, and each
// caller retries (a retry of a settlement that did commit is recognised, never charged twice).
import type { Clock } from '../clock.ts';
import type { PgSlices, SliceSettle } from '../store/postgres/store.ts';
import type { RequestLogRow } from '../store/types.ts';
import { chargeBeforeRow, type Pending, writeIsolated } from './isolated-batch.ts';

export class SliceSettleBatcher {
  private gathering: Pending<SliceSettle>[] = [];
  private scheduled = false;
  private inFlight: Promise<void> | null = null;
  private readonly slices: PgSlices;
  private readonly clock: Clock;
  private readonly many: (items: SliceSettle[]) => Promise<Set<string>>;
  /** Statements sent, and settlements in them (diagnostics, the bench). */
  readonly stats = { batches: 0, settlements: 0 };

  /** `rowAside`: where a log row goes that its settlement could not carry (the request log). */
  constructor(slices: PgSlices, clock: Clock, rowAside: (row: RequestLogRow) => void) {
    this.slices = slices;
    this.clock = clock;
    this.many = chargeBeforeRow((items) => this.slices.settleMany(items, this.clock.now()), {
      rowOf: (s) => s.logRow,
      without: (s) => ({ ...s, logRow: undefined }),
      aside: rowAside,
    });
  }

  /** Charges the settlement with the others gathered; resolves to whether it is charged (durably). */
  settle(settle: SliceSettle): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.gathering.push({ item: settle, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once every settlement handed over so far was answered. */
  async drain(): Promise<void> {
    while (this.inFlight || this.gathering.length > 0) {
      if (this.inFlight) await this.inFlight;
      else this.send();
    }
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.inFlight) this.send();
    });
  }

  private send(): void {
    const batch = this.gathering;
    this.gathering = [];
    if (batch.length === 0) return;
    this.inFlight = this.write(batch).finally(() => {
      this.inFlight = null;
      if (this.gathering.length > 0) this.schedule();
    });
  }

  private async write(batch: Pending<SliceSettle>[]): Promise<void> {
    this.stats.batches++;
    this.stats.settlements += await writeIsolated(batch, this.many);
  }
}
