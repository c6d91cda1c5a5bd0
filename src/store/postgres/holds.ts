// Admission holds on PostgreSQL, exact across any number of gateway nodes. Each write is ONE
// statement (a data-modifying CTE), so it is atomic without an explicit transaction and never reads
// then writes from the client:
//   hold     the wallet row is updated only `WHERE balance − held >= amount`; under concurrency
//            PostgreSQL locks the row and re-checks that condition against the latest committed
//            version (READ COMMITTED's re-evaluation), so two nodes can never both take the last
//            dollar. The hold row and the ledger row are inserted from the UPDATE's result, in the
//            same statement: all three or none.
//   settle / release
//            close the hold `WHERE state = 'open'` and move the wallet and the ledger from that
//            result: a second settle or release of a trace (a retry, a race with the sweeper)
//            matches no open hold and changes nothing. The ledger's unique indexes back this up.
//   renew    a live node pushes `lease_until` of the holds it still serves.
//   sweep    any node releases open holds whose lease lapsed (their node died or lost the database).
//
// Column ranges: an amount is checked against what its BIGINT column holds (0 … 2^63 − 1 nano-USD)
// before the statement is sent; a wallet change out of range fails its own statement (22003), and
// every statement is one request's, so no other request's write goes with it.
//
// Time: `now` comes from the caller's injected clock; nodes are expected to keep their clocks in sync
// (NTP) well within the lease's margin (lease − renew interval, 20 s by default).
import { MAX_WALLET_NANO } from '../../money.ts';
import type { LedgerDetails, RequestLogRow } from '../types.ts';
import { WalletError } from '../errors.ts';
import type { PgPool } from './db.ts';
import { SETTLED_LOG_COLUMNS, SETTLED_LOG_VALUES, settledLogJson } from './request-log.ts';

/** A hold's lease: released by any node this long after its last renewal. */
export const HOLD_LEASE_MS = 30_000;
/** How often a node renews its open holds (and sweeps lapsed ones): a third of the lease. */
export const LEASE_RENEW_MS = 10_000;

export type PgHoldResult = { ok: true } | { ok: false; available: bigint };

const HOLD_SQL = `
WITH w AS (
  UPDATE wallets SET held_nano = held_nano + $3, updated_at = $4
  WHERE workspace = $1 AND balance_nano - held_nano >= $3
  RETURNING workspace
), h AS (
  INSERT INTO holds (trace_id, workspace, amount_nano, state, cost_nano, node, created_at, lease_until, closed_at)
  SELECT $2, workspace, $3, 'open', NULL, $5, $4, $6, NULL FROM w
  RETURNING trace_id, workspace
), l AS (
  INSERT INTO ledger (workspace, kind, amount_nano, trace_id, note, details, created_at)
  SELECT workspace, 'hold', $3, trace_id, NULL, NULL, $4 FROM h
  RETURNING id
)
SELECT (SELECT COUNT(*) FROM l) AS held,
       (SELECT balance_nano - held_nano FROM wallets WHERE workspace = $1) AS available`;

const CLOSE_SQL = `
WITH h AS (
  UPDATE holds SET state = $2, cost_nano = $3, closed_at = $4
  WHERE trace_id = $1 AND state = 'open'
  RETURNING trace_id, workspace, amount_nano
), w AS (
  UPDATE wallets SET balance_nano = wallets.balance_nano - $3, held_nano = wallets.held_nano - h.amount_nano, updated_at = $4
  FROM h WHERE wallets.workspace = h.workspace
  RETURNING wallets.workspace
), l AS (
  INSERT INTO ledger (workspace, kind, amount_nano, trace_id, note, details, created_at)
  SELECT h.workspace, $5, CASE WHEN $5 = 'settle' THEN $3 ELSE h.amount_nano END, h.trace_id, $6, $7, $4 FROM h
  RETURNING id
)
SELECT (SELECT COUNT(*) FROM l) AS closed, (SELECT COUNT(*) FROM w) AS wallets`;

/** Closes many holds in one statement: the inputs as parallel arrays ($1 trace ids, $2 states,
 *  $3 costs, $4 notes, $5 details, $7 settlements' log rows), $6 now. Each wallet is updated once
 *  with its holds' sums, and each settlement's log row is inserted with it (unless its trace has one
 *  already: the request's final row, which has the last word); the data-modifying CTEs run to
 *  completion whether or not the final SELECT reads them. */
const CLOSE_MANY_SQL = `
WITH i AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $7::text[]) AS i(trace_id, state, cost, note, details, log_row)
), h AS (
  UPDATE holds SET state = i.state, cost_nano = i.cost, closed_at = $6
  FROM i WHERE holds.trace_id = i.trace_id AND holds.state = 'open'
  RETURNING holds.trace_id, holds.workspace, holds.amount_nano, i.state, i.cost, i.note, i.details
), s AS (
  SELECT workspace, SUM(cost) AS cost, SUM(amount_nano) AS amount FROM h GROUP BY workspace
), w AS (
  UPDATE wallets SET balance_nano = wallets.balance_nano - s.cost, held_nano = wallets.held_nano - s.amount, updated_at = $6
  FROM s WHERE wallets.workspace = s.workspace
  RETURNING wallets.workspace
), l AS (
  INSERT INTO ledger (workspace, kind, amount_nano, trace_id, note, details, created_at)
  SELECT workspace, CASE WHEN state = 'settled' THEN 'settle' ELSE 'release' END,
         CASE WHEN state = 'settled' THEN cost ELSE amount_nano END, trace_id, note, details, $6 FROM h
  RETURNING id
), r AS (
  INSERT INTO request_log (${SETTLED_LOG_COLUMNS})
  SELECT ${SETTLED_LOG_VALUES} FROM h JOIN i ON i.trace_id = h.trace_id,
    LATERAL json_populate_record(NULL::request_log, i.log_row::json) p
  WHERE h.state = 'settled' AND i.log_row IS NOT NULL
    AND (SELECT x.id FROM request_log x WHERE x.trace_id = h.trace_id LIMIT 1) IS NULL
  RETURNING 1
)
SELECT trace_id FROM h`;

/** One hold to close in a batch: a settlement at `cost`, or a release (cost 0) with its note. */
export type HoldClose =
  | {
      traceId: string;
      kind: 'settle';
      cost: bigint;
      details: LedgerDetails;
      /** The request's log row as known at settlement, committed with the charge. */
      logRow?: RequestLogRow | undefined;
    }
  | { traceId: string; kind: 'release'; note: string | null };

const SWEEP_SQL = `
WITH h AS (
  UPDATE holds SET state = 'released', cost_nano = 0, closed_at = $1
  WHERE trace_id IN (SELECT trace_id FROM holds WHERE state = 'open' AND lease_until < $1 ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED)
    AND state = 'open'
  RETURNING trace_id, workspace, amount_nano, node
), s AS (
  SELECT workspace, SUM(amount_nano) AS amount FROM h GROUP BY workspace
), w AS (
  UPDATE wallets SET held_nano = wallets.held_nano - s.amount, updated_at = $1 FROM s WHERE wallets.workspace = s.workspace
  RETURNING wallets.workspace
), l AS (
  INSERT INTO ledger (workspace, kind, amount_nano, trace_id, note, details, created_at)
  SELECT workspace, 'release', amount_nano, trace_id, 'hold lease lapsed (node ' || node || ')', NULL, $1 FROM h
  RETURNING id
)
SELECT (SELECT COUNT(*) FROM l) AS released`;

export class PgHolds {
  private readonly pool: PgPool;
  constructor(pool: PgPool) {
    this.pool = pool;
  }

  /**
   * Takes `amount` on the workspace's wallet when balance − held covers it, in one statement.
   * `node` names the taker (for the sweeper's ledger note); the lease runs to `now + leaseMs`.
   * A trace that already has a hold is a WalletError (nothing is written).
   */
  async hold(
    workspace: string,
    traceId: string,
    amount: bigint,
    now: number,
    node: string,
    leaseMs = HOLD_LEASE_MS,
    retries = 3,
  ): Promise<PgHoldResult> {
    if (typeof workspace !== 'string' || workspace === '') throw new RangeError('workspace is required');
    if (typeof traceId !== 'string' || traceId === '') throw new RangeError('trace id is required');
    if (typeof amount !== 'bigint' || amount < 0n)
      throw new RangeError('a hold must be a non-negative bigint amount of nano-USD');
    checkFits(amount, 'hold', traceId);
    let r: { rows: { held: bigint; available: bigint | null }[] };
    try {
      r = await this.pool.query<{ held: bigint; available: bigint | null }>(HOLD_SQL, [
        workspace,
        traceId,
        amount,
        now,
        node,
        now + leaseMs,
      ]);
    } catch (err) {
      if ((err as { code?: unknown }).code === '23505')
        throw new WalletError('duplicate_trace', `trace ${traceId} already has a hold`);
      throw err;
    }
    const row = r.rows[0];
    if (row && row.held === 1n) return { ok: true };
    if (row?.available === null && amount === 0n) {
      // A zero hold on a workspace that never had a wallet: create the empty wallet, then hold.
      await this.pool.query(
        'INSERT INTO wallets (workspace, balance_nano, held_nano, updated_at) VALUES ($1, 0, 0, $2) ON CONFLICT DO NOTHING',
        [workspace, now],
      );
      return this.hold(workspace, traceId, amount, now, node, leaseMs);
    }
    // The refusal's `available` was read in the statement's snapshot, which can predate concurrent
    // holds and closes the UPDATE's re-check already saw: read it afresh, and when the wallet covers
    // the hold now (a concurrent close freed money), try again — a bounded number of times.
    const fresh = await this.pool.query<{ available: bigint }>(
      'SELECT balance_nano - held_nano AS available FROM wallets WHERE workspace = $1',
      [workspace],
    );
    const available = fresh.rows[0]?.available ?? 0n;
    if (available >= amount && retries > 0)
      return this.hold(workspace, traceId, amount, now, node, leaseMs, retries - 1);
    return { ok: false, available };
  }

  /** Charges `cost` and closes the hold; false (nothing written) when the trace has no open hold. */
  async settle(traceId: string, cost: bigint, details: LedgerDetails, now: number): Promise<boolean> {
    if (typeof cost !== 'bigint' || cost < 0n)
      throw new RangeError('a cost must be a non-negative bigint amount of nano-USD');
    checkFits(cost, 'cost', traceId);
    const r = await this.pool.query<{ closed: bigint }>(CLOSE_SQL, [
      traceId,
      'settled',
      cost,
      now,
      'settle',
      null,
      JSON.stringify(details),
    ]);
    return r.rows[0]?.closed === 1n;
  }

  /** Closes the hold at zero cost; false (nothing written) when the trace has no open hold. */
  async release(traceId: string, now: number, note: string | null = null): Promise<boolean> {
    const r = await this.pool.query<{ closed: bigint }>(CLOSE_SQL, [
      traceId,
      'released',
      0n,
      now,
      'release',
      note,
      null,
    ]);
    return r.rows[0]?.closed === 1n;
  }

  /**
   * Settles and releases many holds in ONE statement (one round trip, each wallet row updated once
   * however many of its holds close): the traces that had an open hold and were closed now. A trace
   * may appear once; a failure writes nothing of the batch (the caller re-runs its closes one by one
   * to learn which one the database refuses).
   */
  async closeMany(closes: readonly HoldClose[], now: number): Promise<Set<string>> {
    if (closes.length === 0) return new Set();
    const seen = new Set<string>();
    for (const c of closes) {
      if (seen.has(c.traceId)) throw new RangeError(`trace ${c.traceId} appears twice in one batch of closes`);
      seen.add(c.traceId);
      if (c.kind === 'settle') {
        if (typeof c.cost !== 'bigint' || c.cost < 0n)
          throw new RangeError('a cost must be a non-negative bigint amount of nano-USD');
        checkFits(c.cost, 'cost', c.traceId);
      }
    }
    const r = await this.pool.query<{ trace_id: string }>(CLOSE_MANY_SQL, [
      closes.map((c) => c.traceId),
      closes.map((c) => (c.kind === 'settle' ? 'settled' : 'released')),
      closes.map((c) => (c.kind === 'settle' ? c.cost : 0n)),
      closes.map((c) => (c.kind === 'release' ? c.note : null)),
      closes.map((c) => (c.kind === 'settle' ? JSON.stringify(c.details) : null)),
      now,
      closes.map((c) => (c.kind === 'settle' && c.logRow ? settledLogJson(c.logRow) : null)),
    ]);
    return new Set(r.rows.map((row) => row.trace_id));
  }

  /** Pushes the lease of these (still open) holds to `now + leaseMs`; returns how many were open. */
  async renew(traceIds: readonly string[], now: number, leaseMs = HOLD_LEASE_MS): Promise<number> {
    if (traceIds.length === 0) return 0;
    const r = await this.pool.query(
      "UPDATE holds SET lease_until = $2 WHERE trace_id = ANY($1::text[]) AND state = 'open'",
      [traceIds, now + leaseMs],
    );
    return r.rowCount ?? 0;
  }

  /** Releases open holds whose lease ended before `now` (at most `limit` per call); returns how many. */
  async sweep(now: number, limit = 1000): Promise<number> {
    const r = await this.pool.query<{ released: bigint }>(SWEEP_SQL, [now, limit]);
    return Number(r.rows[0]?.released ?? 0n);
  }
}

/** An amount within its BIGINT column, else a WalletError naming the trace (nothing is sent). */
function checkFits(v: bigint, what: string, traceId: string): void {
  if (v <= MAX_WALLET_NANO) return;
  throw new WalletError(
    'amount_out_of_range',
    `the ${what} of trace ${traceId} (${v} nano-USD) is outside what the ledger holds (0 to ${MAX_WALLET_NANO} nano-USD); nothing of it was written`,
  );
}
