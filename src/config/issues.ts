// A config problem located in a YAML file (file:line:col + JSON path), and how it is printed.

/** One problem found while loading, validating or linking `config/`. */
export interface ConfigIssue {
  /** `<dir>/<relative path>`, spelled with the config dir exactly as the caller passed it. */
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  col: number;
  /** JSON path of the offending value, e.g. `models[0].pricing.overrides[1]`; empty for the whole file. */
  path: string;
  message: string;
}

export type PathSegment = string | number;

const IDENT = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** `['models', 0, 'pricing']` → `models[0].pricing`; keys that are not plain words are bracket-quoted. */
export function formatPath(segments: readonly PathSegment[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (IDENT.test(s)) out += out === '' ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}

/** `config/models/openai.yaml:12:7 models[0].pricing.overrides[1]: <message>`
 *  (no path → `file:line:col: message`). */
export function formatIssue(i: ConfigIssue): string {
  const where = `${i.file}:${i.line}:${i.col}`;
  return i.path === '' ? `${where}: ${i.message}` : `${where} ${i.path}: ${i.message}`;
}

function cmp(a: string | number, b: string | number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Issues in reading order: by file, then position, then path and message (deterministic, duplicates dropped). */
export function sortIssues(issues: readonly ConfigIssue[]): ConfigIssue[] {
  const seen = new Set<string>();
  const out: ConfigIssue[] = [];
  for (const i of issues) {
    const k = formatIssue(i);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(i);
  }
  return out.sort(
    (a, b) =>
      cmp(a.file, b.file) || a.line - b.line || a.col - b.col || cmp(a.path, b.path) || cmp(a.message, b.message),
  );
}
