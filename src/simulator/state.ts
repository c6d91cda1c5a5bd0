// What every simulator request handler shares: recordings, scripts, the credential, the clock and
// the set of responses still in flight (closed on shutdown).
import type { Clock } from '../clock.ts';
import type { Exchange } from './exchange.ts';
import type { Recorder } from './recorder.ts';
import type { AwsSimKey } from './sigv4-verify.ts';
import type { ScriptBook } from './script-book.ts';

export interface SimState {
  recorder: Recorder;
  scripts: ScriptBook;
  /** When set, inference requests must present it (Bearer, x-api-key or api-key). */
  apiKey: string | undefined;
  clock: Clock;
  /** The `anthropic-organization-id` this simulator reports. */
  organizationId: string;
  live: Set<Exchange>;
  maxBodyBytes: number;
  /** AWS access key id → secret (and session token): what SigV4-signed Bedrock requests may use. */
  awsKeys: ReadonlyMap<string, AwsSimKey>;
  tokens: TokenState;
}

/** The token endpoints' state: who may get tokens, and the tokens issued (token → expiry, ms). */
export interface TokenState {
  /** Service account client_email → public key (PEM). */
  serviceAccounts: ReadonlyMap<string, string>;
  /** Entra client id → client secret. */
  entraClients: ReadonlyMap<string, string>;
  lifetimeSec: number;
  issued: Map<string, number>;
}

/** The parts of a uWS HttpRequest copied synchronously in the route callback. */
export interface RequestCopy {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  /** performance.now() at arrival. */
  startedAt: number;
  /** clock.now() at arrival. */
  at: number;
}
