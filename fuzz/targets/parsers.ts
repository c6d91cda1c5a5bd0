// Target `parsers`: the byte-level parsers in process, fast (parser-subjects.ts says what each is
// judged by). Coverage-guided: V8's precise block coverage (node:inspector) is taken after each
// input, and an input that reaches a block of its parser's source not reached before joins that
// parser's corpus; later inputs are mostly mutations of corpus entries.
// Timing: the cost per byte of every input of 16 KiB or more is compared with its parser's median
// (50 × and 100 ms over it, twice, is a finding), and every 25th case of a parser is a scaling check
// on one of its adversarial shapes: the shape at n and 8n bytes, fed as a socket would (4 KiB
// reads); 8n costing more than 24 × n (and over 100 ms), twice, is `superlinear` (a linear parser
// costs about 8 ×, a quadratic one about 64 ×; the margin absorbs allocation and GC steps, which
// make a linear parser's cost per byte jump by 2–3 × at some sizes).
// In a campaign with coverage, the target runs in a child process under NODE_V8_COVERAGE (the child
// replays every input that reached a new block at the end, so the line figures include everything the
// loop reached).
import { spawn } from 'node:child_process';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { coverageReport } from '../lib/coverage.ts';
import type { FindingBook, SignatureRecord } from '../lib/findings.ts';
import { REPO } from '../lib/gateway-child.ts';
import { Rng } from '../lib/rng.ts';
import { type Target, type TargetOptions, type TargetSummary, budgetLeft, hitsFrom } from '../lib/target.ts';
import { type Shape, type Subject, SUBJECTS } from './parser-subjects.ts';

const CORPUS_MAX = 400;
const CORPUS_INPUT_MAX = 64 * 1024;
const SCALE_EVERY = 25;
/** The scaling check: n and SCALE × n bytes; over RATIO × the time is superlinear. */
const SCALE = 8;
const RATIO = 24;

interface ScriptCoverage {
  url: string;
  functions: { functionName: string; ranges: { startOffset: number; endOffset: number; count: number }[] }[];
}

/** Block coverage of a few source files, with "reached" meaning an effective count above zero. */
class CoverageGuide {
  private readonly session = new Session();
  private readonly reached = new Set<string>();
  private readonly known = new Map<string, [number, number][]>();

  constructor() {
    this.session.connect();
    this.post('Profiler.enable');
    this.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
  }

  /** Blocks reached so far. */
  get size(): number {
    return this.reached.size;
  }

  private post(method: string, params: object = {}): unknown {
    let out: unknown;
    let error: Error | null = null;
    // A session on this thread answers synchronously.
    this.session.post(method, params, (err, res) => {
      error = err;
      out = res;
    });
    if (error) throw error;
    return out;
  }

  /** Counts since the last take; true when a block of `files` was reached for the first time. */
  take(files: readonly string[]): boolean {
    const res = this.post('Profiler.takePreciseCoverage') as { result: ScriptCoverage[] };
    let novel = false;
    for (const script of res.result) {
      if (!files.some((f) => script.url.endsWith(f))) continue;
      for (const fn of script.functions) {
        const first = fn.ranges[0];
        if (!first) continue;
        const fk = `${script.url}#${first.startOffset}`;
        let known = this.known.get(fk);
        if (!known) this.known.set(fk, (known = []));
        for (const r of fn.ranges)
          if (!known.some(([s, e]) => s === r.startOffset && e === r.endOffset))
            known.push([r.startOffset, r.endOffset]);
        for (const [s, e] of known) {
          // The innermost reported range around a block gives its count (V8 reports a nested range
          // only where its count differs from its parent's).
          let best: { startOffset: number; endOffset: number; count: number } | null = null;
          for (const r of fn.ranges)
            if (
              r.startOffset <= s &&
              r.endOffset >= e &&
              (best === null || r.endOffset - r.startOffset < best.endOffset - best.startOffset)
            )
              best = r;
          const key = `${fk}:${s}-${e}`;
          if (best && best.count > 0 && !this.reached.has(key)) {
            this.reached.add(key);
            novel = true;
          }
        }
      }
    }
    return novel;
  }

  close(): void {
    this.session.disconnect();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

/** CPU milliseconds `fn` took (user + system, this process's threads): on a shared machine wall
 *  time also counts the time other processes held the cores, which is not the parser's cost. */
async function timed(fn: () => unknown): Promise<number> {
  const t = process.cpuUsage();
  await fn();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

export interface ParsersResult {
  cases: number;
  notes: string[];
  /** Every input that reached a new block (seeds or not: those with problems and large ones too),
   *  with its split points: replayed by the child so its exit coverage holds what the loop reached. */
  reachedNew: { subject: Subject; input: Buffer; cuts: number[] }[];
}

export interface ParsersOptions {
  seed: number;
  budget: TargetOptions['budget'];
  findings: FindingBook;
  guided: boolean;
  /** The scaling check's sizes: 'full' (anywhere in the shapes' ranges) or 'fixed' (each shape's
   *  test size: the same, short work on every run). */
  scale: 'full' | 'fixed';
  /** Leave V8's precise coverage on at the end (the child under NODE_V8_COVERAGE: disconnecting the
   *  guide's session turns block counting off, and the exit coverage would lose it). */
  keepCoverageOn?: boolean;
  log: (line: string) => void;
}

/** The loop itself, in this process. */
export async function runParsers(o: ParsersOptions): Promise<ParsersResult> {
  const guide = o.guided ? new CoverageGuide() : null;
  const corpus = new Map<string, Buffer[]>(SUBJECTS.map((s) => [s.name, []]));
  const costs = new Map<string, number[]>(SUBJECTS.map((s) => [s.name, []]));
  const perSubject = new Map<string, number>();
  let cases = 0;
  let scaled = 0;
  // A shape found superlinear is not measured again: each measurement of it costs seconds.
  const flagged = new Set<Shape>();
  const reachedNew: ParsersResult['reachedNew'] = [];
  try {
    while (budgetLeft(o.budget, cases)) {
      const subject = SUBJECTS[cases % SUBJECTS.length] as Subject;
      const k = perSubject.get(subject.name) ?? 0;
      perSubject.set(subject.name, k + 1);
      const rng = Rng.forCase(o.seed, `parsers:${subject.name}`, k);
      cases++;
      if (k % SCALE_EVERY === SCALE_EVERY - 1 && subject.shapes.length > 0) {
        scaled++;
        // Each shape in turn, so every one is measured early in a campaign.
        const shape = subject.shapes[Math.floor(k / SCALE_EVERY) % subject.shapes.length] as Shape;
        if (!flagged.has(shape) && (await scalingCheck(subject, shape, rng, o))) flagged.add(shape);
        continue;
      }
      const seeds = corpus.get(subject.name) as Buffer[];
      const input = seeds.length > 0 && rng.chance(0.7) ? subject.mutate(rng, rng.pick(seeds)) : subject.generate(rng);
      const cuts = rng.chance(0.3)
        ? Array.from({ length: Math.max(0, input.length - 1) }, (_, i) => i + 1)
            .filter(() => rng.chance(0.5))
            .slice(0, 5000)
        : rng.cuts(input.length, rng.int(1, 12));
      guide?.take([]);
      let problems: Awaited<ReturnType<Subject['check']>> = [];
      const ms = await timed(async () => (problems = await subject.check(input, cuts)));
      for (const p of problems)
        o.findings.record('parsers', p.oracle, `${subject.name}: ${p.signature}`, p.detail, {
          'input.bin': input,
          'meta.json': {
            target: 'parsers',
            subject: subject.name,
            seed: o.seed,
            case: k,
            cuts,
            detail: p.detail,
            replay: 'npm run fuzz -- --replay <this directory>',
          },
        });
      if (guide?.take(subject.files)) {
        reachedNew.push({ subject, input, cuts });
        if (input.length <= CORPUS_INPUT_MAX && problems.length === 0) {
          seeds.push(input);
          if (seeds.length > CORPUS_MAX) seeds.splice(rng.int(0, seeds.length - 1), 1);
        }
      }
      if (input.length >= 16 * 1024)
        await costCheck(subject, input, cuts, ms, costs.get(subject.name) as number[], o, k);
    }
  } finally {
    if (!o.keepCoverageOn) guide?.close();
  }
  const sizes = [...corpus].map(([k, v]) => `${k} ${v.length}`).join(', ');
  return {
    cases,
    notes: [`scaling checks: ${scaled}`, ...(guide ? [`blocks reached: ${guide.size}; corpus: ${sizes}`] : [])],
    reachedNew,
  };
}

/** Cost per byte far above the parser's median, on two runs: `superlinear`. */
async function costCheck(
  subject: Subject,
  input: Buffer,
  cuts: number[],
  ms: number,
  samples: number[],
  o: ParsersOptions,
  k: number,
): Promise<void> {
  const perKb = ms / (input.length / 1024);
  samples.push(perKb);
  if (samples.length > 2000) samples.shift();
  if (samples.length < 20) return;
  const m = median(samples);
  if (ms < 100 || perKb < 50 * m) return;
  const again = await timed(() => subject.check(input, cuts));
  if (again < 100 || again / (input.length / 1024) < 50 * m) return;
  o.findings.record(
    'parsers',
    'superlinear',
    `${subject.name}: an input costs far more per byte than the median`,
    `${ms.toFixed(0)} ms and ${again.toFixed(0)} ms for ${input.length} bytes; median ${m.toFixed(4)} ms/KiB`,
    {
      'input.bin': input,
      'meta.json': {
        target: 'parsers',
        subject: subject.name,
        seed: o.seed,
        case: k,
        cuts,
        replay: 'npm run fuzz -- --replay <this directory>',
      },
    },
  );
}

/** The shape at n and 8n bytes: 8n costing more than 24 × n (over 100 ms), twice, is superlinear (true). */
async function scalingCheck(subject: Subject, shape: Shape, rng: Rng, o: ParsersOptions): Promise<boolean> {
  const n = o.scale === 'fixed' ? shape.testSize : rng.int(shape.minSize, shape.maxSize);
  const small = shape.build(n);
  const large = shape.build(SCALE * n);
  const measure = async (): Promise<[number, number]> => {
    const a = await timed(() => shape.run(small));
    const b = await timed(() => shape.run(large));
    return [a, b];
  };
  // Warm-up: the first runs compile, and the large input's first pass also faults in its pages.
  await timed(() => shape.run(small));
  await timed(() => shape.run(large));
  const [a, b] = await measure();
  if (b < 100 || b < RATIO * Math.max(a, 0.5)) return false;
  const [a2, b2] = await measure();
  if (b2 < 100 || b2 < RATIO * Math.max(a2, 0.5)) return false;
  o.findings.record(
    'parsers',
    'superlinear',
    `${subject.name}: ${shape.name} — ${SCALE} × the bytes cost over ${RATIO} × the time`,
    `${Math.round(b / Math.max(a, 0.5))} × the time: ${small.length} bytes ${a.toFixed(1)} ms / ${a2.toFixed(1)} ms; ${large.length} bytes ${b.toFixed(0)} ms / ${b2.toFixed(0)} ms (4 KiB reads)`,
    {
      'input.bin': large,
      'meta.json': {
        target: 'parsers',
        subject: subject.name,
        shape: shape.name,
        sizes: [small.length, large.length],
        ms: [a, b, a2, b2],
        replay: 'npm run fuzz -- --replay <this directory>',
      },
    },
  );
  return true;
}

export const parsers: Target = {
  name: 'parsers',
  describe:
    'the JSON depth scan, SSE splitter, key scanner, Bedrock decoder and multipart reader, in process, coverage-guided',
  async run(opts: TargetOptions): Promise<TargetSummary> {
    const started = performance.now();
    if (!opts.coverage) {
      const r = await runParsers({
        seed: opts.seed,
        budget: opts.budget,
        findings: opts.findings,
        guided: true,
        scale: 'full',
        log: opts.log,
      });
      return summary(r.cases, r.notes, opts, started, null);
    }
    // Under NODE_V8_COVERAGE in a child: its findings are written by its own book into the same
    // directory and merged here.
    const covDir = join(opts.workDir, 'coverage', 'parsers');
    const outDir = join(opts.workDir, '..');
    const msLeft = opts.budget.deadline !== null ? Math.max(1000, opts.budget.deadline - performance.now()) : null;
    const args = [
      'fuzz/parsers-child.ts',
      JSON.stringify({ seed: opts.seed, ms: msLeft, cases: opts.budget.cases, out: outDir }),
    ];
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_V8_COVERAGE: covDir };
    const child = spawn(process.execPath, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const line = stdout.trim().split('\n').pop() ?? '';
    let result: { cases: number; notes: string[]; findings: SignatureRecord[] };
    try {
      result = JSON.parse(line) as typeof result;
    } catch {
      throw new Error(`the parsers child ended with ${code} and no result:\n${stdout.slice(-2000)}`);
    }
    opts.findings.merge(result.findings);
    const files = [...new Set(SUBJECTS.flatMap((s) => s.files))];
    const coverage = await coverageReport(covDir, join(opts.workDir, 'coverage-report', 'parsers'), files);
    return summary(result.cases, result.notes, opts, started, coverage);
  },
};

function summary(
  cases: number,
  notes: string[],
  opts: TargetOptions,
  started: number,
  coverage: TargetSummary['coverage'],
): TargetSummary {
  return {
    target: 'parsers',
    cases,
    seconds: (performance.now() - started) / 1000,
    hits: hitsFrom(opts.findings, 'parsers'),
    ledgerVerify: 'n/a',
    openHolds: null,
    settlementsChecked: null,
    notes,
    coverage,
  };
}
