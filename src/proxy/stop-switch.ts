// Ends in-flight attempts from outside: the gateway throws it when its drain deadline passes. Every
// running attempt watches it while it runs (./attempt.ts); the failover loop starts no attempt once it
// is thrown. One switch per gateway process; a watcher costs one Set entry while its attempt runs.
export class StopSwitch {
  private readonly watchers = new Set<() => void>();
  private thrown = false;

  /** True once `stop()` was called: no attempt should start any more. */
  get stopped(): boolean {
    return this.thrown;
  }

  /** Calls `onStop` once when the switch is thrown (at once if it already was); returns the unwatch. */
  watch(onStop: () => void): () => void {
    if (this.thrown) {
      onStop();
      return () => undefined;
    }
    this.watchers.add(onStop);
    return () => {
      this.watchers.delete(onStop);
    };
  }

  /** Ends every watching attempt (each settles its own way: error event, 503, release). */
  stop(): void {
    if (this.thrown) return;
    this.thrown = true;
    const all = [...this.watchers];
    this.watchers.clear();
    for (const f of all) f();
  }
}
