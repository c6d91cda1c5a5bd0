// The settlements and releases a node decides in one event-loop turn, sent to PostgreSQL as ONE
// statement (src/store/postgres/holds.ts `closeMany`): one round trip instead of one per request, and a
// hot wallet's row updated (and locked until the commit's flush) once per turn instead of once per
// request. Batches pipeline: the next turn's closes go out while the previous statement is in
// flight, on another pooled connection.
//
// Isolation: a batch the database refuses as a whole (an amount out of its column's range, a
// deadlock with another node's batch) is re-run one close per statement, so each request gets its
// own outcome and no other request's close is lost with it. A batch PostgreSQL did not answer is
// rejected for every close in it: each caller retries as it would a single statement (closes are
// idempotent per trace: a retry of a close that did commit matches no open hold).
import type { Clock } from '../clock.ts';
import type { HoldClose, PgHolds } from '../store/postgres/holds.ts';
import { isUnavailable } from '../store/postgres/store.ts';

interface Pending {
  close: HoldClose;
  resolve: (closed: boolean) => void;
  reject: (err: unknown) => void;
}

export class CloseBatcher {
  private gathering: Pending[] = [];
  private scheduled = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly holds: PgHolds;
  private readonly clock: Clock;

  constructor(holds: PgHolds, clock: Clock) {
    this.holds = holds;
    this.clock = clock;
  }

  /** Closes the hold with the others of this turn; resolves to whether it was open (and is closed now). */
  close(close: HoldClose): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.gathering.push({ close, resolve, reject });
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

  private async write(batch: Pending[]): Promise<void> {
    // A trace closed twice in one turn (a settle racing a release): the first decides, the later
    // ones find it closed — as they would one statement after the other.
    const first = new Map<string, Pending>();
    const later: Pending[] = [];
    for (const p of batch) {
      if (first.has(p.close.traceId)) later.push(p);
      else first.set(p.close.traceId, p);
    }
    const items = [...first.values()];
    try {
      const closed = await this.holds.closeMany(
        items.map((p) => p.close),
        this.clock.now(),
      );
      for (const p of items) p.resolve(closed.has(p.close.traceId));
      for (const p of later) p.resolve(false);
    } catch (err) {
      if (isUnavailable(err) || items.length === 1) {
        for (const p of batch) p.reject(err);
        return;
      }
      for (const p of items) await this.alone(p);
      for (const p of later) p.resolve(false);
    }
  }

  /** One close in its own statement: its own outcome, whatever the others' was. */
  private async alone(p: Pending): Promise<void> {
    try {
      p.resolve((await this.holds.closeMany([p.close], this.clock.now())).size === 1);
    } catch (err) {
      p.reject(err);
    }
  }
}
