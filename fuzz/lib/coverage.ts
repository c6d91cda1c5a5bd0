// Line coverage a target reached: the V8 coverage its processes wrote (NODE_V8_COVERAGE) turned into
// line figures by c8 (Node.js strips the types in place, so V8's positions are the TypeScript
// sources' own), summed per src/ folder. The request-path folders are the ones a client's or a
// provider's bytes travel through.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { REPO } from './gateway-child.ts';

export const REQUEST_PATH_FOLDERS = [
  'server',
  'http',
  'api',
  'admission',
  'routing',
  'proxy',
  'protocols',
  'stream',
  'upstream',
  'platforms',
  'billing',
] as const;

export interface LineFigure {
  covered: number;
  total: number;
}

export interface CoverageReport {
  /** Every file the report counts (all of src/, or the files asked for). */
  all: LineFigure;
  /** The request-path folders together. */
  requestPath: LineFigure;
  /** Per src/ folder (or top-level file), by name. */
  folders: Record<string, LineFigure>;
  /** Per file, relative to the repository. */
  files: Record<string, LineFigure>;
}

export function pct(f: LineFigure): string {
  return f.total === 0 ? 'n/a' : `${((100 * f.covered) / f.total).toFixed(1)} %`;
}

/**
 * Runs `c8 report` over a NODE_V8_COVERAGE directory. `include`: globs relative to the repository
 * (default every file of src/, loaded or not). Null when there is no coverage data.
 */
export async function coverageReport(
  tempDir: string,
  reportDir: string,
  include: string[] = ['src/**'],
): Promise<CoverageReport | null> {
  if (!existsSync(tempDir) || readdirSync(tempDir).length === 0) return null;
  rmSync(reportDir, { recursive: true, force: true });
  const args = [
    'node_modules/c8/bin/c8.js',
    'report',
    '--temp-directory',
    tempDir,
    '--report-dir',
    reportDir,
    '--reporter=json-summary',
    '--all',
    '--src',
    'src',
    '--exclude-after-remap',
  ];
  for (const g of include) args.push('--include', g);
  const child = spawn(process.execPath, args, { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const file = join(reportDir, 'coverage-summary.json');
  if (code !== 0 || !existsSync(file)) throw new Error(`c8 report failed (${code}): ${err.slice(-2000)}`);
  return summarise(
    JSON.parse(readFileSync(file, 'utf8')) as Record<string, { lines: { total: number; covered: number } }>,
  );
}

function summarise(summary: Record<string, { lines: { total: number; covered: number } }>): CoverageReport {
  const out: CoverageReport = {
    all: { covered: 0, total: 0 },
    requestPath: { covered: 0, total: 0 },
    folders: {},
    files: {},
  };
  const paths: readonly string[] = REQUEST_PATH_FOLDERS;
  for (const [path, v] of Object.entries(summary)) {
    if (path === 'total') continue;
    const rel = relative(REPO, path).split(sep).join('/');
    const parts = rel.split('/');
    if (parts[0] !== 'src') continue;
    const folder = parts.length > 2 ? (parts[1] as string) : (parts[1] ?? '').replace(/\.ts$/, '');
    const f = { covered: v.lines.covered, total: v.lines.total };
    out.files[rel] = f;
    add(out.all, f);
    add((out.folders[folder] ??= { covered: 0, total: 0 }), f);
    if (paths.includes(folder)) add(out.requestPath, f);
  }
  return out;
}

function add(into: LineFigure, f: LineFigure): void {
  into.covered += f.covered;
  into.total += f.total;
}

/** Lines for the summary: the request path, each of its folders, and everything counted. */
export function coverageLines(r: CoverageReport): string[] {
  const lines = [
    `line coverage: request path ${pct(r.requestPath)} (${r.requestPath.covered}/${r.requestPath.total}), all counted ${pct(r.all)}`,
  ];
  const parts: string[] = [];
  for (const f of REQUEST_PATH_FOLDERS) {
    const v = r.folders[f];
    if (v && v.total > 0) parts.push(`${f} ${pct(v)}`);
  }
  if (parts.length > 0) lines.push(`  ${parts.join(', ')}`);
  return lines;
}
