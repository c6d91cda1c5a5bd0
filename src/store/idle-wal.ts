// An idle writer empties its WAL. Under load the WAL is written from its start again after every
// checkpoint that copied it all, so the next commits overwrite frames already in the file. A WAL frame
// (24-byte header + page) never lines up with the OS's 4 KiB pages, so each overwrite covers part of a
// page, and a page the page cache no longer holds is read from the disk before it can be written.
// This machine's kernel drops the page cache of files nobody touched for a minute or so (proactive
// reclaim), however much memory is free: the first commits after an idle minute each waited for disk
// reads, and so did every settlement queued behind them. Truncating the WAL once the writer has been
// idle a while leaves nothing to drop: the next commits append to an empty file, which reads nothing.
// Measured in bench/RESULTS.md ("Latency after an idle gap").
import type { Clock } from '../clock.ts';
import type { SqliteDatabase } from './db.ts';

/** How long the writer waits after its last commit before it empties the WAL. */
export const IDLE_WAL_TRUNCATE_MS = 10_000;

/** When an idle writer empties its WAL: once per idle spell, `idleMs` after its last commit. */
export class IdleWalTruncation {
  private readonly clock: Clock;
  private readonly idleMs: number;
  private lastCommitAt = 0;
  /** Nothing committed since the last truncation (or since the start): nothing to empty. */
  private empty = true;

  constructor(clock: Clock, idleMs: number = IDLE_WAL_TRUNCATE_MS) {
    this.clock = clock;
    this.idleMs = idleMs;
  }

  /** The writer committed: the WAL holds frames again, and the idle spell starts over. */
  committed(): void {
    this.lastCommitAt = this.clock.now();
    this.empty = false;
  }

  /** Whether to empty the WAL now: the writer has been idle `idleMs` and has not emptied it since. */
  due(): boolean {
    return !this.empty && this.clock.now() - this.lastCommitAt >= this.idleMs;
  }

  /** The attempt's outcome: emptied (nothing to do until the next commit), or busy (try again). */
  attempted(emptied: boolean): void {
    if (emptied) this.empty = true;
  }
}

/**
 * Copies what is left of the WAL into the database and truncates it to zero bytes, without waiting:
 * a reader or the checkpointer in the way makes it give up (false) rather than hold the write lock
 * while commits queue behind it. Run on the writer's own connection, so its page cache stays valid.
 */
export function truncateWal(db: SqliteDatabase, busyTimeoutMs: number): boolean {
  db.pragma('busy_timeout = 0');
  try {
    const r = db.pragma('wal_checkpoint(TRUNCATE)', { simple: false }) as { busy: number }[];
    return r[0]?.busy === 0;
  } catch {
    return false;
  } finally {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  }
}
