// A serving thread's end of the coordinator (`serve --workers N`): the wallet book, the rate
// limiter, the session pins and the request log behind the same seams the single-process gateway
// fills with its in-process books, answered by the one coordinator every worker shares — so a hold,
// a rate-limit decision or a pin is exact across threads (on a database file, holds and rate
// decisions are taken in shared memory instead: shared-client.ts). Calls made in one event-loop
// turn go as one message (gathered until setImmediate, which runs in the same turn after every
// request that arrived in its poll phase: one structured clone and one wake-up of the coordinator
// for many calls); each answer resolves its call's promise.
import type { MessagePort } from 'node:worker_threads';
import type { HoldResult, WalletService } from '../admission/admission.ts';
import { ERROR_CODES, type ErrorCode, GatewayError } from '../errors.ts';
import type { RateDecision, RateLimiter } from '../admission/rate-limit.ts';
import type { PinStore } from '../routing/session-pins.ts';
import type { LedgerDetails, RequestLogRow } from '../store/types.ts';
import { realSchedule, type Schedule } from './breaker-grants.ts';
import type { CoordinatorMessage, Reply, StateCall, StateValue } from './protocol.ts';

/** A call without its id (the client numbers them). Distributes over the union's members. */
type Call = StateCall extends infer C ? (C extends StateCall ? Omit<C, 'id'> : never) : never;

interface Pending {
  resolve(value: StateValue): void;
  reject(err: Error): void;
}

/** How long a log row may wait for another call to go in the same message (see tellLater). */
export const TELL_WAIT_MS = 10;

/** What the coordinator's call threw, with its code (`duplicate_trace`, …) when it had one. */
export class CoordinatorRefusal extends Error {
  readonly code: string | undefined;
  constructor(message: string, code: string | undefined) {
    super(message);
    this.name = 'CoordinatorRefusal';
    this.code = code;
  }
}

/** A gateway error (`store_unavailable` from a fleet node's wallets, …) is the same error on this
 *  thread, so the request is answered as in one process; anything else keeps its code. */
function refusal(message: string, code: string | undefined): Error {
  if (code !== undefined && Object.hasOwn(ERROR_CODES, code)) return new GatewayError(code as ErrorCode, message);
  return new CoordinatorRefusal(message, code);
}

export class CoordinatorGoneError extends Error {
  constructor() {
    super('the coordinator thread does not answer (the gateway is stopping)');
    this.name = 'CoordinatorGoneError';
  }
}

export class CoordinatorClient implements WalletService, RateLimiter, PinStore {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private queue: StateCall[] = [];
  /** The call id of each pending `take`, by the promise it returned (holdIfAllowed gates on it). */
  private readonly takeIds = new WeakMap<Promise<RateDecision>, number>();
  private scheduled = false;
  /** Sends calls nobody waits for that no other call carried along (see tell). */
  private cancelTells: (() => void) | null = null;
  private behindNow = false;
  private closed = false;

  private readonly port: Pick<MessagePort, 'postMessage'>;
  private readonly runLater: Schedule;
  /** `schedule` runs tellLater's wait (tests drive it by hand: whether a row went alone must not
   *  depend on how soon a loaded machine runs the event loop's next turn). */
  constructor(port: Pick<MessagePort, 'postMessage'>, schedule: Schedule = realSchedule) {
    this.port = port;
    this.runLater = schedule;
  }

  /** Handles the coordinator's answers (the worker's message listener passes `replies` here). */
  receive(m: Extract<CoordinatorMessage, { kind: 'replies' }>): void {
    this.behindNow = m.behind;
    for (const r of m.replies) this.settleReply(r);
  }

  /** True while the coordinator's store writer is behind: new requests are refused with 503. */
  behind(): boolean {
    return this.behindNow;
  }

  hold(workspace: string, traceId: string, amount: bigint): Promise<HoldResult> {
    return this.ask({ op: 'hold', workspace, traceId, amount }) as Promise<HoldResult>;
  }

  /**
   * The hold gated on this client's own `take` (see WalletAdmission.holdIfAllowed): while that take
   * is still queued, both go in one message and the coordinator takes the hold only if the take let
   * the request through (one round trip); once it was sent, the hold waits for its answer.
   */
  holdIfAllowed(
    workspace: string,
    traceId: string,
    amount: bigint,
    decision: Promise<RateDecision>,
  ): Promise<HoldResult | null> {
    const gate = this.takeIds.get(decision);
    if (gate !== undefined && this.queue.some((c) => c.id === gate)) {
      return this.ask({ op: 'hold', workspace, traceId, amount, gate }) as Promise<HoldResult | null>;
    }
    return decision.then((d) => (d.ok ? this.hold(workspace, traceId, amount) : null));
  }

  settle(traceId: string, cost: bigint, details: LedgerDetails, logRow?: RequestLogRow): Promise<boolean> {
    return this.ask({ op: 'settle', traceId, cost, details, logRow: logRow ?? null }) as Promise<boolean>;
  }

  release(traceId: string): Promise<void> {
    return this.ask({ op: 'release', traceId }).then(() => undefined);
  }

  take(key: string, limitPerMinute: number): Promise<RateDecision> {
    const id = this.nextId;
    const decision = this.ask({ op: 'take', key, limit: limitPerMinute }) as Promise<RateDecision>;
    this.takeIds.set(decision, id);
    return decision;
  }

  /** The shared-memory slot of a workspace's wallet or a key's window (-1: decided by message). */
  slot(of: 'wallet' | 'window', name: string): Promise<number> {
    return this.ask({ op: 'slot', of, name }) as Promise<number>;
  }

  /** Announces a hold taken in shared memory; it rides with the next message (its settlement's,
   *  at the latest: calls go in order, so the coordinator records it before closing it). */
  held(workspace: string, traceId: string, amount: bigint, slot: number): void {
    this.tellLater({ op: 'held', workspace, traceId, amount, slot });
  }

  get(key: string): Promise<string | null> {
    return this.ask({ op: 'pin-get', key }) as Promise<string | null>;
  }

  touch(key: string): void {
    this.tell({ op: 'pin-touch', key });
  }

  set(key: string, deploymentId: string): void {
    this.tell({ op: 'pin-set', key, deploymentId });
  }

  drop(key: string): void {
    this.tell({ op: 'pin-drop', key });
  }

  /** The coordinator's pins take the bound of its own reload. */
  resize(): void {}

  /** A finished request's log row, written by the coordinator's store writer. */
  appendLog(row: RequestLogRow): void {
    this.tellLater({ op: 'log', row });
  }

  /** A CLI change (a credit) seen by this thread's key view: the coordinator re-reads balances. */
  refresh(): void {
    this.tell({ op: 'refresh' });
  }

  /** As `refresh`, resolved once the coordinator's book has reloaded balances. */
  refreshed(): Promise<void> {
    return this.ask({ op: 'refresh' }).then(() => undefined);
  }

  /** Sends a call nobody waits for (a breaker outcome, a pin touch), this turn. */
  tell(call: Call): void {
    this.enqueue({ ...call, id: 0 } as StateCall);
  }

  /**
   * A call nobody waits for and nothing reads soon (a finished request's log row): it rides with the
   * next message, or goes alone after TELL_WAIT_MS. At a modest rate a turn carries one request, and
   * a message of its own for each request's log row (sent after its last byte, so never with its
   * other calls) woke the coordinator once more per request.
   */
  tellLater(call: Call): void {
    if (this.closed) return;
    this.queue.push({ ...call, id: 0 } as StateCall);
    if (this.scheduled || this.cancelTells !== null) return;
    this.cancelTells = this.runLater(this.flushTells, TELL_WAIT_MS);
  }

  /** The gateway closes: what is queued goes now. Later calls still go (a log row written as the
   *  last request ends); only `abandon` stops them. */
  close(): void {
    this.flush();
  }

  /** Fails every waiting call: the coordinator will not answer them. */
  abandon(): void {
    this.closed = true;
    for (const p of this.pending.values()) p.reject(new CoordinatorGoneError());
    this.pending.clear();
  }

  private ask(call: Call): Promise<StateValue> {
    if (this.closed) return Promise.reject(new CoordinatorGoneError());
    const id = this.nextId++;
    return new Promise<StateValue>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.enqueue({ ...call, id } as StateCall);
    });
  }

  private enqueue(call: StateCall): void {
    if (this.closed) return;
    this.queue.push(call);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private readonly flushTells = (): void => {
    this.cancelTells = null;
    if (!this.scheduled) this.flush();
  };

  private flush(): void {
    this.scheduled = false;
    if (this.cancelTells !== null) {
      this.cancelTells();
      this.cancelTells = null;
    }
    if (this.queue.length === 0) return;
    const calls = this.queue;
    this.queue = [];
    this.port.postMessage({ kind: 'calls', calls });
  }

  private settleReply(r: Reply): void {
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    if (r.ok) p.resolve(r.value);
    else p.reject(refusal(r.error, r.code));
  }
}
