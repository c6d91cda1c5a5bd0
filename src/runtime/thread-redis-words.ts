// How a fleet node's serving threads report their own Redis connections to the coordinator's metrics:
// 32-bit words in one SharedArrayBuffer — word 0 counts the threads' rate-limit fallbacks, word `w`
// is 1 while thread `w`'s connection is down (threads are numbered 1 … N). Both sides read it through
// this one class, so the layout is written once.
import type { ThreadsRedis } from './fleet-limits.ts';

export class ThreadRedisWords implements ThreadsRedis {
  readonly buffer: SharedArrayBuffer;
  private readonly words: Int32Array;
  constructor(buffer: SharedArrayBuffer) {
    this.buffer = buffer;
    this.words = new Int32Array(buffer);
  }

  /** The words for `workers` serving threads. */
  static create(workers: number): ThreadRedisWords {
    return new ThreadRedisWords(new SharedArrayBuffer(4 * (1 + workers)));
  }

  fellBack(): void {
    Atomics.add(this.words, 0, 1);
  }

  /** Thread `worker`'s connection is up (or gone with its thread) or down. */
  status(worker: number, up: boolean): void {
    Atomics.store(this.words, worker, up ? 0 : 1);
  }

  fallbacks(): number {
    return Atomics.load(this.words, 0);
  }

  anyDown(): boolean {
    for (let w = 1; w < this.words.length; w++) if (Atomics.load(this.words, w) !== 0) return true;
    return false;
  }
}
