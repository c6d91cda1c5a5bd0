// The messages between the coordinator (the main thread of `serve --workers N`) and its serving
// threads. State calls go up as batches of numbered calls, answers come down as batches of replies;
// a batch is one postMessage, gathered per event-loop turn on each side (structured clone keeps
// bigints, so money crosses exactly). Control messages (drain, reload, metrics) travel on the same
// port, told apart by `kind`.
import type { DrainReport } from '../api/lifecycle.ts';
import type { CompiledConfig } from '../config/compiled.ts';
import type { HoldResult } from '../admission/admission.ts';
import type { RateDecision } from '../admission/rate-limit.ts';
import type { Outcome } from '../routing/health.ts';
import type { LedgerDetails, RequestLogRow } from '../store/types.ts';
import type { SharedBookMemory } from './shared-book.ts';

/** One state call of a serving thread. `id` 0: no answer wanted (fire and forget). */
export type StateCall =
  /** `gate`: the id of a `take` earlier in the same batch; the hold is taken only if that take let
   *  the request through, else the answer is null and nothing is held. */
  | { id: number; op: 'hold'; workspace: string; traceId: string; amount: bigint; gate?: number }
  | { id: number; op: 'settle'; traceId: string; cost: bigint; details: LedgerDetails; logRow: RequestLogRow | null }
  | { id: number; op: 'release'; traceId: string }
  | { id: number; op: 'take'; key: string; limit: number }
  /** Shared memory (shared-book.ts, shared-windows.ts): the slot of a workspace's wallet or of a
   *  key's rate window, made on first use; -1: not in shared memory (decided by message). */
  | { id: number; op: 'slot'; of: 'wallet' | 'window'; name: string }
  /** A hold a serving thread took in shared memory, announced so the coordinator's book records it
   *  (its ledger row, the worker's open holds) before its settlement or release, which follow it. */
  | { id: number; op: 'held'; workspace: string; traceId: string; amount: bigint; slot: number }
  | { id: number; op: 'pin-get'; key: string }
  | { id: number; op: 'pin-touch'; key: string }
  | { id: number; op: 'pin-set'; key: string; deploymentId: string }
  | { id: number; op: 'pin-drop'; key: string }
  | { id: number; op: 'record'; deploymentId: string; outcome: Outcome; at: number }
  | { id: number; op: 'probe-claimed'; deploymentId: string }
  | { id: number; op: 'probe-release'; deploymentId: string }
  | { id: number; op: 'log'; row: RequestLogRow }
  | { id: number; op: 'refresh' };

// biome-ignore lint/suspicious/noConfusingVoidType: a reply carries what the called method returned, and several (release, pin-drop, record, …) return void.
export type StateValue = HoldResult | RateDecision | boolean | string | number | null | void;

/** A refusal carries the error's `code` when it had one (a wallet's `duplicate_trace`, …), so the
 *  serving thread's caller can tell refusals apart as it would in one process. */
export type Reply =
  | { id: number; ok: true; value: StateValue }
  | { id: number; ok: false; error: string; code?: string };

/** One deployment's breaker as the serving threads mirror it. */
export interface BreakerMirrorState {
  deploymentId: string;
  /** null: closed. */
  openUntil: number | null;
  /** The worker that may send the one half-open probe (null: none granted now). */
  probeWorker: number | null;
}

/** Serving thread → coordinator. */
export type WorkerMessage =
  | { kind: 'calls'; calls: StateCall[] }
  | { kind: 'listening'; port: number }
  | { kind: 'start-failed'; error: string }
  | { kind: 'drained'; report: DrainReport }
  | { kind: 'reloaded'; restartNeeded: string[] }
  | { kind: 'metrics'; id: number; json: unknown[] | null };

/** Coordinator → serving thread. */
export type CoordinatorMessage =
  | { kind: 'replies'; replies: Reply[]; behind: boolean }
  | { kind: 'breakers'; states: BreakerMirrorState[] }
  | { kind: 'drain'; deadlineMs: number | null }
  /** A second signal: close every connection now and end the thread (no waiting for requests). */
  | { kind: 'stop-now' }
  | { kind: 'reload'; config: CompiledConfig }
  | { kind: 'metrics'; id: number };

/** What a serving thread starts with (workerData). */
export interface WorkerStart {
  worker: number;
  config: CompiledConfig;
  /** The SQLite file (opened read-only: keys and sealed credentials). */
  db: string;
  host: string;
  port: number;
  upstreamOverride: string | null;
  /** What telemetry the thread runs: its metrics go to the coordinator's /metrics. */
  metrics: boolean;
  accessLog: boolean;
  /** The access log's trusted proxies (serve --trusted-proxies). */
  trustedProxies: string[];
  traces: { url: string | null; serviceName: string } | null;
  /** The breakers as the coordinator knows them at the start. */
  breakers: BreakerMirrorState[];
  /** The admission memory every thread shares (null: holds and rate decisions go by message). */
  shared: SharedAdmissionMemory | null;
  /** A fleet node's: the room its slices lend to shared memory, holds taken from it without a
   *  message (lent-room-owner.ts); null elsewhere. Rate decisions: `fleetLimits`. */
  lentRoom: SharedBookMemory | null;
  /** A fleet node's: the thread decides rate limits itself — on Redis (`redis`, its own connection),
   *  else, and while Redis does not answer, in the rate windows the node's threads share — and reports
   *  to the coordinator's /metrics in the 32-bit words of `threadRedis`: word 0 counts the threads'
   *  fallbacks, word `worker` is 1 while this thread's connection is down. */
  fleetLimits: { redis: string | null; windows: SharedArrayBuffer; threadRedis: SharedArrayBuffer } | null;
}

/** Wallets' `available` words and rate-limit windows in shared memory (shared-book.ts, shared-windows.ts). */
export interface SharedAdmissionMemory {
  book: SharedBookMemory;
  windows: SharedArrayBuffer;
}
