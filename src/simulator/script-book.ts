// Behaviours scripted per upstream model id (`sim.script()` or `POST /_sim/script`). Each model has a
// queue: the first entry applies until its count runs out, then the next one; no count = until cleared.
import type { Behaviour } from './behaviour.ts';

interface Entry {
  behaviour: Behaviour;
  remaining: number;
}

export class ScriptBook {
  private readonly queues = new Map<string, Entry[]>();

  add(model: string, behaviour: Behaviour, times?: number): void {
    if (times !== undefined && (!Number.isInteger(times) || times < 1))
      throw new RangeError('times must be a positive integer');
    const queue = this.queues.get(model);
    const entry = { behaviour, remaining: times ?? Number.POSITIVE_INFINITY };
    if (queue) queue.push(entry);
    else this.queues.set(model, [entry]);
  }

  /** The behaviour for the next request to `model`, consuming one use of it. */
  take(model: string): Behaviour | undefined {
    if (this.queues.size === 0) return undefined;
    const queue = this.queues.get(model);
    const head = queue?.[0];
    if (!queue || !head) return undefined;
    head.remaining -= 1;
    if (head.remaining <= 0) {
      queue.shift();
      if (queue.length === 0) this.queues.delete(model);
    }
    return head.behaviour;
  }

  clear(): void {
    this.queues.clear();
  }
}
