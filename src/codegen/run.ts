// `npm run codegen` / `npm run build:check` / `pi-gateway build`: option handling and reporting around
// the codegen library, shared by scripts/codegen.ts and the CLI so both behave the same.
import { formatIssue } from '../config/load-config.ts';
import { generate, repoRoot, staleOutputs, writeOutputs } from './generate.ts';

export interface CodegenOptions {
  /** Config directory (as the user spelled it; issues are printed with it). */
  configDir: string;
  /** Compare with disk instead of writing. */
  check: boolean;
  /** Output root (default: the repo root); tests point it at a temp dir. */
  root?: string;
  /** Where messages go (default: process stdout/stderr). */
  out?: (line: string) => void;
  err?: (line: string) => void;
}

/** Runs codegen; resolves to the exit code (0 ok, 1 invalid config or stale outputs). */
export async function runCodegen(opts: CodegenOptions): Promise<number> {
  const out = opts.out ?? ((l: string) => process.stdout.write(l + '\n'));
  const err = opts.err ?? ((l: string) => process.stderr.write(l + '\n'));
  const root = opts.root ?? repoRoot();
  const result = await generate(opts.configDir);
  if (!result.ok) {
    for (const i of result.issues) err(formatIssue(i));
    err(
      `codegen: ${result.issues.length} config issue${result.issues.length === 1 ? '' : 's'} in ${opts.configDir}; nothing written`,
    );
    return 1;
  }
  if (opts.check) {
    const problems = staleOutputs(root, result.outputs);
    if (problems.length === 0) {
      out(`codegen --check: ${result.outputs.length} generated files are up to date`);
      return 0;
    }
    for (const p of problems) err(`codegen --check: ${p}`);
    err('codegen --check: run `npm run codegen` and commit the result');
    return 1;
  }
  const written = writeOutputs(root, result.outputs);
  for (const p of written) out(`codegen: wrote ${p}`);
  const c = result.config;
  out(
    `codegen: ${written.length === 0 ? 'everything up to date' : `${written.length} file${written.length === 1 ? '' : 's'} written`} ` +
      `(${c.models.length} models, ${c.platforms.length} platforms, ${c.deployments.length} deployments)`,
  );
  return 0;
}

/** Parses `[--config DIR] [--check]` (env PI_CONFIG, default `config`). */
export function parseCodegenArgs(argv: string[]): { configDir: string; check: boolean } {
  let configDir = process.env['PI_CONFIG'] || 'config';
  let check = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--check') check = true;
    else if (a === '--config' && argv[i + 1] !== undefined) configDir = argv[++i] as string;
    else if (a.startsWith('--config=')) configDir = a.slice('--config='.length);
    else throw new Error(`unknown argument "${a}" (usage: codegen [--config DIR] [--check])`);
  }
  return { configDir, check };
}
