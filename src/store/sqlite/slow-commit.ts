// Slow commits, reported: with PI_WRITER_SLOW_COMMIT_MS=N the writer thread writes one JSON line on
// stderr for every commit that took N ms or more. Every answer waits for its settlement's commit
// before its last bytes, so a slow disk is a slow gateway; this is how an operator sees it (and how
// the benchmark found a page cache dropped under an idle gateway, bench/RESULTS.md 2026-11-25).
import { logLine } from '../../observe/log-line.ts';

/** The threshold in ms from the variable's text, or null (off) when unset, empty or not a number ≥ 0. */
export function slowCommitThreshold(value: string | undefined): number | null {
  if (value === undefined || value.trim() === '') return null;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : null;
}

/** The line for one slow commit: how long it took and what it carried (counts only, nothing secret). */
export function slowCommitLine(ms: number, ledgerOps: number, logRows: number, now: Date = new Date()): string {
  return logLine('writer_slow_commit', { ms: Math.round(ms * 10) / 10, ledger_ops: ledgerOps, log_rows: logRows }, now);
}
