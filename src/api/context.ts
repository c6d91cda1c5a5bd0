// Everything a request handler needs, assembled once by the composition root (src/gateway.ts).
import type { Clock } from '../clock.ts';
import type { ConfigIndex } from '../config/index.ts';
import type { GatewaySettings } from '../config/compiled.ts';
import type { RateLimiter } from '../admission/rate-limit.ts';
import type { HealthTracker } from '../routing/health.ts';
import type { SessionPins } from '../routing/session-pins.ts';
import type { Store, WalletBook } from '../store/store.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { StoreView } from './store-view.ts';

export interface GatewayContext {
  index: ConfigIndex;
  settings: GatewaySettings;
  store: Store;
  /** Wallet admission and settlement (in memory, group-committed to the store's ledger). */
  wallets: WalletBook;
  view: StoreView;
  clock: Clock;
  /** Uniform [0, 1) source for weighted routing (injectable for tests). */
  random: () => number;
  limiter: RateLimiter;
  health: HealthTracker;
  pins: SessionPins;
  client: UpstreamClient;
  /** Replaces scheme, host and port of every resource base URL (demo/testing: route all to the simulator). */
  upstreamOverride: URL | null;
  /** Operational log (never secrets, keys or prompt text). */
  log(event: string, fields?: Record<string, unknown>): void;
}
