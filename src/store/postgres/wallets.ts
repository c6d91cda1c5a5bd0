// Wallets and the ledger in PostgreSQL, outside admission: credits (the CLI's top-up), the wallet
// view, usage, and `ledger verify` — the same invariants as the embedded store's verify
// (src/store/sqlite/wallets.ts), computed in one REPEATABLE READ snapshot so concurrent traffic cannot
// make a consistent database look inconsistent.
import type { Clock } from '../../clock.ts';
import { MAX_WALLET_NANO, nanoToDecimal } from '../../money.ts';
import type { CreditResult, UsageLine, WalletView } from '../types.ts';
import { checkRepeat, creditTraceId, type EarlierCredit } from '../credit-id.ts';
import {
  type LedgerQueryName,
  ledgerProblems,
  ledgerQueries,
  type LedgerRows,
  type UnservedHold,
} from '../ledger-invariants.ts';
import { WalletError } from '../errors.ts';
import { inTransaction, type PgClient, type PgPool } from './db.ts';
import { sliceFindings } from './slices-verify.ts';

const DAY_MS = 86_400_000;
// PostgreSQL's SUM of bigint is numeric: cast it back so the rows carry bigints, as SQLite's do.
const PG_LEDGER_QUERIES = ledgerQueries((expr) => `SUM(${expr})::bigint`, 'every', true);

export class PgWallets {
  private readonly pool: PgPool;
  private readonly clock: Clock;
  constructor(pool: PgPool, clock: Clock) {
    this.pool = pool;
    this.clock = clock;
  }

  /**
   * Adds `amountNano` with one credit ledger row. With an idempotency key, a credit the key already
   * made is not applied again; the check runs after the wallet row is locked, so two at once make one
   * (the second waits for the first's commit and then sees its row).
   */
  async credit(workspace: string, amountNano: bigint, note: string, idempotencyKey?: string): Promise<CreditResult> {
    if (typeof workspace !== 'string' || workspace === '') throw new RangeError('workspace is required');
    if (typeof amountNano !== 'bigint' || amountNano <= 0n)
      throw new RangeError('a credit must be a positive bigint amount of nano-USD');
    const traceId = creditTraceId(workspace, idempotencyKey);
    const now = this.clock.now();
    let replayed = false;
    const balance = await inTransaction(this.pool, async (c) => {
      await c.query(
        'INSERT INTO wallets (workspace, balance_nano, held_nano, updated_at) VALUES ($1, 0, 0, $2) ON CONFLICT DO NOTHING',
        [workspace, now],
      );
      const before =
        (
          await c.query<{ b: bigint }>('SELECT balance_nano AS b FROM wallets WHERE workspace = $1 FOR UPDATE', [
            workspace,
          ])
        ).rows[0]?.b ?? 0n;
      if (idempotencyKey !== undefined) {
        const earlier = (
          await c.query<EarlierCredit>(
            "SELECT workspace, amount_nano, note FROM ledger WHERE trace_id = $1 AND kind = 'credit'",
            [traceId],
          )
        ).rows[0];
        if (earlier !== undefined) {
          checkRepeat(earlier, workspace, amountNano, note);
          replayed = true;
          return before;
        }
      }
      if (amountNano > MAX_WALLET_NANO - before) {
        throw new WalletError(
          'balance_overflow',
          `crediting ${nanoToDecimal(amountNano)} USD to ${workspace} would take its balance from ${nanoToDecimal(before)} to ` +
            `${nanoToDecimal(before + amountNano)} USD, above the most a wallet can hold (${nanoToDecimal(MAX_WALLET_NANO)} USD); nothing was credited`,
        );
      }
      await c.query('UPDATE wallets SET balance_nano = balance_nano + $1, updated_at = $2 WHERE workspace = $3', [
        amountNano,
        now,
        workspace,
      ]);
      await c.query(
        "INSERT INTO ledger (workspace, kind, amount_nano, trace_id, note, details, created_at) VALUES ($1, 'credit', $2, $3, $4, NULL, $5)",
        [workspace, amountNano, traceId, note === '' ? null : note, now],
      );
      return before + amountNano;
    });
    return { traceId, balance, replayed };
  }

  async show(workspace: string, now: number): Promise<WalletView> {
    const dayStart = now - (((now % DAY_MS) + DAY_MS) % DAY_MS);
    return inTransaction(
      this.pool,
      async (c) => {
        const w = (
          await c.query<{ balance_nano: bigint; held_nano: bigint }>(
            'SELECT balance_nano, held_nano FROM wallets WHERE workspace = $1',
            [workspace],
          )
        ).rows[0];
        const spend =
          (
            await c.query<{ s: bigint }>(
              "SELECT COALESCE(SUM(amount_nano), 0)::bigint AS s FROM ledger WHERE workspace = $1 AND kind = 'settle' AND created_at >= $2 AND created_at < $3",
              [workspace, dayStart, dayStart + DAY_MS],
            )
          ).rows[0]?.s ?? 0n;
        const open =
          (
            await c.query<{ n: bigint }>("SELECT COUNT(*) AS n FROM holds WHERE workspace = $1 AND state = 'open'", [
              workspace,
            ])
          ).rows[0]?.n ?? 0n;
        const balance = w?.balance_nano ?? 0n;
        const held = w?.held_nano ?? 0n;
        return { workspace, balance, held, available: balance - held, spendToday: spend, openHolds: Number(open) };
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
  }

  async usage(workspace: string, since = 0, until = Number.MAX_SAFE_INTEGER): Promise<UsageLine[]> {
    const r = await this.pool.query<{ model: string; provider: string; requests: bigint; cost: bigint }>(
      `SELECT COALESCE(details::jsonb->>'model', '') AS model, COALESCE(details::jsonb->>'provider', '') AS provider,
              COUNT(*) AS requests, SUM(amount_nano)::bigint AS cost
       FROM ledger WHERE workspace = $1 AND kind = 'settle' AND created_at >= $2 AND created_at < $3
       GROUP BY 1, 2 ORDER BY cost DESC, model, provider`,
      [workspace, since, until],
    );
    return r.rows.map((x) => ({
      model: x.model,
      provider: x.provider,
      requests: Number(x.requests),
      costNano: x.cost,
    }));
  }

  async workspaces(): Promise<string[]> {
    return (await this.pool.query<{ workspace: string }>('SELECT workspace FROM wallets ORDER BY workspace')).rows.map(
      (r) => r.workspace,
    );
  }

  /**
   * Every wallet recomputed from the ledger, the holds and the slices; one line per disagreement. An open
   * hold whose lease lapsed (its node stopped renewing it: it died, or lost the database) and an
   * answered request without its settlement are problems too (src/store/ledger-invariants.ts).
   */
  async verify(): Promise<{ ok: boolean; problems: string[] }> {
    const now = this.clock.now();
    const problems = await inTransaction(
      this.pool,
      (c) => verifyIn(c, now),
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
    return { ok: problems.length === 0, problems };
  }
}

async function verifyIn(c: PgClient, now: number): Promise<string[]> {
  const rows: Partial<Record<LedgerQueryName, unknown[]>> = {};
  for (const [name, sql] of Object.entries(PG_LEDGER_QUERIES) as [LedgerQueryName, string][])
    rows[name] = (await c.query(sql)).rows;
  const lapsed = await c.query<{ trace_id: string; workspace: string; node: string; lease_until: bigint }>(
    "SELECT trace_id, workspace, node, lease_until FROM holds WHERE state = 'open' AND lease_until < $1 ORDER BY trace_id",
    [now],
  );
  const unserved: UnservedHold[] = lapsed.rows.map((h) => ({
    trace_id: h.trace_id,
    workspace: h.workspace,
    why: `its lease lapsed ${Number(BigInt(now) - BigInt(h.lease_until))} ms ago (node ${h.node} stopped renewing it); any node's sweeper releases it`,
  }));
  const slices = await sliceFindings(c, now);
  return [...ledgerProblems(rows as LedgerRows, unserved, slices.held), ...slices.problems];
}
