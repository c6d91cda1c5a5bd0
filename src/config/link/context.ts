// The shared state of one link run: the schema-checked files, typed by kind once (here, right after
// validation), the issues found so far, the kinds whose ids are not all knowable, and the helpers
// every kind's rules use to locate and report a problem.
import type {
  DeploymentsFile,
  GatewayFile,
  ModelsFile,
  PlatformFile,
  ResourcesFile,
  VocabulariesFile,
  WorkspacesFile,
} from '../../generated/config-types.ts';
import type { ConfigIssue, PathSegment } from '../issues.ts';
import { type FileKind, issueAt, locate, type SourceFile } from '../load.ts';

/** A loaded file with the paths its schema validation complained about. */
export interface CheckedFile {
  f: SourceFile;
  errorPaths: PathSegment[][];
}

/** The generated type of each file kind's content (src/generated/config-types.ts, from the schemas). */
export interface FileContent {
  vocabularies: VocabulariesFile;
  gateway: GatewayFile;
  workspaces: WorkspacesFile;
  models: ModelsFile;
  platform: PlatformFile;
  resources: ResourcesFile;
  deployments: DeploymentsFile;
}

/**
 * A file whose content is a mapping, typed by its kind. The type holds wherever the schema found
 * nothing wrong (`ctx.clean(c, path)`). A value the schema rejected may be anything, so a rule that
 * looks past schema errors (ids are registered even when a sibling key is wrong) checks the runtime
 * type of what it reads first (`isMapping`, `typeof`, `Array.isArray`).
 */
export interface Source<K extends FileKind> {
  c: CheckedFile;
  data: FileContent[K];
}

/** A place in a file, for "first declared at" notes. */
export interface Ref {
  c: CheckedFile;
  path: PathSegment[];
}

/** Runtime check that a value the schema may have rejected is a mapping (not null, not a list). */
export function isMapping<T>(v: T): v is NonNullable<T> & object {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** `file:line:col` of a place, for messages that point at another declaration. */
export function where(r: Ref): string {
  const p = locate(r.c.f, r.path);
  return `${r.c.f.file}:${p.line}:${p.col}`;
}

function startsWith(path: readonly PathSegment[], prefix: readonly PathSegment[]): boolean {
  return prefix.length <= path.length && prefix.every((s, i) => path[i] === s);
}

export class LinkContext {
  readonly issues: ConfigIssue[] = [];
  /** Kinds whose ids are not all knowable (a file failed to parse, a list is not a list). */
  readonly incomplete = new Set<FileKind>();
  private readonly files: readonly CheckedFile[];

  constructor(files: readonly CheckedFile[]) {
    this.files = files;
  }

  report(c: CheckedFile, path: PathSegment[], message: string, at: 'value' | 'key' = 'value'): void {
    this.issues.push(issueAt(c.f, path, message, at));
  }

  /** True when the schema found nothing wrong at or below `path`. */
  clean(c: CheckedFile, path: PathSegment[]): boolean {
    return c.f.parsed && !c.errorPaths.some((p) => startsWith(p, path));
  }

  /**
   * The files of a kind whose content is a mapping, typed as that kind (the one place file content
   * gets its type); a file that did not parse or is not a mapping marks the kind incomplete.
   */
  sources<K extends FileKind>(kind: K): Source<K>[] {
    const out: Source<K>[] = [];
    for (const c of this.files) {
      if (c.f.kind !== kind) continue;
      if (c.f.parsed && isMapping(c.f.data)) out.push({ c, data: c.f.data as FileContent[K] });
      else this.incomplete.add(kind);
    }
    return out;
  }

  /** A file's top-level list (marking the kind incomplete when the schema-rejected value is not one). */
  list<T>(c: CheckedFile, value: T[]): T[] {
    if (Array.isArray(value)) return value;
    this.incomplete.add(c.f.kind);
    return [];
  }

  /** File name must equal the declared id. */
  nameMatches(c: CheckedFile, path: PathSegment[], id: string, what: string): void {
    if (this.clean(c, path) && id !== c.f.stem) {
      this.report(c, path, `${what} "${id}" does not match the file name "${c.f.stem}.yaml"`);
    }
  }

  /** Reports `value` unless the vocabulary list has it (skipped when the list itself is unusable). */
  member(
    c: CheckedFile,
    path: PathSegment[],
    value: string,
    known: { has(k: string): boolean } | null,
    what: string,
    list: string,
  ): boolean {
    if (!known || known.has(value)) return true;
    this.report(c, path, `unknown ${what} "${value}" (not in vocabularies.yaml ${list})`);
    return false;
  }
}
