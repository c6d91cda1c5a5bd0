// Linear-time checks that hold on a busy machine: each input is timed in CPU (user + system), not
// wall time, so other processes sharing the cores do not count, and the best of several rounds is
// kept (a GC pause lands in one round, not all). An input `factor` times larger may cost up to four
// times `factor` as much (plus a few ms): a linear step passes with room for noise, while a quadratic
// one costs `factor`² as much and fails.

/** Best of `rounds` CPU times of `fn`, ms. */
export function cpuMs(fn: () => unknown, rounds = 5): number {
  let best = Infinity;
  for (let i = 0; i < rounds; i++) {
    const c0 = process.cpuUsage();
    fn();
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / 1000);
  }
  return best;
}

/** cpuMs for work that awaits. */
export async function cpuMsAsync(fn: () => Promise<unknown>, rounds = 5): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < rounds; i++) {
    const c0 = process.cpuUsage();
    await fn();
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / 1000);
  }
  return best;
}

/** True when `largeMs`, for an input `factor` times the small one, is within linear growth and noise. */
export function looksLinear(smallMs: number, largeMs: number, factor: number): boolean {
  return largeMs <= factor * smallMs * 4 + 30;
}
