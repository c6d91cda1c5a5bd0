// A serving thread's wallets on a fleet node with serving threads (`serve --workers N --db
// postgres://…`): a hold is taken from the room the node's slices lend to shared memory
// (lent-room-owner.ts), one compare-and-swap and no message; it is announced with the thread's next
// message (at the latest with its own settlement or release). When the room cannot cover a hold —
// the wallet's first use, a slice to grow, a wallet admitted per request, PostgreSQL not answering
// — the coordinator decides it by message, as without shared memory. Rate limits are not here: a
// fleet node's threads decide them on their own Redis connection (fleet-limits.ts).
import type { HoldResult } from '../admission/admission.ts';
import type { CoordinatorClient } from './coordinator-client.ts';
import { SharedBook, type SharedBookMemory } from './shared-book.ts';
import { ThreadWallets } from './shared-client.ts';

export class LentRoomWallets extends ThreadWallets {
  private readonly room: SharedBook;

  constructor(client: CoordinatorClient, memory: SharedBookMemory, worker: number) {
    super(client, worker);
    this.room = new SharedBook(memory);
  }

  hold(workspace: string, traceId: string, amount: bigint): HoldResult | Promise<HoldResult> {
    this.checkHold(workspace, traceId, amount);
    if (this.open.has(traceId)) throw this.duplicate(traceId);
    // A zero hold takes nothing from a room (one emptied by a recall would still "cover" it).
    if (amount === 0n) return this.byMessage(workspace, traceId, amount);
    const slot = this.slots.get(workspace);
    return typeof slot === 'number'
      ? this.holdIn(slot, workspace, traceId, amount)
      : slot.then((s) => this.holdIn(s, workspace, traceId, amount));
  }

  /** A credit seen by this thread: the coordinator's escrow sees it with its next slice statement. */
  refresh(): void {
    this.client.refresh();
  }

  private holdIn(slot: number, workspace: string, traceId: string, amount: bigint): HoldResult | Promise<HoldResult> {
    if (this.open.has(traceId)) throw this.duplicate(traceId);
    if (slot < 0 || !this.room.takeRoom(slot, this.worker, amount)) return this.byMessage(workspace, traceId, amount);
    return this.taken(workspace, traceId, amount, slot);
  }
}
