// The coordinator's side of the admission memory serving threads share (`serve --workers N` on a
// database file): it makes the slots, keeps the wallets' `available` words equal to its wallet
// book's balance − held (less the holds serving threads took and have not announced yet), records
// the holds they announce, and gives back what a thread that died held unannounced. The book stays
// the one writer of the ledger: every hold reaches it (announced, then settled or released) and is
// written in its batches as before.
import type { WalletService } from '../admission/admission.ts';
import { SharedBookOwner, SharedBook } from './shared-book.ts';
import { SharedWindowsOwner, SharedWindows } from './shared-windows.ts';
import type { SharedAdmissionMemory } from './protocol.ts';

/** The coordinator's wallet book as the shared memory needs it (WalletBook). */
export interface AdmittingBook extends WalletService {
  admit(workspace: string, traceId: string, amount: bigint): void;
  view(workspace: string): { available: bigint };
  watchAvailable(listener: (workspace: string, delta: bigint) => void): void;
}

export class SharedAdmissionOwner {
  readonly memory: SharedAdmissionMemory;
  private readonly slots: SharedBookOwner;
  private readonly windows: SharedWindowsOwner;
  private readonly book: AdmittingBook;

  constructor(book: AdmittingBook, workers: number) {
    this.book = book;
    this.memory = { book: SharedBook.create(workers), windows: SharedWindows.create() };
    this.slots = new SharedBookOwner(this.memory.book);
    this.windows = new SharedWindowsOwner(this.memory.windows);
    book.watchAvailable((workspace, delta) => this.slots.changed(workspace, delta));
  }

  /** The slot of a workspace's wallet or a key's window (-1: decided by message). */
  slot(of: 'wallet' | 'window', name: string): number {
    if (of === 'window') return this.windows.slotOf(name);
    return this.slots.slotOf(name, () => this.book.view(name).available);
  }

  /**
   * A serving thread's hold, taken in shared memory, is recorded by the book (its ledger row goes
   * in the next batch). A trace the book has open already (ids are random: a reused one) is refused:
   * its amount goes back, and the thread's settlement of it will charge nothing.
   */
  held(worker: number, workspace: string, traceId: string, amount: bigint, slot: number): void {
    try {
      this.book.admit(workspace, traceId, amount);
    } catch (err) {
      this.slots.returned(slot, worker, amount);
      throw err;
    }
    this.slots.announced(slot, worker, amount);
  }

  /** The thread ended: what it held and had not announced is available again. */
  workerGone(worker: number): bigint {
    return this.slots.workerGone(worker);
  }

  /** The workspace's balance − held as the serving threads admit against it (tests, readiness). */
  available(workspace: string): bigint | null {
    const slot = this.slots.slotIfAny(workspace);
    return slot === undefined ? null : this.slots.available(slot);
  }
}
