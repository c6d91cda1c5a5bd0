// The `parsers` target in a process of its own, started by fuzz/run.ts under NODE_V8_COVERAGE: runs
// the loop, then replays every input that reached a new block and each timing shape once more (the
// coverage guide's takes reset V8's counters, so this last pass is what the exit coverage records),
// and prints one JSON line: cases, notes and the findings its book recorded (written under the same
// output directory).
import { FindingBook } from './lib/findings.ts';
import { runParsers } from './targets/parsers.ts';
import { SUBJECTS } from './targets/parser-subjects.ts';

interface ChildArgs {
  seed: number;
  ms: number | null;
  cases: number | null;
  out: string;
}

async function main(): Promise<void> {
  const a = JSON.parse(process.argv[2] ?? '{}') as ChildArgs;
  const book = new FindingBook(a.out);
  const r = await runParsers({
    seed: a.seed,
    budget: { deadline: a.ms !== null ? performance.now() + a.ms : null, cases: a.cases },
    findings: book,
    guided: true,
    scale: 'full',
    keepCoverageOn: true,
    log: (l) => process.stderr.write(l + '\n'),
  });
  for (const x of r.reachedNew) await x.subject.check(x.input, x.cuts);
  // The shapes at their smallest size: the scaling checks ran them, the replay above did not.
  for (const s of SUBJECTS) for (const shape of s.shapes) await shape.run(shape.build(shape.minSize));
  process.stdout.write(JSON.stringify({ cases: r.cases, notes: r.notes, findings: book.signatures() }) + '\n');
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
