// The coordinator of `serve --workers N`: the one owner of the state every serving thread shares —
// the wallet book (admission exact in memory, the ledger through the store's writer thread), the
// per-key rate-limit windows, the session pins and the breakers — answering the workers' batched
// calls. Exactness comes from there being one owner: a hold is decided by the same synchronous
// `WalletBook.hold` the single-process gateway runs, whichever worker asked — or, on a database
// file, by one compare-and-swap in the memory the threads share (shared-owner.ts), which only this
// thread adds to; the book then records the hold the worker announces. On a fleet node, the threads
// take holds from room the node's slices lend to shared memory (lent-room-owner.ts). Open holds are tracked per
// worker: a worker that dies has them released at once (its requests are gone with it).
import type { HoldResult, WalletService } from '../admission/admission.ts';
import type { RateDecision, RateLimiter } from '../admission/rate-limit.ts';
import type { PinStore } from '../routing/session-pins.ts';
import type { RequestLogRow } from '../store/types.ts';
import type { BreakerGrants } from './breaker-grants.ts';
import type { CoordinatorMessage, Reply, StateCall, StateValue } from './protocol.ts';

/** The coordinator's side of the admission memory serving threads share: the embedded book's
 *  (SharedAdmissionOwner) or a fleet node's room lent by its slices (LentRoomOwner). */
export interface SharedAdmission {
  /** The slot of a workspace's wallet or a key's rate window, made on first use (-1: by message). */
  slot(of: 'wallet' | 'window', name: string): number;
  /** A hold a worker took in shared memory, announced: the wallets record it (or throw). */
  held(worker: number, workspace: string, traceId: string, amount: bigint, slot: number): void;
  /** The worker's thread ended: what it took and never announced comes back. */
  workerGone(worker: number): bigint;
  /** A hold of the workspace was decided by message (shared memory could not cover it). */
  decidedByMessage?(workspace: string): void;
}

/** Where a worker's replies go (its MessagePort or Worker). */
export interface WorkerPort {
  postMessage(m: CoordinatorMessage): void;
}

export interface CoordinatorParts {
  /** The node's wallets: the embedded book (answers holds at once) or PostgreSQL (answers later). */
  wallets: WalletService;
  limiter: RateLimiter;
  pins: PinStore;
  breakers: BreakerGrants;
  /** Writes a finished request's log row (the store's writer thread). */
  appendLog(row: RequestLogRow): void;
  /** True while the store's writer is behind: workers refuse new requests with 503. */
  behind(): boolean;
  /** Failures nobody waits for (a release, a log row): logged. */
  onError(event: string, err: unknown): void;
  /** The admission memory the serving threads share: they take holds (and, on a database file,
   *  count rate windows) there, and announce their holds (`held`) with their closes. */
  shared?: SharedAdmission;
}

interface WorkerLink {
  port: WorkerPort;
  /** Trace ids of holds this worker took and has not settled or released. */
  holds: Set<string>;
  replies: Reply[];
  scheduled: boolean;
  /** False once the worker's thread ended: a hold answered after that is released at once. */
  attached: boolean;
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** The reply to a call that threw: its message, and its code when it has one. */
function failure(id: number, err: unknown): Reply {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string'
    ? { id, ok: false, error: errorText(err), code }
    : { id, ok: false, error: errorText(err) };
}

export class Coordinator {
  private readonly links = new Map<number, WorkerLink>();
  /** Holds decided for the workers, by where (the admin listener's /metrics). */
  readonly holds = { sharedMemory: 0, message: 0 };

  private readonly parts: CoordinatorParts;
  constructor(parts: CoordinatorParts) {
    this.parts = parts;
  }

  attach(worker: number, port: WorkerPort): void {
    this.links.set(worker, { port, holds: new Set(), replies: [], scheduled: false, attached: true });
  }

  /** The worker's thread ended: its open holds are released (no request of it can settle now). */
  detach(worker: number): number {
    const link = this.links.get(worker);
    this.links.delete(worker);
    this.parts.breakers.workerGone(worker);
    // What it held in shared memory and had not announced yet comes back at once too.
    this.parts.shared?.workerGone(worker);
    if (!link) return 0;
    link.attached = false;
    for (const traceId of link.holds) this.release(traceId);
    return link.holds.size;
  }

  /** Every breaker as the coordinator's board has it now (a starting worker's mirror). */
  breakerStates() {
    return this.parts.breakers.states();
  }

  /** Open holds per worker (readiness, tests). */
  openHolds(worker: number): number {
    return this.links.get(worker)?.holds.size ?? 0;
  }

  broadcast(m: CoordinatorMessage): void {
    for (const link of this.links.values()) link.port.postMessage(m);
  }

  handle(worker: number, calls: readonly StateCall[]): void {
    const link = this.links.get(worker);
    if (!link) return;
    /** Takes of this batch that did not let their request through (their gated holds are refused). */
    let refused: Set<number> | null = null;
    /** Takes of this batch still being decided (a shared limiter): their gated holds wait for them. */
    let deciding: Map<number, Promise<StateValue>> | null = null;
    for (const call of calls) {
      let value: StateValue | Promise<StateValue>;
      try {
        const gate = call.op === 'hold' ? call.gate : undefined;
        const pending = gate === undefined ? undefined : deciding?.get(gate);
        if (gate !== undefined && refused?.has(gate)) value = null;
        else if (pending !== undefined) value = this.holdAfter(worker, link, call, pending);
        else value = this.apply(worker, link, call);
      } catch (err) {
        if (call.op === 'take') (refused ??= new Set()).add(call.id);
        if (call.id !== 0) this.reply(link, failure(call.id, err));
        else this.parts.onError(`worker_${call.op}_failed`, err);
        continue;
      }
      if (call.op === 'take' && value instanceof Promise) (deciding ??= new Map()).set(call.id, value);
      else if (call.op === 'take' && !(value as RateDecision).ok) (refused ??= new Set()).add(call.id);
      if (call.id === 0) continue;
      if (value instanceof Promise) {
        value.then(
          (v) => this.reply(link, { id: call.id, ok: true, value: v }),
          (err: unknown) => this.reply(link, failure(call.id, err)),
        );
      } else this.reply(link, { id: call.id, ok: true, value });
    }
  }

  /** A hold gated on a take still being decided: taken only once the take let the request through. */
  private async holdAfter(
    worker: number,
    link: WorkerLink,
    call: StateCall,
    decision: Promise<StateValue>,
  ): Promise<StateValue> {
    // A take that failed refuses its gated hold too (its own reply carries the error).
    const d = (await decision.catch(() => null)) as RateDecision | null;
    return d?.ok ? this.apply(worker, link, call) : null;
  }

  /** Records an admitted hold as this worker's; one that lands after the worker ended is released. */
  private holdTaken(link: WorkerLink, traceId: string, r: HoldResult): HoldResult {
    if (!r.ok) return r;
    if (link.attached) link.holds.add(traceId);
    else this.release(traceId);
    return r;
  }

  /** A release nobody waits for: a failure is reported, never thrown. */
  private release(traceId: string): void {
    try {
      const r = this.parts.wallets.release(traceId);
      if (r instanceof Promise) r.catch((err: unknown) => this.parts.onError('worker_release_failed', err));
    } catch (err) {
      this.parts.onError('worker_release_failed', err);
    }
  }

  private apply(worker: number, link: WorkerLink, call: StateCall): StateValue | Promise<StateValue> {
    const p = this.parts;
    switch (call.op) {
      case 'hold': {
        const r = p.wallets.hold(call.workspace, call.traceId, call.amount);
        // The wallet's slice may have grown for it: shared memory's room is filled again.
        const refill = (x: HoldResult): HoldResult => {
          p.shared?.decidedByMessage?.(call.workspace);
          // Counted once taken: a refusal (or a hold that threw) took nothing.
          if (x.ok) this.holds.message++;
          return this.holdTaken(link, call.traceId, x);
        };
        return r instanceof Promise ? r.then(refill) : refill(r);
      }
      case 'settle':
        // With shared memory, a trace this worker did not hold (one another worker's book entry
        // has, see SharedAdmission.held) settles nothing.
        if (!link.holds.delete(call.traceId) && p.shared) return false;
        return call.logRow === null
          ? p.wallets.settle(call.traceId, call.cost, call.details)
          : p.wallets.settle(call.traceId, call.cost, call.details, call.logRow);
      case 'release':
        if (!link.holds.delete(call.traceId) && p.shared) return;
        return p.wallets.release(call.traceId);
      case 'slot':
        return p.shared ? p.shared.slot(call.of, call.name) : -1;
      case 'held':
        if (!p.shared) throw new Error('no shared admission memory');
        p.shared.held(worker, call.workspace, call.traceId, call.amount, call.slot);
        link.holds.add(call.traceId);
        this.holds.sharedMemory++;
        return;
      case 'take':
        return p.limiter.take(call.key, call.limit);
      case 'pin-get':
        return p.pins.get(call.key);
      case 'pin-touch':
        return p.pins.touch(call.key);
      case 'pin-set':
        return p.pins.set(call.key, call.deploymentId);
      case 'pin-drop':
        return p.pins.drop(call.key);
      case 'record':
        return p.breakers.record(call.deploymentId, call.outcome, call.at);
      case 'probe-claimed':
        return p.breakers.claimed(call.deploymentId, worker);
      case 'probe-release':
        return p.breakers.released(call.deploymentId, worker);
      case 'log':
        return p.appendLog(call.row);
      case 'refresh':
        return p.wallets.refresh();
    }
  }

  /** Replies go back in one message per worker per event-loop turn (setImmediate: every message
   *  that arrived in this turn's poll phase is answered together), with the writer's state. */
  private reply(link: WorkerLink, r: Reply): void {
    link.replies.push(r);
    if (link.scheduled) return;
    link.scheduled = true;
    setImmediate(() => {
      link.scheduled = false;
      const replies = link.replies;
      link.replies = [];
      link.port.postMessage({ kind: 'replies', replies, behind: this.parts.behind() });
    });
  }
}
