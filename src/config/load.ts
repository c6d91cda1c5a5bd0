// Reads a config directory: classifies every file by kind, parses YAML keeping source positions (so
// any JSON path can be reported as file:line:col), and hashes the sources for `sourceHash`.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  type Document,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  parseDocument,
  visit,
} from 'yaml';
import { type ConfigIssue, formatPath, type PathSegment } from './issues.ts';
import { classify, type FileKind, listFiles, REQUIRED } from './config-files.ts';

export type { FileKind };

export interface SourceFile {
  /** Path relative to the config dir, `/`-separated. */
  rel: string;
  /** `<dir>/<rel>`, as printed in issues. */
  file: string;
  kind: FileKind;
  /** File name without `.yaml`: the id the file must declare (vendor, platform). */
  stem: string;
  /** The parsed document; null when the file could not be parsed at all. */
  doc: Document.Parsed | null;
  lineCounter: LineCounter;
  /** Plain JS value of the document (undefined when it did not parse cleanly). */
  data: unknown;
  /** False after a YAML syntax error or duplicate key: `data` is then unusable. */
  parsed: boolean;
}

export interface LoadResult {
  files: SourceFile[];
  issues: ConfigIssue[];
  sourceHash: string;
}

/** Joins the caller's dir spelling with a relative path, keeping the spelling (`./config/` → `./config/x`). */
export function displayPath(dir: string, rel: string): string {
  const base = dir.replace(/[\\/]+$/, '');
  return base === '' ? `/${rel}` : `${base}/${rel}`;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Reads and parses every config file; problems with the files themselves become issues. */
export function loadDir(dir: string): LoadResult {
  const issues: ConfigIssue[] = [];
  const whole = (rel: string, message: string) =>
    issues.push({ file: displayPath(dir, rel), line: 1, col: 1, path: '', message });

  let rels: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a directory');
    rels = listFiles(dir);
  } catch (err) {
    const why = err instanceof Error && 'code' in err && err.code === 'ENOENT' ? 'does not exist' : 'cannot be read';
    issues.push({ file: dir, line: 1, col: 1, path: '', message: `config directory ${why}` });
    return { files: [], issues, sourceHash: '' };
  }

  const files: SourceFile[] = [];
  const hash = createHash('sha256');
  for (const rel of rels) {
    const kind = classify(rel);
    if (kind === 'ignore') continue;
    if (kind === null) {
      whole(
        rel,
        'unexpected file: the config dir holds vocabularies.yaml, gateway.yaml, workspaces.yaml and ' +
          'models/, platforms/, resources/, deployments/ with one <id>.yaml each (*.md files are ignored)',
      );
      continue;
    }
    const bytes = readFileSync(join(dir, ...rel.split('/')));
    hash.update(rel);
    hash.update('\0');
    hash.update(bytes);
    files.push(parseFile(dir, rel, kind.kind, kind.stem, bytes, issues));
  }
  for (const rel of REQUIRED) {
    if (!files.some((f) => f.rel === rel)) whole(rel, 'required file is missing');
  }
  return { files, issues, sourceHash: hash.digest('hex') };
}

function parseFile(
  dir: string,
  rel: string,
  kind: FileKind,
  stem: string,
  bytes: Buffer,
  issues: ConfigIssue[],
): SourceFile {
  const file = displayPath(dir, rel);
  const lineCounter = new LineCounter();
  const f: SourceFile = { rel, file, kind, stem, doc: null, lineCounter, data: undefined, parsed: false };
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    issues.push({ file, line: 1, col: 1, path: '', message: 'file is not valid UTF-8' });
    return f;
  }
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  f.doc = doc;
  const at = (offset: number) => lineCounter.linePos(Math.min(Math.max(offset, 0), text.length));
  for (const e of doc.errors) {
    const pos = at(e.pos[0]);
    const dup = e.code === 'DUPLICATE_KEY' ? duplicateKeyAt(doc, e.pos[0]) : undefined;
    if (dup)
      issues.push({
        file,
        line: pos.line,
        col: pos.col,
        path: formatPath(dup),
        message: `duplicate key "${String(dup[dup.length - 1])}"`,
      });
    else issues.push({ file, line: pos.line, col: pos.col, path: '', message: `YAML syntax error: ${e.message}` });
  }
  // Warnings (unresolved tags, …) silently change what a value means, so they count as problems too.
  for (const w of doc.warnings) {
    const pos = at(w.pos[0]);
    issues.push({ file, line: pos.line, col: pos.col, path: '', message: `YAML: ${w.message}` });
  }
  if (doc.errors.length > 0 || doc.warnings.length > 0) return f;
  try {
    f.data = doc.toJS();
  } catch (err) {
    issues.push({
      file,
      line: 1,
      col: 1,
      path: '',
      message: `YAML: ${err instanceof Error ? err.message : String(err)}`,
    });
    return f;
  }
  f.parsed = true;
  return f;
}

/** Path of the map key starting at `offset` (yaml reports a duplicate key by offset only). */
function duplicateKeyAt(doc: Document.Parsed, offset: number): PathSegment[] | undefined {
  let found: PathSegment[] | undefined;
  visit(doc, {
    Pair(_key, pair, ancestors) {
      if (!isScalar(pair.key) || pair.key.range?.[0] !== offset) return undefined;
      const path: PathSegment[] = [];
      ancestors.forEach((a, i) => {
        const next = ancestors[i + 1] ?? pair;
        if (isPair(a) && isScalar(a.key)) path.push(String(a.key.value));
        else if (isSeq(a)) path.push(a.items.indexOf(next as never));
      });
      path.push(String(pair.key.value));
      found = path;
      return visit.BREAK;
    },
  });
  return found;
}

function keyText(key: unknown): string | undefined {
  if (isScalar(key)) return String(key.value);
  return undefined;
}

/**
 * 1-based position of the value at `path` (or of its key, with `at: 'key'`). When the path does not
 * exist (a missing key), the nearest existing ancestor is used.
 */
export function locate(
  f: SourceFile,
  path: readonly PathSegment[],
  at: 'value' | 'key' = 'value',
): { line: number; col: number } {
  const doc = f.doc;
  let offset = 0;
  if (doc) {
    let node: unknown = doc.contents;
    const range = node ? (node as Node).range : undefined;
    if (range) offset = range[0];
    for (let i = 0; i < path.length; i++) {
      const seg = path[i] as PathSegment;
      if (isAlias(node)) node = node.resolve(doc);
      let next: unknown;
      let keyNode: unknown;
      if (isMap(node)) {
        const pair = node.items.find((p) => keyText(p.key) === String(seg));
        if (pair) {
          next = pair.value;
          keyNode = pair.key;
        }
      } else if (isSeq(node) && typeof seg === 'number') {
        next = node.items[seg];
      }
      if (next === undefined && keyNode === undefined) break;
      const last = i === path.length - 1;
      const keyRange = isScalar(keyNode) ? keyNode.range : undefined;
      const valueRange = next && (next as Node).range ? (next as Node).range : undefined;
      // An empty value (`key:` and nothing) has no useful position of its own: point at its key.
      const empty = !valueRange || (isScalar(next) && next.value === null && valueRange[0] === valueRange[1]);
      if (last && at === 'key' && keyRange) offset = keyRange[0];
      else if (!empty && valueRange) offset = valueRange[0];
      else if (keyRange) offset = keyRange[0];
      node = next;
    }
  }
  return f.lineCounter.linePos(offset);
}

/** An issue at `path` of `f`. */
export function issueAt(
  f: SourceFile,
  path: readonly PathSegment[],
  message: string,
  at: 'value' | 'key' = 'value',
): ConfigIssue {
  const pos = locate(f, path, at);
  return { file: f.file, line: pos.line, col: pos.col, path: formatPath(path), message };
}
