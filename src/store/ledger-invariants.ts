// What `ledger verify` proves, written once for both stores: the queries (in the SQL both SQLite and
// PostgreSQL speak; only the type of SUM differs, so each store says how to keep it an integer) and
// the checks over their rows. Each store runs every query inside one consistent read (SQLite: a read
// transaction; PostgreSQL: REPEATABLE READ) and hands the rows to `ledgerProblems`, with the open
// holds nothing serves any more — which only the store can judge (SQLite: the owning process is gone;
// PostgreSQL: the hold's lease lapsed).
//
// Beyond the books agreeing with each other, two things an operator must hear of:
// - a hold left open that no live process will ever close (money held from the wallet for nothing
//   until the next start or the lease sweeper releases it);
// - an answered request without its settlement: a request-log row that records a charge, or a 2xx
//   answer a provider served (every answer that reaches its attempts' commit point is settled,
//   exactly or on the documented estimate), whose trace has no settle row with that charge. Rows of
//   an endpoint that is never billed (token counting) are answers without a settlement by design.
import { nanoToDecimal } from '../money.ts';
import { UNBILLED_ENDPOINTS } from '../observe/request-row.ts';

/** The unbilled endpoints as an SQL list (ids of the code's own, never a client's text). */
const UNBILLED_SQL = UNBILLED_ENDPOINTS.map((e) => `'${e.replace(/'/g, "''")}'`).join(', ');

/** Wraps a SUM so the store returns it as an integer (PostgreSQL's SUM of bigint is numeric). */
export type IntegerSum = (expr: string) => string;

/**
 * Which holds have a row in the holds table: every hold (PostgreSQL: closed ones keep theirs, with
 * their state) or only the open ones (SQLite: a closed hold is its ledger rows alone).
 */
export type HoldRows = 'every' | 'open';

/**
 * `sliceSettles`: the ledger has a `slice_id` column (PostgreSQL's escrow): a settle row naming a
 * slice was admitted against that slice, not a hold of its own (the store checks slices itself).
 */
export function ledgerQueries(sum: IntegerSum, holdRows: HoldRows = 'every', sliceSettles = false) {
  const closed = (l: string) =>
    `EXISTS (SELECT 1 FROM ledger c WHERE c.trace_id = ${l}.trace_id AND c.kind IN ('settle', 'release'))`;
  return {
    balances: `SELECT workspace, ${sum("CASE kind WHEN 'credit' THEN amount_nano WHEN 'settle' THEN -amount_nano ELSE 0 END")} AS balance
       FROM ledger GROUP BY workspace`,
    held: `SELECT h.workspace, ${sum('h.amount_nano')} AS held FROM ledger h
       WHERE h.kind = 'hold' AND NOT EXISTS (SELECT 1 FROM ledger c WHERE c.trace_id = h.trace_id AND c.kind IN ('settle', 'release'))
       GROUP BY h.workspace`,
    wallets: 'SELECT workspace, balance_nano, held_nano FROM wallets',
    openHolds: `SELECT workspace, ${sum('amount_nano')} AS held FROM holds WHERE state = 'open' GROUP BY workspace`,
    closedTwice:
      "SELECT trace_id, COUNT(*) AS n FROM ledger WHERE kind IN ('settle', 'release') GROUP BY trace_id HAVING COUNT(*) > 1",
    repeated:
      "SELECT trace_id, kind, COUNT(*) AS n FROM ledger WHERE kind IN ('credit', 'hold') GROUP BY trace_id, kind HAVING COUNT(*) > 1",
    closedWithoutHold: `SELECT c.trace_id, c.kind FROM ledger c
       WHERE c.kind IN ('settle', 'release') AND NOT EXISTS (
         SELECT 1 FROM ledger h WHERE h.trace_id = c.trace_id AND h.kind = 'hold' AND h.workspace = c.workspace AND h.id < c.id)${sliceSettles ? ' AND c.slice_id IS NULL' : ''}`,
    nonPositiveCredits: "SELECT trace_id FROM ledger WHERE kind = 'credit' AND amount_nano <= 0",
    holdsVsLedger: `SELECT h.trace_id, h.workspace, h.amount_nano, h.state, h.cost_nano,
              l.workspace AS l_workspace, l.amount_nano AS l_amount, c.kind AS close_kind, c.amount_nano AS close_amount
       FROM holds h
       LEFT JOIN ledger l ON l.trace_id = h.trace_id AND l.kind = 'hold'
       LEFT JOIN ledger c ON c.trace_id = h.trace_id AND c.kind IN ('settle', 'release')`,
    ledgerHoldsWithoutRow: `SELECT l.trace_id FROM ledger l WHERE l.kind = 'hold'${holdRows === 'open' ? ` AND NOT ${closed('l')}` : ''}
       AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.trace_id = l.trace_id)`,
    // The join names the close index's own condition (kind IN settle, release) so SQLite can use it.
    answeredUnsettled: `SELECT r.trace_id, r.status, r.cost_nano, c.kind AS close_kind, c.amount_nano AS close_amount FROM request_log r
       LEFT JOIN ledger c ON c.trace_id = r.trace_id AND c.kind IN ('settle', 'release')
       WHERE (r.cost_nano IS NOT NULL OR (r.status >= 200 AND r.status < 300 AND r.model_served IS NOT NULL AND r.endpoint NOT IN (${UNBILLED_SQL})))
         AND (c.kind IS NULL OR c.kind <> 'settle' OR (r.cost_nano IS NOT NULL AND c.amount_nano <> r.cost_nano))
       ORDER BY r.id`,
  };
}

/** An open hold no live process will close (judged by the store: see the file's header). */
export interface UnservedHold {
  trace_id: string;
  workspace: string;
  /** Why nothing serves it, for the problem line. */
  why: string;
}

export type LedgerQueryName = keyof ReturnType<typeof ledgerQueries>;

/** The rows of each query in `ledgerQueries`. */
export interface LedgerRows {
  balances: { workspace: string; balance: bigint }[];
  held: { workspace: string; held: bigint }[];
  wallets: { workspace: string; balance_nano: bigint; held_nano: bigint }[];
  openHolds: { workspace: string; held: bigint }[];
  closedTwice: { trace_id: string; n: bigint }[];
  repeated: { trace_id: string; kind: string; n: bigint }[];
  closedWithoutHold: { trace_id: string; kind: string }[];
  nonPositiveCredits: { trace_id: string }[];
  holdsVsLedger: {
    trace_id: string;
    workspace: string;
    amount_nano: bigint;
    state: string;
    cost_nano: bigint | null;
    l_workspace: string | null;
    l_amount: bigint | null;
    close_kind: string | null;
    close_amount: bigint | null;
  }[];
  ledgerHoldsWithoutRow: { trace_id: string }[];
  answeredUnsettled: {
    trace_id: string;
    status: number | bigint;
    cost_nano: bigint | null;
    close_kind: string | null;
    close_amount: bigint | null;
  }[];
}

const usd = (nano: bigint): string => `${nanoToDecimal(nano)} USD`;

/** Every wallet recomputed from the ledger and the holds table; one line per disagreement. */
export function ledgerProblems(
  rows: LedgerRows,
  unserved: readonly UnservedHold[] = [],
  /** Per workspace, what its open slices hold (PostgreSQL's escrow): part of the wallet's held. */
  slicesHeld: ReadonlyMap<string, bigint> = new Map(),
): string[] {
  const problems: string[] = [];
  const expected = new Map<string, { balance: bigint; held: bigint }>();
  const slot = (ws: string) => {
    let e = expected.get(ws);
    if (!e) expected.set(ws, (e = { balance: 0n, held: 0n }));
    return e;
  };
  for (const r of rows.balances) slot(r.workspace).balance = r.balance;
  for (const r of rows.held) slot(r.workspace).held = r.held;
  for (const [ws, held] of slicesHeld) slot(ws).held += held;
  const openByWs = new Map(rows.openHolds.map((r) => [r.workspace, r.held]));
  for (const [ws, held] of slicesHeld) openByWs.set(ws, (openByWs.get(ws) ?? 0n) + held);
  const seen = new Set<string>();
  for (const w of rows.wallets) {
    seen.add(w.workspace);
    const e = expected.get(w.workspace) ?? { balance: 0n, held: 0n };
    if (w.balance_nano !== e.balance)
      problems.push(`wallet ${w.workspace}: balance ${usd(w.balance_nano)} but the ledger gives ${usd(e.balance)}`);
    if (w.held_nano !== e.held)
      problems.push(
        `wallet ${w.workspace}: held ${usd(w.held_nano)} but the ledger's open holds${slicesHeld.size > 0 ? ' and slices' : ''} sum to ${usd(e.held)}`,
      );
    const open = openByWs.get(w.workspace) ?? 0n;
    if (w.held_nano !== open)
      problems.push(
        `wallet ${w.workspace}: held ${usd(w.held_nano)} but the holds table's open holds${slicesHeld.size > 0 ? ' and slices' : ''} sum to ${usd(open)}`,
      );
  }
  for (const ws of expected.keys())
    if (!seen.has(ws)) problems.push(`ledger rows for workspace ${ws}, which has no wallet`);
  for (const ws of openByWs.keys())
    if (!seen.has(ws)) problems.push(`open holds for workspace ${ws}, which has no wallet`);
  for (const r of rows.closedTwice) problems.push(`trace ${r.trace_id} is closed ${r.n} times`);
  for (const r of rows.repeated) problems.push(`trace ${r.trace_id} has ${r.n} ${r.kind} rows`);
  for (const r of rows.closedWithoutHold)
    problems.push(`trace ${r.trace_id}: ${r.kind} without an earlier hold in the same workspace`);
  for (const r of rows.nonPositiveCredits) problems.push(`credit ${r.trace_id} is not positive`);
  // The holds table against the ledger, trace by trace.
  for (const r of rows.holdsVsLedger) {
    if (r.l_workspace === null) {
      problems.push(`hold ${r.trace_id} has no ledger row`);
      continue;
    }
    if (r.l_workspace !== r.workspace || r.l_amount !== r.amount_nano)
      problems.push(`hold ${r.trace_id} differs from its ledger row`);
    const want = r.close_kind === null ? 'open' : r.close_kind === 'settle' ? 'settled' : 'released';
    if (r.state !== want) problems.push(`hold ${r.trace_id} is ${r.state} but the ledger says ${want}`);
    if (r.state === 'settled' && r.cost_nano !== r.close_amount)
      problems.push(`hold ${r.trace_id}: cost differs from its settle row`);
  }
  for (const r of rows.ledgerHoldsWithoutRow) problems.push(`ledger hold ${r.trace_id} has no holds row`);
  for (const h of unserved)
    problems.push(`hold ${h.trace_id} of workspace ${h.workspace} is open but nothing serves it: ${h.why}`);
  for (const r of rows.answeredUnsettled) problems.push(answeredProblem(r));
  return problems;
}

function answeredProblem(r: LedgerRows['answeredUnsettled'][number]): string {
  const logged = r.cost_nano === null ? `answered ${Number(r.status)}` : `logged a charge of ${usd(r.cost_nano)}`;
  if (r.close_kind === null) return `request ${r.trace_id} ${logged} but has no settlement`;
  if (r.close_kind !== 'settle')
    return `request ${r.trace_id} ${logged} but its hold was ${r.close_kind}d, not settled`;
  return `request ${r.trace_id} ${logged} but was settled at ${usd(r.close_amount ?? 0n)}`;
}
