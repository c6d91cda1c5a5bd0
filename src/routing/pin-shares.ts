// Which workspace holds how many session pins, so that a full pin store makes room fairly: the
// workspace holding the most pins gives up its least recently used one (on a tie, the one pinning
// now, if it is among them and the new pin is not its only one). One tenant sending ever new
// session ids can push other workspaces down to no fewer pins than its own, and from there pushes
// out only its own. With one workspace this is the plain LRU. Every operation is O(1): each
// workspace's keys in recency order, and the workspaces grouped by how many pins they hold.

export class PinShares {
  /** Each workspace's pin keys, least recently used first. */
  private readonly keys = new Map<string, Set<string>>();
  /** Workspaces by the number of pins they hold (only counts some workspace has). */
  private readonly byCount = new Map<number, Set<string>>();
  private most = 0;

  /** `key` of `workspace` was pinned or used: it becomes that workspace's most recently used. */
  use(workspace: string, key: string): void {
    let keys = this.keys.get(workspace);
    if (!keys) {
      keys = new Set();
      this.keys.set(workspace, keys);
    }
    const had = keys.delete(key);
    keys.add(key);
    if (!had) this.recount(workspace, keys.size - 1, keys.size);
  }

  /** `key` of `workspace` is gone (expired, dropped, evicted). */
  remove(workspace: string, key: string): void {
    const keys = this.keys.get(workspace);
    if (!keys?.delete(key)) return;
    if (keys.size === 0) this.keys.delete(workspace);
    this.recount(workspace, keys.size + 1, keys.size);
  }

  /** The key to evict: the least recently used pin of a workspace holding the most pins —
   *  `prefer`'s (the workspace pinning now) when it is one of them and holds more than the pin it
   *  is setting (its only pin would be that one: a new tenant could never pin in a store full of
   *  one-pin tenants). */
  victim(prefer?: string): { workspace: string; key: string } | null {
    const workspace =
      prefer !== undefined && this.most > 1 && this.count(prefer) === this.most
        ? prefer
        : this.byCount.get(this.most)?.values().next().value;
    if (workspace === undefined) return null;
    const key = this.keys.get(workspace)?.values().next().value;
    return key === undefined ? null : { workspace, key };
  }

  /** How many pins `workspace` holds. */
  count(workspace: string): number {
    return this.keys.get(workspace)?.size ?? 0;
  }

  private recount(workspace: string, from: number, to: number): void {
    if (from > 0) {
      const group = this.byCount.get(from);
      group?.delete(workspace);
      if (group?.size === 0) {
        this.byCount.delete(from);
        if (this.most === from && to < from) this.most = to;
      }
    }
    if (to > 0) {
      let group = this.byCount.get(to);
      if (!group) {
        group = new Set();
        this.byCount.set(to, group);
      }
      group.add(workspace);
      if (to > this.most) this.most = to;
    }
  }
}
