// `npm run fuzz`: a fuzzing campaign over the gateway's edges (see docs/fuzzing.md).
//
//   npm run fuzz -- [--target NAME|all] [--minutes M | --cases N] [--seed S] [--out DIR]
//                   [--hang-ms MS] [--no-coverage]
//   npm run fuzz -- --replay DIR        (DIR: one saved finding)
//
// Targets run one after another; `--minutes` is the whole campaign's wall time, shared equally by
// the targets chosen; `--cases` is per target. Findings are written under OUT/findings/, the summary
// under OUT/summary.json; the exit code is 1 when any oracle failed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FindingBook, jsonReplacer } from './lib/findings.ts';
import { REPO } from './lib/gateway-child.ts';
import { type Target, type TargetSummary, summaryLines, violations } from './lib/target.ts';
import { replayFinding } from './replay.ts';
import { TARGETS } from './targets/index.ts';

interface Args {
  targets: Target[];
  minutes: number | null;
  cases: number | null;
  seed: number;
  out: string;
  hangMs: number;
  coverage: boolean;
  replay: string | null;
}

const USAGE = `usage: npm run fuzz -- [--target ${TARGETS.map((t) => t.name).join('|')}|all] [--minutes M | --cases N] [--seed S] [--out DIR] [--hang-ms MS] [--no-coverage]
       npm run fuzz -- --replay FINDING_DIR`;

function parseArgs(argv: string[]): Args {
  const a: Args = {
    targets: [...TARGETS],
    minutes: null,
    cases: null,
    seed: 1,
    out: '',
    hangMs: 30_000,
    coverage: true,
    replay: null,
  };
  let seedGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = (): string => {
      const x = argv[++i];
      if (x === undefined) throw new Error(`${k} needs a value\n${USAGE}`);
      return x;
    };
    if (k === '--target') {
      const name = v();
      a.targets =
        name === 'all'
          ? [...TARGETS]
          : name.split(',').map((n) => TARGETS.find((t) => t.name === n) ?? fail(`unknown target ${n}\n${USAGE}`));
    } else if (k === '--minutes') a.minutes = positive(v(), k);
    else if (k === '--cases') a.cases = Math.floor(positive(v(), k));
    else if (k === '--seed') {
      a.seed = Math.floor(Number(v())) >>> 0;
      seedGiven = true;
    } else if (k === '--out') a.out = v();
    else if (k === '--hang-ms') a.hangMs = positive(v(), k);
    else if (k === '--no-coverage') a.coverage = false;
    else if (k === '--replay') a.replay = v();
    else if (k === '-h' || k === '--help') {
      process.stdout.write(USAGE + '\n');
      process.exit(0);
    } else throw new Error(`unknown option ${k}\n${USAGE}`);
  }
  if (!seedGiven) a.seed = (Date.now() % 0x7fffffff) >>> 0;
  if (a.minutes === null && a.cases === null) a.minutes = 1;
  if (a.out === '')
    a.out = join(REPO, 'fuzz', 'out', `${new Date().toISOString().replace(/[:.]/g, '-')}-seed${a.seed}`);
  return a;
}

function positive(s: string, k: string): number {
  const n = Number(s);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${k} must be a positive number`);
  return n;
}

function fail(msg: string): never {
  throw new Error(msg);
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (args.replay) return replayFinding(args.replay, (l) => process.stdout.write(l + '\n'));
  mkdirSync(args.out, { recursive: true });
  const book = new FindingBook(args.out);
  const log = (l: string): void => void process.stdout.write(l + '\n');
  log(
    `fuzz campaign: targets ${args.targets.map((t) => t.name).join(', ')}; seed ${args.seed}; ${args.minutes !== null ? `${args.minutes} min in all` : `${args.cases} cases per target`}; out ${args.out}`,
  );
  const summaries: TargetSummary[] = [];
  const shareMs = args.minutes !== null ? (args.minutes * 60_000) / args.targets.length : null;
  for (const t of args.targets) {
    log(`[${t.name}] ${t.describe}`);
    const s = await t.run({
      seed: args.seed,
      // Starting cases stops a little before the share ends: the graceful stop, the ledger checks
      // and the coverage report take the rest.
      budget: { deadline: shareMs !== null ? performance.now() + shareMs * 0.8 : null, cases: args.cases },
      findings: book,
      workDir: join(args.out, 'work'),
      coverage: args.coverage,
      hangMs: args.hangMs,
      log,
    });
    summaries.push(s);
    for (const l of summaryLines(s)) log(l);
  }
  log('');
  log(`summary (seed ${args.seed}):`);
  for (const s of summaries) for (const l of summaryLines(s)) log(l);
  const sigs = book.signatures();
  if (sigs.length > 0) {
    log('findings:');
    for (const r of sigs)
      log(`  ${r.target} ${r.oracle} ×${r.count}: ${r.signature}${r.saved[0] ? `\n      ${r.saved[0]}` : ''}`);
  }
  writeFileSync(
    join(args.out, 'summary.json'),
    JSON.stringify(
      { seed: args.seed, minutes: args.minutes, cases: args.cases, summaries, findings: sigs },
      jsonReplacer,
      2,
    ) + '\n',
  );
  const bad = summaries.reduce((n, s) => n + violations(s), 0);
  log(
    bad === 0
      ? 'no oracle failed'
      : `${bad} oracle failure(s); replay one with: npm run fuzz -- --replay <finding dir>`,
  );
  return bad === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
