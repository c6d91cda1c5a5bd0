// Wallets for operators: GET /admin/wallets (every workspace's balance, open holds, what is available,
// spend today, its low-balance threshold and whether it is below), GET /admin/wallets/:ws (the same
// plus a page of ledger rows, newest first, and the `next_before` cursor of the older page) and
// POST /admin/wallets/:ws/credit {usd, note} — the store's `Wallets.credit`, the one the CLI's
// `wallet credit` calls, so the credit is one ledger row with the operator's note; with an
// `Idempotency-Key` header, a repeat of a credit already made adds nothing.
import type { OperatorView } from '../admin/operator-view.ts';
import { belowLowBalance } from '../billing/low-balance.ts';
import { decimalToNano, MAX_WALLET_NANO, nanoToDecimal } from '../money.ts';
import { idempotencyKeyProblem } from '../store/credit-id.ts';
import { WalletError } from '../store/errors.ts';
import { badRequest, ConsoleError, intField, iso, jsonBody, notFound, stringField } from './http.ts';

async function walletJson(view: OperatorView, workspace: string): Promise<Record<string, unknown>> {
  const w = await view.store.wallets.show(workspace, view.now());
  const threshold = view.index().workspaceById.get(workspace)?.lowBalanceNano ?? null;
  return {
    workspace,
    name: view.index().workspaceById.get(workspace)?.name ?? null,
    configured: view.index().workspaceById.has(workspace),
    balance_usd: nanoToDecimal(w.balance),
    held_usd: nanoToDecimal(w.held),
    available_usd: nanoToDecimal(w.available),
    spend_today_usd: nanoToDecimal(w.spendToday),
    open_holds: w.openHolds,
    low_balance_usd: threshold === null ? null : nanoToDecimal(threshold),
    low_balance: belowLowBalance(w.available, threshold),
  };
}

/** Workspaces of the config and any other that has a wallet, sorted. */
async function workspaceIds(view: OperatorView): Promise<string[]> {
  const ids = new Set<string>([
    ...view.index().config.workspaces.map((w) => w.id),
    ...(await view.store.wallets.workspaces()),
  ]);
  return [...ids].sort();
}

export async function listWallets(view: OperatorView): Promise<unknown> {
  const ids = await workspaceIds(view);
  return { wallets: await Promise.all(ids.map((ws) => walletJson(view, ws))) };
}

export async function walletDetail(view: OperatorView, workspace: string, q: Map<string, string>): Promise<unknown> {
  if (!(await workspaceIds(view)).includes(workspace))
    throw notFound(`no workspace ${workspace} in the config or the wallets`);
  const before = q.get('before');
  if (before !== undefined && !/^\d{1,15}$/.test(before))
    throw badRequest(`before must be a ledger row id, got "${before}"`);
  // One row more than asked says whether an older page exists (the stores answer at most 1000).
  const limit = intField(q, 'limit', 50, 999);
  const rows = await view.store.wallets.ledger(workspace, {
    limit: limit + 1,
    ...(before === undefined ? {} : { beforeId: Number(before) }),
  });
  const page = rows.slice(0, limit);
  return {
    ...(await walletJson(view, workspace)),
    next_before: rows.length > limit ? (page[page.length - 1]?.id ?? null) : null,
    ledger: page.map((l) => ({
      id: l.id,
      kind: l.kind,
      amount_usd: nanoToDecimal(l.amount),
      trace_id: l.traceId,
      note: l.note,
      time: iso(l.createdAt),
      model: typeof l.details?.model === 'string' ? l.details.model : null,
      provider: typeof l.details?.provider === 'string' ? l.details.provider : null,
      estimated: l.details?.['estimated'] === true,
    })),
  };
}

/** The body's credit, once: an `Idempotency-Key` header makes a repeat answer the first (`replayed`). */
export async function creditWallet(
  view: OperatorView,
  workspace: string,
  body: Record<string, unknown>,
  idempotencyKey?: string,
): Promise<unknown> {
  if (!view.index().workspaceById.has(workspace)) throw notFound(`no workspace ${workspace} in the config`);
  const keyProblem = idempotencyKey === undefined ? null : idempotencyKeyProblem(idempotencyKey);
  if (keyProblem !== null) throw badRequest(`Idempotency-Key: ${keyProblem}`);
  const raw = typeof body['usd'] === 'number' ? String(body['usd']) : stringField(body, 'usd');
  if (raw === undefined) throw badRequest('usd is required: the amount in US dollars, e.g. "25" or "0.5"');
  const note = stringField(body, 'note')?.trim() ?? '';
  if (note === '')
    throw badRequest('note is required: say why (an invoice number, a grant); it is kept on the ledger row');
  if (note.length > 500) throw badRequest('note is at most 500 characters');
  let nano: bigint;
  try {
    nano = decimalToNano(raw);
  } catch {
    throw badRequest(`usd must be a positive decimal amount with at most 9 decimals, got "${raw}"`);
  }
  if (nano <= 0n) throw badRequest(`usd must be positive, got "${raw}"`);
  if (nano > MAX_WALLET_NANO)
    throw badRequest(`usd ${raw} is more than a wallet can hold (${nanoToDecimal(MAX_WALLET_NANO)} USD)`);
  try {
    const r = await view.store.wallets.credit(workspace, nano, note, idempotencyKey);
    return {
      workspace,
      trace_id: r.traceId,
      credited_usd: nanoToDecimal(nano),
      balance_usd: nanoToDecimal(r.balance),
      note,
      replayed: r.replayed,
    };
  } catch (err) {
    if (err instanceof WalletError) throw new ConsoleError(409, err.code, err.message);
    throw err;
  }
}

export { jsonBody };
