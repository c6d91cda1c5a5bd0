// The inference requests the gateway is answering now. A graceful drain waits for them: each one
// leaves only after its settlement (or release) and its request-log row, so "none in flight" means
// every hold is settled or released and every row is queued for the log.
export class InFlight {
  private count = 0;
  private waiters: (() => void)[] = [];

  /** Requests between enter() and leave(). */
  get size(): number {
    return this.count;
  }

  enter(): void {
    this.count++;
  }

  leave(): void {
    this.count--;
    if (this.count > 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Resolves once no request is in flight (at once when none is). */
  idle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
