// The bounded fuzz runs of `npm test`: one target, a fixed seed and a small number of cases, no
// coverage. Every oracle hit fails the test, naming the oracle, the signature and where its
// reproducing input was written (kept after a failure; removed after a pass).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { FindingBook } from '../../fuzz/lib/findings.ts';
import type { Target, TargetSummary } from '../../fuzz/lib/target.ts';

export const SEED = 20_251_127;

export async function boundedRun(
  t: Test,
  target: Target,
  cases: number,
  extra: { hangMs?: number; concurrency?: number } = {},
): Promise<TargetSummary> {
  const dir = mkdtempSync(join(tmpdir(), `pi-fuzz-${target.name}-`));
  const book = new FindingBook(dir, 1);
  const s = await target.run({
    seed: SEED,
    budget: { deadline: null, cases },
    findings: book,
    workDir: join(dir, 'work'),
    coverage: false,
    hangMs: extra.hangMs ?? 20_000,
    ...(extra.concurrency ? { concurrency: extra.concurrency } : {}),
    log: (l) => t.comment(l),
  });
  const hits = book
    .signatures()
    .map(
      (r) =>
        `${r.oracle} ×${r.count}: ${r.signature} — ${r.example.slice(0, 300)}${r.saved[0] ? ` (input: ${r.saved[0]})` : ''}`,
    );
  t.equal(s.cases, cases, `${cases} cases ran`);
  t.same(hits, [], `seed ${SEED}: no oracle failed`);
  if (hits.length === 0) rmSync(dir, { recursive: true, force: true });
  return s;
}
