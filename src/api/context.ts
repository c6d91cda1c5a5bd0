// Everything a request handler needs, assembled once by the composition root (src/gateway.ts).
import type { Clock } from '../clock.ts';
import type { ConfigIndex } from '../config/index.ts';
import type { GatewaySettings } from '../config/compiled.ts';
import type { Admission, WalletService } from '../admission/admission.ts';
import type { KeysAndCredentials } from '../admission/store-view.ts';
import type { RequestObserver } from '../observe/observer.ts';
import type { BreakerBoard } from '../routing/health.ts';
import type { PinStore } from '../routing/session-pins.ts';
import type { StopSwitch } from '../proxy/stop-switch.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { ConfigSnapshot } from './config-snapshot.ts';
import type { InFlight } from './in-flight.ts';

/**
 * The shared state a request reads and changes, as seams (see src/admission/admission.ts). The
 * single-process gateway fills them with its in-process books (`LocalState` in src/gateway.ts), which
 * its tests may reach directly; a --workers worker, or a node on a shared store, fills them with
 * clients of the state's owner.
 */
export interface SharedState {
  wallets: WalletService;
  pins: PinStore;
  health: BreakerBoard;
  view: KeysAndCredentials;
}

export interface GatewayContext<S extends SharedState = SharedState> {
  /** The config new requests start on; a reload swaps it whole. A request reads it once, at its
   *  start, and keeps that snapshot to its end. */
  readonly current: ConfigSnapshot;
  /** `current.index` and `current.settings` at the moment of reading. */
  readonly index: ConfigIndex;
  readonly settings: GatewaySettings;
  /** Authentication, rate limit, wallet hold/settle/release: what the inference handler admits with. */
  admission: Admission;
  /** The wallet book behind `admission`. */
  wallets: S['wallets'];
  view: S['view'];
  clock: Clock;
  /** Uniform [0, 1) source for weighted routing (injectable for tests). */
  random: () => number;
  health: S['health'];
  pins: S['pins'];
  client: UpstreamClient;
  /** Replaces scheme, host and port of every resource base URL (demo/testing: route all to the simulator). */
  upstreamOverride: URL | null;
  /** Inference requests being answered (a graceful drain waits for them). */
  inFlight: InFlight;
  /** Thrown at the drain deadline: ends every running attempt (`drained`), starts no new one. */
  stop: StopSwitch;
  /** Follows every inference request: the request-log writer, and the access log, metrics and
   *  traces when they are on (src/telemetry/). */
  observer: RequestObserver;
  /** Operational log (never secrets, keys or prompt text). */
  log(event: string, fields?: Record<string, unknown>): void;
}
