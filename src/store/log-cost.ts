// A request-log row's cost as a store can hold it (SQLite's INTEGER, PostgreSQL's BIGINT: 0 … 2^63 − 1
// nano-USD), checked before the row is bound. A cost beyond it is stored as NULL — the row is kept
// (what answered, how it ended) and never takes the other rows of its batch down — and reported: the
// ledger refuses that charge by the same check, so `ledger verify` names the answered request
// without its settlement.
import { MAX_WALLET_NANO } from '../money.ts';
import type { RequestLogRow } from './types.ts';

export function storedCost(cost: bigint | null): bigint | null {
  return cost === null || (cost >= 0n && cost <= MAX_WALLET_NANO) ? cost : null;
}

/** One line for each row whose cost `storedCost` leaves out, for the writer to report. */
export function unstorableCosts(rows: readonly Pick<RequestLogRow, 'trace_id' | 'cost_nano'>[]): string[] {
  const problems: string[] = [];
  for (const r of rows) {
    if (r.cost_nano !== null && storedCost(r.cost_nano) === null) {
      problems.push(
        `request-log row of trace ${r.trace_id}: cost_nano ${String(r.cost_nano)} is outside what the column holds (0 to ${MAX_WALLET_NANO} nano-USD); stored without it`,
      );
    }
  }
  return problems;
}
