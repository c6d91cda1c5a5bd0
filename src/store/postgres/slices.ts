// Wallet slices (escrow) on PostgreSQL. A node reserves a slice of a wallet's available balance and
// admits requests against it in its own memory; PostgreSQL sees one statement per slice change and
// one per batch of settlements, instead of two per request. Every write is ONE statement:
//   take     grows the node's slice (or opens it) by up to `want`, never more than `1/fraction` of
//            what is available beyond the request's own need, and only when at least `floor` is
//            available. The wallet row is locked (after the slice's own row: every statement on a
//            slice locks slice, then wallet) before the grant is computed (`FOR UPDATE` returns its latest committed
//            version), so the grant is computed from the same row the UPDATE then changes: two nodes
//            can never both take the last dollar. The slice counts in `wallets.held_nano`.
//   settle   charges many settlements out of the node's open slices: one ledger settle row per trace
//            (naming its slice; the close index makes a trace settle once, a retry is a no-op), the
//            slices' amounts and the wallets' balance and held each moved once by their sums, and
//            each settlement's request-log row inserted with it (unless its trace has one already:
//            then that is the request's final row, which has the last word). A slice that is no longer open (its lease lapsed and another node released it)
//            charges nothing.
//   shrink   gives back part of a slice; `close` gives back all of it.
//   renew    a live node pushes `lease_until` of its open slices; `sweep` releases lapsed ones
//            (any node), as for holds.
// Amounts are checked against their BIGINT columns before anything is sent.
import { MAX_WALLET_NANO } from '../../money.ts';
import type { LedgerDetails, RequestLogRow } from '../types.ts';
import type { PgPool } from './db.ts';
import { HOLD_LEASE_MS } from './holds.ts';
import { SETTLED_LOG_COLUMNS, SETTLED_LOG_VALUES, settledLogJson } from './request-log.ts';

export interface SliceTake {
  /** Granted now (0: nothing; the slice, if it existed, is unchanged). */
  granted: bigint;
  /** The wallet's available balance (balance − held) after the statement; null: no wallet. */
  available: bigint | null;
  /** When growing an existing slice: false if it is no longer open (lapsed and released). */
  sliceOpen: boolean;
}

/** One settlement out of a slice: the trace, its slice and the charge. */
export interface SliceSettle {
  traceId: string;
  sliceId: string;
  cost: bigint;
  details: LedgerDetails;
  /** The request's log row as known at settlement, committed with the charge. */
  logRow?: RequestLogRow | undefined;
}

const TAKE_SQL = `
WITH s AS (
  -- The slice first, then its wallet: the order of every statement on a slice (settle, shrink,
  -- close), so a node's slice statement and its settlement batch never wait on each other in a cycle.
  SELECT id FROM slices WHERE id = $2 AND state = 'open' FOR UPDATE
), cur AS (
  SELECT workspace, balance_nano - held_nano AS avail FROM wallets
  WHERE workspace = $1 AND (SELECT count(*) FROM s) >= 0 FOR UPDATE
), g AS (
  SELECT workspace, GREATEST($4::bigint, LEAST($3::bigint, (avail - $4::bigint) / $5::bigint + $4::bigint)) AS amount
  FROM cur WHERE avail >= GREATEST($4::bigint, $6::bigint) AND ($7::boolean = false OR EXISTS (SELECT 1 FROM s))
), w AS (
  UPDATE wallets SET held_nano = wallets.held_nano + g.amount, updated_at = $8
  FROM g WHERE wallets.workspace = g.workspace
  RETURNING wallets.balance_nano - wallets.held_nano AS avail
), ins AS (
  INSERT INTO slices (id, workspace, amount_nano, spent_nano, state, node, created_at, lease_until, closed_at)
  SELECT $2, workspace, amount, 0, 'open', $9, $8, $10, NULL FROM g WHERE $7::boolean = false
  RETURNING id
), upd AS (
  UPDATE slices SET amount_nano = slices.amount_nano + g.amount, lease_until = $10
  FROM g WHERE slices.id = $2 AND $7::boolean
  RETURNING slices.id
)
SELECT (SELECT amount FROM g) AS granted,
       COALESCE((SELECT avail FROM w), (SELECT avail FROM cur)) AS available,
       (SELECT COUNT(*) FROM s) AS open,
       (SELECT COUNT(*) FROM ins) + (SELECT COUNT(*) FROM upd) AS written`;

const SETTLE_SQL = `
WITH i AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $6::text[]) AS i(trace_id, slice_id, cost, details, log_row)
), s AS (
  SELECT id, workspace FROM slices WHERE id IN (SELECT slice_id FROM i) AND state = 'open' FOR UPDATE
), l AS (
  INSERT INTO ledger (workspace, kind, amount_nano, trace_id, note, details, created_at, slice_id)
  SELECT s.workspace, 'settle', i.cost, i.trace_id, NULL, i.details, $5, i.slice_id FROM i JOIN s ON s.id = i.slice_id
  ON CONFLICT (trace_id) WHERE kind IN ('settle', 'release') DO NOTHING
  RETURNING trace_id, slice_id, workspace, amount_nano
), r AS (
  INSERT INTO request_log (${SETTLED_LOG_COLUMNS})
  SELECT ${SETTLED_LOG_VALUES} FROM i JOIN l ON l.trace_id = i.trace_id,
    LATERAL json_populate_record(NULL::request_log, i.log_row::json) p
  WHERE i.log_row IS NOT NULL AND (SELECT x.id FROM request_log x WHERE x.trace_id = i.trace_id LIMIT 1) IS NULL
  RETURNING 1
), g AS (
  SELECT slice_id, workspace, SUM(amount_nano) AS cost FROM l GROUP BY slice_id, workspace
), u AS (
  UPDATE slices SET amount_nano = slices.amount_nano - g.cost, spent_nano = slices.spent_nano + g.cost
  FROM g WHERE slices.id = g.slice_id
  RETURNING slices.id
), wg AS (
  SELECT workspace, SUM(cost) AS cost FROM g GROUP BY workspace
), wl AS (
  -- A batch of several wallets locks them in one order (two nodes' batches never wait on each
  -- other in a cycle); after the slices, as every statement on a slice does (slice, then wallet).
  SELECT workspace FROM wallets WHERE workspace IN (SELECT workspace FROM wg) ORDER BY workspace FOR UPDATE
), w AS (
  UPDATE wallets SET balance_nano = wallets.balance_nano - wg.cost, held_nano = wallets.held_nano - wg.cost, updated_at = $5
  FROM wg WHERE wallets.workspace = wg.workspace AND (SELECT count(*) FROM wl) >= 0
  RETURNING wallets.workspace
)
SELECT trace_id FROM l
UNION
SELECT x.trace_id FROM ledger x JOIN i ON i.trace_id = x.trace_id AND i.slice_id = x.slice_id WHERE x.kind = 'settle'`;

const SHRINK_SQL = `
WITH s AS (
  UPDATE slices SET amount_nano = amount_nano - $2
  WHERE id = $1 AND state = 'open' AND amount_nano >= $2
  RETURNING workspace
), w AS (
  UPDATE wallets SET held_nano = wallets.held_nano - $2, updated_at = $3 FROM s WHERE wallets.workspace = s.workspace
  RETURNING wallets.workspace
)
SELECT (SELECT COUNT(*) FROM w) AS shrunk`;

const CLOSE_SQL = `
WITH s AS (
  UPDATE slices SET state = 'returned', closed_at = $2 WHERE id = $1 AND state = 'open'
  RETURNING workspace, amount_nano
), w AS (
  UPDATE wallets SET held_nano = wallets.held_nano - s.amount_nano, updated_at = $2 FROM s WHERE wallets.workspace = s.workspace
  RETURNING wallets.workspace
)
SELECT (SELECT amount_nano FROM s) AS returned`;

const SWEEP_SQL = `
WITH s AS (
  UPDATE slices SET state = 'lapsed', closed_at = $1
  WHERE id IN (SELECT id FROM slices WHERE state = 'open' AND lease_until < $1 ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED)
    AND state = 'open'
  RETURNING workspace, amount_nano
), g AS (
  SELECT workspace, SUM(amount_nano) AS amount FROM s GROUP BY workspace
), w AS (
  UPDATE wallets SET held_nano = wallets.held_nano - g.amount, updated_at = $1 FROM g WHERE wallets.workspace = g.workspace
  RETURNING wallets.workspace
)
SELECT (SELECT COUNT(*) FROM s) AS released`;

export class PgSlices {
  private readonly pool: PgPool;
  constructor(pool: PgPool) {
    this.pool = pool;
  }

  /**
   * Opens slice `sliceId` (grow false) or grows it (grow true, only while it is open) by
   * `need + min(want − need, (available − need) / fraction)`, at least `need`, when at least
   * max(need, floor) is available — in one statement. Nothing changes when it is not.
   */
  async take(
    req: {
      workspace: string;
      sliceId: string;
      grow: boolean;
      want: bigint;
      need: bigint;
      floor: bigint;
      fraction: bigint;
    },
    now: number,
    node: string,
    leaseMs = HOLD_LEASE_MS,
  ): Promise<SliceTake> {
    for (const [v, what] of [
      [req.want, 'want'],
      [req.need, 'need'],
      [req.floor, 'floor'],
    ] as const)
      if (v < 0n || v > MAX_WALLET_NANO)
        throw new RangeError(`a slice's ${what} must be within 0 … ${MAX_WALLET_NANO}`);
    if (req.fraction < 1n) throw new RangeError('a slice fraction is at least 1');
    const r = await this.pool.query<{
      granted: bigint | null;
      available: bigint | null;
      open: bigint;
      written: bigint;
    }>(TAKE_SQL, [
      req.workspace,
      req.sliceId,
      req.want,
      req.need,
      req.fraction,
      req.floor,
      req.grow,
      now,
      node,
      now + leaseMs,
    ]);
    const row = r.rows[0];
    const granted = row && row.written > 0n ? (row.granted ?? 0n) : 0n;
    return { granted, available: row?.available ?? null, sliceOpen: !req.grow || (row?.open ?? 0n) > 0n };
  }

  /**
   * Charges settlements out of open slices in ONE statement. Returns the traces that are charged
   * now or were charged by an earlier attempt (a retry after an unanswered statement); a trace of a
   * slice no longer open is charged nothing and is not in the set. A trace may appear once.
   */
  async settleMany(settles: readonly SliceSettle[], now: number): Promise<Set<string>> {
    if (settles.length === 0) return new Set();
    const seen = new Set<string>();
    for (const s of settles) {
      if (seen.has(s.traceId)) throw new RangeError(`trace ${s.traceId} appears twice in one batch of settlements`);
      seen.add(s.traceId);
      if (typeof s.cost !== 'bigint' || s.cost < 0n || s.cost > MAX_WALLET_NANO)
        throw new RangeError(`the cost of trace ${s.traceId} must be within 0 … ${MAX_WALLET_NANO} nano-USD`);
    }
    const r = await this.pool.query<{ trace_id: string }>(SETTLE_SQL, [
      settles.map((s) => s.traceId),
      settles.map((s) => s.sliceId),
      settles.map((s) => s.cost),
      settles.map((s) => JSON.stringify(s.details)),
      now,
      settles.map((s) => (s.logRow ? settledLogJson(s.logRow) : null)),
    ]);
    return new Set(r.rows.map((row) => row.trace_id));
  }

  /** Gives `amount` of an open slice back to its wallet; false when it is not open (or smaller). */
  async shrink(sliceId: string, amount: bigint, now: number): Promise<boolean> {
    if (amount === 0n) return true;
    const r = await this.pool.query<{ shrunk: bigint }>(SHRINK_SQL, [sliceId, amount, now]);
    return (r.rows[0]?.shrunk ?? 0n) > 0n;
  }

  /** Gives all of an open slice back and closes it; the amount returned (null: it was not open). */
  async close(sliceId: string, now: number): Promise<bigint | null> {
    const r = await this.pool.query<{ returned: bigint | null }>(CLOSE_SQL, [sliceId, now]);
    return r.rows[0]?.returned ?? null;
  }

  /** Pushes the lease of these slices; returns the ids that are still open. */
  async renew(sliceIds: readonly string[], now: number, leaseMs = HOLD_LEASE_MS): Promise<Set<string>> {
    if (sliceIds.length === 0) return new Set();
    const r = await this.pool.query<{ id: string }>(
      "UPDATE slices SET lease_until = $2 WHERE id = ANY($1::text[]) AND state = 'open' RETURNING id",
      [sliceIds, now + leaseMs],
    );
    return new Set(r.rows.map((row) => row.id));
  }

  /** Releases open slices whose lease ended before `now` (at most `limit`); returns how many. */
  async sweep(now: number, limit = 1000): Promise<number> {
    const r = await this.pool.query<{ released: bigint }>(SWEEP_SQL, [now, limit]);
    return Number(r.rows[0]?.released ?? 0n);
  }
}
