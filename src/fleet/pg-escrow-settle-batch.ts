// The settlements a node charges out of its wallet slices, sent to PostgreSQL as ONE statement
// (src/store/postgres/slices.ts `settleMany`) with at most one such statement in flight: while one is
// being committed (on a hot wallet, waiting for the wallet row's lock and the WAL flush), the next
// settlements gather, and go together as soon as it answers. The batch therefore grows with the load
// and the wallet row is locked once per batch, not once per request.
//
// Isolation: a batch the database refuses as a whole (an amount out of range, a deadlock with
// another node's batch) is re-run one settlement per statement, so each request gets its own
// outcome. A batch PostgreSQL did not answer is rejected for every settlement in it: each caller
// retries (a retry of a settlement that did commit is recognised, never charged twice).
import type { Clock } from '../clock.ts';
import { isUnavailable, type PgSlices, type SliceSettle } from '../store/postgres/store.ts';

interface Pending {
  settle: SliceSettle;
  resolve: (charged: boolean) => void;
  reject: (err: unknown) => void;
}

export class SliceSettleBatcher {
  private gathering: Pending[] = [];
  private scheduled = false;
  private inFlight: Promise<void> | null = null;
  private readonly slices: PgSlices;
  private readonly clock: Clock;
  /** Statements sent, and settlements in them (diagnostics, the bench). */
  readonly stats = { batches: 0, settlements: 0 };

  constructor(slices: PgSlices, clock: Clock) {
    this.slices = slices;
    this.clock = clock;
  }

  /** Charges the settlement with the others gathered; resolves to whether it is charged (durably). */
  settle(settle: SliceSettle): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.gathering.push({ settle, resolve, reject });
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

  private async write(batch: Pending[]): Promise<void> {
    // A trace settled twice in one batch cannot happen (the service forgets a trace as it settles
    // it), but a duplicate must never reach the statement: the later one is charged nothing.
    const first = new Map<string, Pending>();
    const later: Pending[] = [];
    for (const p of batch) {
      if (first.has(p.settle.traceId)) later.push(p);
      else first.set(p.settle.traceId, p);
    }
    const items = [...first.values()];
    this.stats.batches++;
    this.stats.settlements += items.length;
    try {
      const charged = await this.slices.settleMany(
        items.map((p) => p.settle),
        this.clock.now(),
      );
      for (const p of items) p.resolve(charged.has(p.settle.traceId));
    } catch (err) {
      if (isUnavailable(err) || items.length === 1) {
        for (const p of items) p.reject(err);
      } else {
        for (const p of items) await this.alone(p);
      }
    }
    for (const p of later) p.resolve(false);
  }

  private async alone(p: Pending): Promise<void> {
    try {
      p.resolve((await this.slices.settleMany([p.settle], this.clock.now())).has(p.settle.traceId));
    } catch (err) {
      p.reject(err);
    }
  }
}
