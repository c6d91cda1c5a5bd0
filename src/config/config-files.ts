// Which files make a config directory, and their hash: no YAML parsing here, so `serve` can tell
// whether the generated tables match a directory without loading the config compiler.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export type FileKind = 'vocabularies' | 'gateway' | 'workspaces' | 'models' | 'platform' | 'resources' | 'deployments';

/** Files at the top of the config dir, by name. */
const TOP_FILES: Record<string, FileKind> = {
  'vocabularies.yaml': 'vocabularies',
  'gateway.yaml': 'gateway',
  'workspaces.yaml': 'workspaces',
};
/** One file per vendor/platform in these folders. */
const FOLDERS: Record<string, FileKind> = {
  models: 'models',
  platforms: 'platform',
  resources: 'resources',
  deployments: 'deployments',
};
export const REQUIRED = ['vocabularies.yaml', 'workspaces.yaml'];

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Every file under `dir`, relative and `/`-separated, sorted by code unit (locale-independent). */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (abs: string, rel: string) => {
    for (const name of readdirSync(abs).sort(cmp)) {
      const a = join(abs, name);
      const r = rel === '' ? name : `${rel}/${name}`;
      if (statSync(a).isDirectory()) walk(a, r);
      else out.push(r);
    }
  };
  walk(dir, '');
  return out.sort(cmp);
}

export function classify(rel: string): { kind: FileKind; stem: string } | 'ignore' | null {
  const parts = rel.split('/');
  const name = parts[parts.length - 1] as string;
  if (name.endsWith('.md')) return 'ignore';
  if (parts.length === 1) {
    const kind = TOP_FILES[name];
    return kind ? { kind, stem: name.slice(0, -'.yaml'.length) } : null;
  }
  if (parts.length === 2 && name.endsWith('.yaml') && name.length > '.yaml'.length) {
    const kind = FOLDERS[parts[0] as string];
    return kind ? { kind, stem: name.slice(0, -'.yaml'.length) } : null;
  }
  return null;
}

/**
 * The `sourceHash` `loadDir` would compute, without parsing anything: lets `serve` use the generated
 * tables when they were built from exactly these files. Null when the directory cannot be read or
 * holds a file that is not config (loadDir would report it).
 */
export function sourceHashOf(dir: string): string | null {
  let rels: string[];
  try {
    if (!statSync(dir).isDirectory()) return null;
    rels = listFiles(dir);
  } catch {
    return null;
  }
  const hash = createHash('sha256');
  for (const rel of rels) {
    const kind = classify(rel);
    if (kind === 'ignore') continue;
    if (kind === null) return null;
    hash.update(rel);
    hash.update('\0');
    hash.update(readFileSync(join(dir, ...rel.split('/'))));
  }
  return hash.digest('hex');
}
