// What `ledger verify` checks of the wallet slices (escrow, src/store/postgres/slices.ts), beside the
// shared ledger invariants: an open slice counts in its wallet's held amount; what a slice says it
// spent equals its ledger settle rows; a settle row names a slice of its own workspace; and an open
// slice whose lease lapsed is one no live node serves (its credit is held for nothing until a sweep).
import { nanoToDecimal } from '../../money.ts';
import type { PgClient } from './db.ts';

export interface SliceFindings {
  /** Per workspace, what its open slices hold. */
  held: Map<string, bigint>;
  problems: string[];
}

export async function sliceFindings(c: PgClient, now: number): Promise<SliceFindings> {
  const held = new Map<string, bigint>();
  const open = await c.query<{ workspace: string; held: bigint }>(
    "SELECT workspace, SUM(amount_nano)::bigint AS held FROM slices WHERE state = 'open' GROUP BY workspace",
  );
  for (const r of open.rows) held.set(r.workspace, r.held);
  const problems: string[] = [];
  const spent = await c.query<{ id: string; spent_nano: bigint; ledger: bigint }>(
    `SELECT s.id, s.spent_nano, COALESCE(SUM(l.amount_nano), 0)::bigint AS ledger
     FROM slices s LEFT JOIN ledger l ON l.slice_id = s.id AND l.kind = 'settle'
     GROUP BY s.id, s.spent_nano HAVING s.spent_nano <> COALESCE(SUM(l.amount_nano), 0) ORDER BY s.id`,
  );
  for (const r of spent.rows)
    problems.push(
      `slice ${r.id} spent ${nanoToDecimal(r.spent_nano)} USD but its settle rows sum to ${nanoToDecimal(r.ledger)} USD`,
    );
  const stray = await c.query<{ trace_id: string; slice_id: string }>(
    `SELECT l.trace_id, l.slice_id FROM ledger l WHERE l.slice_id IS NOT NULL
       AND (l.kind <> 'settle' OR NOT EXISTS (SELECT 1 FROM slices s WHERE s.id = l.slice_id AND s.workspace = l.workspace))
     ORDER BY l.id`,
  );
  for (const r of stray.rows)
    problems.push(`trace ${r.trace_id} names slice ${r.slice_id}, which is not a slice of its workspace`);
  const lapsed = await c.query<{ id: string; workspace: string; node: string; lease_until: bigint }>(
    "SELECT id, workspace, node, lease_until FROM slices WHERE state = 'open' AND lease_until < $1 ORDER BY id",
    [now],
  );
  for (const s of lapsed.rows)
    problems.push(
      `slice ${s.id} of workspace ${s.workspace} is open but nothing serves it: its lease lapsed ${Number(BigInt(now) - BigInt(s.lease_until))} ms ago (node ${s.node} stopped renewing it); any node's sweeper releases it`,
    );
  return { held, problems };
}
