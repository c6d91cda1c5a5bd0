// Which wallet service a fleet node runs (`serve --db postgres://… --wallet-admission MODE`):
//   escrow       (the default) slices of each wallet admitted in memory, settlements batched
//                (pg-escrow.ts); small wallets still go per request, below the threshold;
//   per-request  one hold statement per request on the wallet row (pg-wallet-service.ts) — the mode
//                to fall back to if an operator must have no credit reserved by any node beyond the
//                requests it serves (escrow keeps an idle slice up to ~2.5 s, a dead node's up to the lease).
import type { Clock } from '../clock.ts';
import type { PgStore } from '../store/postgres/store.ts';
import { EscrowWalletService } from './pg-escrow.ts';
import { PgWalletService } from './pg-wallet-service.ts';

export const WALLET_ADMISSION_MODES = ['escrow', 'per-request'] as const;
export type WalletAdmissionMode = (typeof WALLET_ADMISSION_MODES)[number];

export function fleetWalletService(
  store: PgStore,
  mode: WalletAdmissionMode,
  opts: { clock: Clock; node: string; log: (event: string, fields?: Record<string, unknown>) => void },
): EscrowWalletService | PgWalletService {
  return mode === 'escrow' ? new EscrowWalletService(store, opts) : new PgWalletService(store, opts);
}
