// What every target takes and gives back: a seed and a budget (cases or minutes) in, a summary of
// cases run and oracle hits out. Findings go to the shared FindingBook.
import { type CoverageReport, coverageLines } from './coverage.ts';
import { type FindingBook, type Oracle, ORACLES } from './findings.ts';

export interface Budget {
  /** Stop starting cases at this performance.now() value. */
  deadline: number | null;
  /** Stop after this many cases. */
  cases: number | null;
}

export interface TargetOptions {
  seed: number;
  budget: Budget;
  findings: FindingBook;
  /** Working files (databases, configs, coverage) of this target; findings are written by the book. */
  workDir: string;
  /** Collect V8 coverage of the processes under test and report line coverage. */
  coverage: boolean;
  /** No answer and no close within this long is a hang. */
  hangMs: number;
  /** Cases in flight at once over HTTP (each target has its default). */
  concurrency?: number;
  log: (line: string) => void;
}

export interface TargetSummary {
  target: string;
  cases: number;
  seconds: number;
  /** Oracle hits (every hit, saved or only counted). */
  hits: Partial<Record<Oracle, number>>;
  /** `ledger verify` over the graceful stops: "ok", "failed …" or "n/a". */
  ledgerVerify: string;
  /** Holds open after the graceful stops (null: not applicable). */
  openHolds: number | null;
  /** Settlements checked against their bound (null: not applicable). */
  settlementsChecked: number | null;
  /** Informational figures that are not oracle violations. */
  notes: string[];
  coverage: CoverageReport | null;
}

export interface Target {
  name: string;
  describe: string;
  run(opts: TargetOptions): Promise<TargetSummary>;
}

export function budgetLeft(b: Budget, casesRun: number): boolean {
  if (b.cases !== null && casesRun >= b.cases) return false;
  if (b.deadline !== null && performance.now() >= b.deadline) return false;
  return true;
}

/** Oracle violations of a summary (every hit counts). */
export function violations(s: TargetSummary): number {
  let n = 0;
  for (const o of ORACLES) n += s.hits[o] ?? 0;
  return n;
}

export function hitsFrom(book: FindingBook, target: string): Partial<Record<Oracle, number>> {
  return Object.fromEntries(book.counts(target));
}

/** The summary block printed at the end of a campaign. */
export function summaryLines(s: TargetSummary): string[] {
  const h = (o: Oracle): number => s.hits[o] ?? 0;
  const lines = [
    `target ${s.target}: ${s.cases} cases in ${s.seconds.toFixed(0)} s`,
    `  crashes ${h('crash')}, hangs ${h('hang')}, 5xx to client input ${h('5xx')}, settlements above bound ${h('over-bound')}${s.settlementsChecked === null ? ' (n/a)' : ` (of ${s.settlementsChecked} checked)`}`,
    `  ledger verify ${s.ledgerVerify}, open holds after graceful stop ${s.openHolds === null ? 'n/a' : s.openHolds}`,
  ];
  const others = ORACLES.filter((o) => !['crash', 'hang', '5xx', 'over-bound'].includes(o) && h(o) > 0).map(
    (o) => `${o} ${h(o)}`,
  );
  if (others.length > 0) lines.push(`  other oracles: ${others.join(', ')}`);
  for (const n of s.notes) lines.push(`  note: ${n}`);
  if (s.coverage) lines.push(...coverageLines(s.coverage).map((l) => `  ${l}`));
  return lines;
}
