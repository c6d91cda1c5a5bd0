// What the admin listener reads of the running gateway beyond readiness: the store (request log,
// wallets and ledger, keys; asynchronous, embedded or PostgreSQL), the health tracker, the stored-credential view and
// the sources the
// router draws on. The composition root hands it over (`AdminListener.attach`), so nothing here or
// in the console imports the gateway, and the gateway's request path never imports the console.
import type { CredentialView } from '../availability/serving.ts';
import type { BreakerBoard } from '../routing/health.ts';
import type { ConsoleStore } from '../store/console-store-interface.ts';
import type { ServingView } from './readiness.ts';

export interface OperatorView extends ServingView {
  readonly store: ConsoleStore;
  /** The breakers routing reads (the console reads `passive` and `state`, never claims a probe). */
  readonly health: BreakerBoard;
  /** Which upstream credentials are stored (what the router's eligibility reads). */
  readonly creds: CredentialView;
  /** The gateway's clock. */
  now(): number;
}
