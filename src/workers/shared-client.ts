// A serving thread's admission over the memory it shares with the other threads of
// `serve --workers N` (shared-book.ts, shared-windows.ts): a rate decision and a hold are taken
// here, with no message to the coordinator; the hold is announced to the coordinator's book with
// the next message (at the latest with its own settlement or release), which writes its ledger
// rows as before. Only the first use of a workspace or key on this thread asks the coordinator for
// its slot; one that shared memory has no room for is decided by the coordinator, by message.
import type { HoldResult, WalletService } from '../admission/admission.ts';
import type { RateDecision, RateLimiter } from '../admission/rate-limit.ts';
import type { Clock } from '../clock.ts';
import { WalletError } from '../store/errors.ts';
import type { LedgerDetails, RequestLogRow } from '../store/types.ts';
import type { CoordinatorClient } from './coordinator-client.ts';
import { SharedBook } from './shared-book.ts';
import { SharedWindows } from './shared-windows.ts';
import type { SharedAdmissionMemory } from './protocol.ts';

/** Slots by name, each asked for once (concurrent first uses share the one question). */
export class SlotCache {
  private readonly known = new Map<string, number>();
  private readonly asking = new Map<string, Promise<number>>();
  private readonly ask: (name: string) => Promise<number>;
  constructor(ask: (name: string) => Promise<number>) {
    this.ask = ask;
  }

  /** The slot now when known, else a promise of it. */
  get(name: string): number | Promise<number> {
    const slot = this.known.get(name);
    if (slot !== undefined) return slot;
    let p = this.asking.get(name);
    if (!p) {
      p = this.ask(name).then(
        (s) => {
          this.known.set(name, s);
          this.asking.delete(name);
          return s;
        },
        (err: unknown) => {
          this.asking.delete(name);
          throw err;
        },
      );
      this.asking.set(name, p);
    }
    return p;
  }
}

/**
 * What a serving thread's wallets over shared memory share: the holds this thread has open (taken
 * in shared memory and announced, or decided by message), whose settlements and releases go to the
 * coordinator; a trace not open here settles nothing, without asking.
 */
export abstract class ThreadWallets implements WalletService {
  protected readonly open = new Set<string>();
  protected readonly client: CoordinatorClient;
  protected readonly worker: number;
  protected readonly slots: SlotCache;

  constructor(client: CoordinatorClient, worker: number) {
    this.client = client;
    this.worker = worker;
    this.slots = new SlotCache((name) => client.slot('wallet', name));
  }

  abstract hold(workspace: string, traceId: string, amount: bigint): HoldResult | Promise<HoldResult>;
  abstract refresh(): void | Promise<void>;

  settle(traceId: string, cost: bigint, details: LedgerDetails, logRow?: RequestLogRow): Promise<boolean> {
    if (typeof cost !== 'bigint' || cost < 0n)
      throw new RangeError('a cost must be a non-negative bigint amount of nano-USD');
    // A trace never held here (or closed already) settles nothing, without asking.
    if (!this.open.delete(traceId)) return Promise.resolve(false);
    return this.client.settle(traceId, cost, details, logRow);
  }

  release(traceId: string): void | Promise<void> {
    if (!this.open.delete(traceId)) return;
    return this.client.release(traceId);
  }

  close(): void {
    this.client.close();
  }

  /** The argument checks every hold makes before anything is taken. */
  protected checkHold(workspace: string, traceId: string, amount: bigint): void {
    if (typeof workspace !== 'string' || workspace === '') throw new RangeError('workspace is required');
    if (typeof traceId !== 'string' || traceId === '') throw new RangeError('trace id is required');
    if (typeof amount !== 'bigint' || amount < 0n)
      throw new RangeError('a hold must be a non-negative bigint amount of nano-USD');
  }

  /** Shared memory could not decide: the coordinator's wallets do, as without it. */
  protected byMessage(workspace: string, traceId: string, amount: bigint): Promise<HoldResult> {
    return this.client.hold(workspace, traceId, amount).then((r) => {
      if (r.ok) this.open.add(traceId);
      return r;
    });
  }

  /** A hold taken in shared memory: open here, announced with the thread's next message. */
  protected taken(workspace: string, traceId: string, amount: bigint, slot: number): HoldResult {
    this.open.add(traceId);
    this.client.held(workspace, traceId, amount, slot);
    return { ok: true };
  }

  protected duplicate(traceId: string): WalletError {
    return new WalletError('duplicate_trace', `trace ${traceId} already has a hold`);
  }
}

export class SharedMemoryWallets extends ThreadWallets {
  private readonly book: SharedBook;
  /** A reload of the coordinator's book under way (a credit seen): holds wait for it. */
  private refreshing: Promise<void> | null = null;

  constructor(client: CoordinatorClient, memory: SharedAdmissionMemory, worker: number) {
    super(client, worker);
    this.book = new SharedBook(memory.book);
  }

  hold(workspace: string, traceId: string, amount: bigint): HoldResult | Promise<HoldResult> {
    this.checkHold(workspace, traceId, amount);
    const waiting = this.refreshing;
    if (waiting !== null) return waiting.then(() => this.hold(workspace, traceId, amount));
    const slot = this.slots.get(workspace);
    return typeof slot === 'number'
      ? this.holdIn(slot, workspace, traceId, amount)
      : slot.then((s) => this.holdIn(s, workspace, traceId, amount));
  }

  /**
   * Another process committed (a credit, seen by this thread's key view): the coordinator's book
   * reloads, which adds the credit to shared memory. Holds wait until it has, so a request this
   * thread admits after noticing the credit is decided with it (one round trip per change seen).
   */
  refresh(): Promise<void> {
    const reloaded: Promise<void> = this.client.refreshed().then(
      () => this.doneRefreshing(reloaded),
      () => this.doneRefreshing(reloaded),
    );
    this.refreshing = reloaded;
    return reloaded;
  }

  private doneRefreshing(p: Promise<void>): void {
    if (this.refreshing === p) this.refreshing = null;
  }

  private holdIn(slot: number, workspace: string, traceId: string, amount: bigint): HoldResult | Promise<HoldResult> {
    if (this.open.has(traceId)) throw this.duplicate(traceId);
    // No room in shared memory for this workspace: the coordinator's book decides.
    if (slot < 0) return this.byMessage(workspace, traceId, amount);
    const refused = this.book.tryHold(slot, this.worker, amount);
    if (refused !== null) return { ok: false, available: refused };
    return this.taken(workspace, traceId, amount, slot);
  }
}

export class SharedMemoryLimiter implements RateLimiter {
  private readonly windows: SharedWindows;
  private readonly slots: SlotCache;
  private readonly client: CoordinatorClient;
  private readonly clock: Clock;

  /** `windows`: the buffer of SharedWindows every thread of the node shares. */
  constructor(client: CoordinatorClient, windows: SharedArrayBuffer, clock: Clock) {
    this.client = client;
    this.clock = clock;
    this.windows = new SharedWindows(windows);
    this.slots = new SlotCache((name) => client.slot('window', name));
  }

  take(key: string, limitPerMinute: number): RateDecision | Promise<RateDecision> {
    const slot = this.slots.get(key);
    return typeof slot === 'number'
      ? this.takeIn(slot, key, limitPerMinute)
      : slot.then((s) => this.takeIn(s, key, limitPerMinute));
  }

  private takeIn(slot: number, key: string, limitPerMinute: number): RateDecision | Promise<RateDecision> {
    // The clock is read once the slot is known: a first use decides at the instant it is counted.
    if (slot < 0) return this.client.take(key, limitPerMinute);
    return this.windows.take(slot, limitPerMinute, this.clock.now());
  }
}
