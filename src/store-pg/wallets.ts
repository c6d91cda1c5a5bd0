// Wallets and the ledger in PostgreSQL, outside admission: credits (the CLI's top-up), the wallet
// view, usage, and `ledger verify` — the same invariants as the embedded store's verify
// (src/store/wallets.ts), computed in one REPEATABLE READ snapshot so concurrent traffic cannot
// make a consistent database look inconsistent.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { MAX_WALLET_NANO, nanoToDecimal } from '../money.ts';
import type { UsageLine, WalletView } from '../store/types.ts';
import { WalletError } from '../store/wallets.ts';
import { inTransaction, type PgClient, type PgPool } from './connection.ts';

const DAY_MS = 86_400_000;
const usd = (nano: bigint) => `${nanoToDecimal(nano)} USD`;

export class PgWallets {
  constructor(
    private readonly pool: PgPool,
    private readonly clock: Clock,
  ) {}

  async credit(workspace: string, amountNano: bigint, note: string): Promise<{ traceId: string; balance: bigint }> {
    if (typeof workspace !== 'string' || workspace === '') throw new RangeError('workspace is required');
    if (typeof amountNano !== 'bigint' || amountNano <= 0n) throw new RangeError('a credit must be a positive bigint amount of nano-USD');
    const traceId = `credit_${randomUUID()}`;
    const now = this.clock.now();
    const balance = await inTransaction(this.pool, async (c) => {
      await c.query('INSERT INTO wallets (workspace, balance_nano, held_nano, updated_at) VALUES ($1, 0, 0, $2) ON CONFLICT DO NOTHING', [workspace, now]);
      const before = (await c.query<{ b: bigint }>('SELECT balance_nano AS b FROM wallets WHERE workspace = $1 FOR UPDATE', [workspace])).rows[0]?.b ?? 0n;
      if (amountNano > MAX_WALLET_NANO - before) {
        throw new WalletError(
          'balance_overflow',
          `crediting ${nanoToDecimal(amountNano)} USD to ${workspace} would take its balance from ${nanoToDecimal(before)} to ` +
            `${nanoToDecimal(before + amountNano)} USD, above the most a wallet can hold (${nanoToDecimal(MAX_WALLET_NANO)} USD); nothing was credited`,
        );
      }
      await c.query('UPDATE wallets SET balance_nano = balance_nano + $1, updated_at = $2 WHERE workspace = $3', [amountNano, now, workspace]);
      await c.query("INSERT INTO ledger (workspace, kind, amount_nano, trace_id, note, details, created_at) VALUES ($1, 'credit', $2, $3, $4, NULL, $5)", [
        workspace,
        amountNano,
        traceId,
        note === '' ? null : note,
        now,
      ]);
      return before + amountNano;
    });
    return { traceId, balance };
  }

  async show(workspace: string, now: number): Promise<WalletView> {
    const dayStart = now - (((now % DAY_MS) + DAY_MS) % DAY_MS);
    return inTransaction(
      this.pool,
      async (c) => {
        const w = (await c.query<{ balance_nano: bigint; held_nano: bigint }>('SELECT balance_nano, held_nano FROM wallets WHERE workspace = $1', [workspace])).rows[0];
        const spend = (
          await c.query<{ s: bigint }>(
            "SELECT COALESCE(SUM(amount_nano), 0)::bigint AS s FROM ledger WHERE workspace = $1 AND kind = 'settle' AND created_at >= $2 AND created_at < $3",
            [workspace, dayStart, dayStart + DAY_MS],
          )
        ).rows[0]?.s ?? 0n;
        const open = (await c.query<{ n: bigint }>("SELECT COUNT(*) AS n FROM holds WHERE workspace = $1 AND state = 'open'", [workspace])).rows[0]?.n ?? 0n;
        const balance = w?.balance_nano ?? 0n;
        const held = w?.held_nano ?? 0n;
        return { workspace, balance, held, available: balance - held, spendToday: spend, openHolds: Number(open) };
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
  }

  async usage(workspace: string, since = 0): Promise<UsageLine[]> {
    const r = await this.pool.query<{ model: string; provider: string; requests: bigint; cost: bigint }>(
      `SELECT COALESCE(details::jsonb->>'model', '') AS model, COALESCE(details::jsonb->>'provider', '') AS provider,
              COUNT(*) AS requests, SUM(amount_nano)::bigint AS cost
       FROM ledger WHERE workspace = $1 AND kind = 'settle' AND created_at >= $2
       GROUP BY 1, 2 ORDER BY cost DESC, model, provider`,
      [workspace, since],
    );
    return r.rows.map((x) => ({ model: x.model, provider: x.provider, requests: Number(x.requests), costNano: x.cost }));
  }

  async workspaces(): Promise<string[]> {
    return (await this.pool.query<{ workspace: string }>('SELECT workspace FROM wallets ORDER BY workspace')).rows.map((r) => r.workspace);
  }

  /** Every wallet recomputed from the ledger and the holds table; one line per disagreement. */
  async verify(): Promise<{ ok: boolean; problems: string[] }> {
    const problems = await inTransaction(this.pool, (c) => verifyIn(c), 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    return { ok: problems.length === 0, problems };
  }
}

async function verifyIn(c: PgClient): Promise<string[]> {
  const problems: string[] = [];
  const q = async <T extends object>(sql: string): Promise<T[]> => (await c.query<T>(sql)).rows;
  const expected = new Map<string, { balance: bigint; held: bigint }>();
  const slot = (ws: string) => {
    let e = expected.get(ws);
    if (!e) expected.set(ws, (e = { balance: 0n, held: 0n }));
    return e;
  };
  for (const r of await q<{ workspace: string; balance: bigint }>(
    `SELECT workspace, SUM(CASE kind WHEN 'credit' THEN amount_nano WHEN 'settle' THEN -amount_nano ELSE 0 END)::bigint AS balance FROM ledger GROUP BY workspace`,
  ))
    slot(r.workspace).balance = r.balance;
  for (const r of await q<{ workspace: string; held: bigint }>(
    `SELECT h.workspace, SUM(h.amount_nano)::bigint AS held FROM ledger h
     WHERE h.kind = 'hold' AND NOT EXISTS (SELECT 1 FROM ledger c WHERE c.trace_id = h.trace_id AND c.kind IN ('settle', 'release'))
     GROUP BY h.workspace`,
  ))
    slot(r.workspace).held = r.held;
  const openByWs = new Map(
    (await q<{ workspace: string; held: bigint }>("SELECT workspace, SUM(amount_nano)::bigint AS held FROM holds WHERE state = 'open' GROUP BY workspace")).map((r) => [
      r.workspace,
      r.held,
    ]),
  );
  const seen = new Set<string>();
  for (const w of await q<{ workspace: string; balance_nano: bigint; held_nano: bigint }>('SELECT workspace, balance_nano, held_nano FROM wallets')) {
    seen.add(w.workspace);
    const e = expected.get(w.workspace) ?? { balance: 0n, held: 0n };
    if (w.balance_nano !== e.balance) problems.push(`wallet ${w.workspace}: balance ${usd(w.balance_nano)} but the ledger gives ${usd(e.balance)}`);
    if (w.held_nano !== e.held) problems.push(`wallet ${w.workspace}: held ${usd(w.held_nano)} but the ledger's open holds sum to ${usd(e.held)}`);
    const open = openByWs.get(w.workspace) ?? 0n;
    if (w.held_nano !== open) problems.push(`wallet ${w.workspace}: held ${usd(w.held_nano)} but the holds table's open holds sum to ${usd(open)}`);
  }
  for (const ws of expected.keys()) if (!seen.has(ws)) problems.push(`ledger rows for workspace ${ws}, which has no wallet`);
  for (const ws of openByWs.keys()) if (!seen.has(ws)) problems.push(`open holds for workspace ${ws}, which has no wallet`);
  for (const r of await q<{ trace_id: string; n: bigint }>(
    "SELECT trace_id, COUNT(*) AS n FROM ledger WHERE kind IN ('settle', 'release') GROUP BY trace_id HAVING COUNT(*) > 1",
  ))
    problems.push(`trace ${r.trace_id} is closed ${r.n} times`);
  for (const r of await q<{ trace_id: string; kind: string; n: bigint }>(
    "SELECT trace_id, kind, COUNT(*) AS n FROM ledger WHERE kind IN ('credit', 'hold') GROUP BY trace_id, kind HAVING COUNT(*) > 1",
  ))
    problems.push(`trace ${r.trace_id} has ${r.n} ${r.kind} rows`);
  for (const r of await q<{ trace_id: string; kind: string }>(
    `SELECT c.trace_id, c.kind FROM ledger c WHERE c.kind IN ('settle', 'release') AND NOT EXISTS (
       SELECT 1 FROM ledger h WHERE h.trace_id = c.trace_id AND h.kind = 'hold' AND h.workspace = c.workspace AND h.id < c.id)`,
  ))
    problems.push(`trace ${r.trace_id}: ${r.kind} without an earlier hold in the same workspace`);
  for (const r of await q<{ trace_id: string }>("SELECT trace_id FROM ledger WHERE kind = 'credit' AND amount_nano <= 0")) problems.push(`credit ${r.trace_id} is not positive`);
  for (const r of await q<{
    trace_id: string;
    workspace: string;
    amount_nano: bigint;
    state: string;
    cost_nano: bigint | null;
    l_workspace: string | null;
    l_amount: bigint | null;
    close_kind: string | null;
    close_amount: bigint | null;
  }>(
    `SELECT h.trace_id, h.workspace, h.amount_nano, h.state, h.cost_nano,
            l.workspace AS l_workspace, l.amount_nano AS l_amount, c.kind AS close_kind, c.amount_nano AS close_amount
     FROM holds h
     LEFT JOIN ledger l ON l.trace_id = h.trace_id AND l.kind = 'hold'
     LEFT JOIN ledger c ON c.trace_id = h.trace_id AND c.kind IN ('settle', 'release')`,
  )) {
    if (r.l_workspace === null) {
      problems.push(`hold ${r.trace_id} has no ledger row`);
      continue;
    }
    if (r.l_workspace !== r.workspace || r.l_amount !== r.amount_nano) problems.push(`hold ${r.trace_id} differs from its ledger row`);
    const want = r.close_kind === null ? 'open' : r.close_kind === 'settle' ? 'settled' : 'released';
    if (r.state !== want) problems.push(`hold ${r.trace_id} is ${r.state} but the ledger says ${want}`);
    if (r.state === 'settled' && r.cost_nano !== r.close_amount) problems.push(`hold ${r.trace_id}: cost differs from its settle row`);
  }
  for (const r of await q<{ trace_id: string }>(
    "SELECT l.trace_id FROM ledger l WHERE l.kind = 'hold' AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.trace_id = l.trace_id)",
  ))
    problems.push(`ledger hold ${r.trace_id} has no holds row`);
  return problems;
}
