// Warnings for operators: GET /admin/warnings[?days=N] — the wallets below their workspace's
// `low_balance_usd` (what they can still spend, balance minus open holds, below it) and the active
// keys that expire within N days (default 7) of the gateway's clock, soonest first. The same rule
// as the `pi_gateway_wallet_below_threshold` gauge on /metrics (src/billing/low-balance.ts).
import type { OperatorView } from '../admin/operator-view.ts';
import { belowLowBalance } from '../billing/low-balance.ts';
import { nanoToDecimal } from '../money.ts';
import { keyState } from '../store/sqlite/store.ts';
import { intField, iso } from './http.ts';

const DAY_MS = 86_400_000;
const DEFAULT_DAYS = 7;

export async function warningsReport(view: OperatorView, q: Map<string, string>): Promise<unknown> {
  const days = intField(q, 'days', DEFAULT_DAYS, 365);
  const now = view.now();
  const workspaces = view.index().config.workspaces.filter((w) => w.lowBalanceNano !== null);
  const [wallets, keys] = await Promise.all([
    Promise.all(workspaces.map(async (w) => ({ w, wallet: await view.store.wallets.show(w.id, now) }))),
    view.store.apiKeys.list(),
  ]);
  const until = now + days * DAY_MS;
  return {
    now: iso(now),
    expiry_window_days: days,
    low_balance: wallets
      .filter(({ w, wallet }) => belowLowBalance(wallet.available, w.lowBalanceNano))
      .map(({ w, wallet }) => ({
        workspace: w.id,
        name: w.name,
        available_usd: nanoToDecimal(wallet.available),
        low_balance_usd: nanoToDecimal(w.lowBalanceNano ?? 0n),
      })),
    keys_expiring: keys
      .filter((k) => keyState(k, now) === 'active' && k.expiresAt !== null && k.expiresAt <= until)
      .sort((a, b) => (a.expiresAt ?? 0) - (b.expiresAt ?? 0) || (a.id < b.id ? -1 : 1))
      .map((k) => ({
        id: k.id,
        prefix: k.prefix,
        name: k.name,
        workspace: k.workspace,
        expires_at: iso(k.expiresAt),
        expires_in_hours: Math.floor(((k.expiresAt ?? now) - now) / 3_600_000),
      })),
  };
}
