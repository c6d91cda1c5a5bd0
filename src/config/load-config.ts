// Public entry of the config pipeline: a config dir → a CompiledConfig, or every issue found in it.
// Synchronous and all-or-nothing: callers get either a full config or the complete list of problems.
import { compile } from './compile.ts';
import type { CompiledConfig } from './compiled.ts';
import { type ConfigIssue, formatIssue, sortIssues } from './issues.ts';
import { type CheckedFile, link, type LinkOptions } from './link.ts';
import { loadDir } from './load.ts';
import { validateFile } from './validate.ts';

export type { AdapterCatalog } from './adapter-catalog.ts';
export type { ConfigIssue };
export { formatIssue };

export type LoadConfigResult = { ok: true; config: CompiledConfig } | { ok: false; issues: ConfigIssue[] };

/**
 * Loads, validates, links and compiles the config under `dir`. Issue file names are `<dir>/<path>`,
 * spelled with `dir` as given. Issues come sorted by file and position. `opts.adapters` is the
 * adapter registry platform files are checked against (config/ does not know the adapters itself).
 */
export function loadConfig(dir: string, opts: LinkOptions): LoadConfigResult {
  const loaded = loadDir(dir);
  const issues: ConfigIssue[] = [...loaded.issues];
  const checked: CheckedFile[] = loaded.files.map((f) => {
    const v = validateFile(f);
    issues.push(...v.issues);
    return { f, errorPaths: v.errorPaths };
  });
  const linked = link(checked, opts);
  issues.push(...linked.issues);
  if (issues.length > 0 || linked.config === null) return { ok: false, issues: sortIssues(issues) };
  return { ok: true, config: compile(linked.config, loaded.sourceHash, linked.platformIdFor) };
}
