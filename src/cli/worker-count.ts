// How many serving threads `serve --workers N|auto` starts. Each thread is a whole event loop with
// its own copy of the config, caches and sockets (about 24 MB each at start): threads beyond the
// cores only time-share them, so more than the core count gets a warning, and more than
// WORKERS_PER_CORE per core is refused (99 threads on 2 cores took 2.4 GB and never became ready).
import { UsageError } from './args.ts';

/** The most serving threads per core `--workers` accepts. */
export const WORKERS_PER_CORE = 4;
/** The most serving threads on any machine. */
export const MAX_WORKERS = 256;

export interface WorkerCount {
  workers: number;
  /** Set when the count is above the core count (allowed, but slower than `auto`). */
  warning: string | null;
}

/** The most `--workers` accepts on a machine of `cores` cores. */
export function workerCap(cores: number): number {
  return Math.min(MAX_WORKERS, WORKERS_PER_CORE * Math.max(1, cores));
}

/**
 * `raw` (`--workers` or PI_WORKERS, named `where` in messages) on a machine of `cores` cores: a whole
 * number from 1 to workerCap(cores), or `auto` (one per core); unset is 1.
 */
export function workerCount(raw: string | undefined, where: string, cores: number): WorkerCount {
  if (raw === undefined || raw === '') return { workers: 1, warning: null };
  if (raw === 'auto') return { workers: Math.max(1, cores), warning: null };
  const cap = workerCap(cores);
  if (!/^[0-9]+$/.test(raw) || Number(raw) < 1 || Number(raw) > cap) {
    throw new UsageError(
      `${where} must be a whole number from 1 to ${cap} (at most ${WORKERS_PER_CORE} per core; this machine has ${cores}), or auto, got "${raw}"`,
    );
  }
  const workers = Number(raw);
  const warning =
    workers > cores
      ? `${where} ${workers} is more serving threads than this machine's ${cores} core${cores === 1 ? '' : 's'}: the extra threads share cores and cost memory without serving faster; auto starts one per core`
      : null;
  return { workers, warning };
}
