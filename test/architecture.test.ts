// The import rules of docs/ARCHITECTURE.md, checked by scanning import lines: each heavy dependency
// has one home, handlers never touch uWS, and the request path never reaches into money or storage.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

function imports(file: string): string[] {
  const src = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of src.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)) out.push(m[1] as string);
  for (const m of src.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1] as string);
  return out;
}

const srcFiles = files(join(root, 'src')).map((f) => relative(root, f));

/** A package may be imported only from files under these prefixes. */
const HOMES: Record<string, string[]> = {
  'uWebSockets.js': ['src/server/', 'src/simulator/'],
  undici: ['src/upstream/'],
  'better-sqlite3': ['src/store/'],
  yaml: ['src/config/'],
  ajv: ['src/config/'],
  'ajv/dist/2020': ['src/config/'],
  'ajv/dist/2020.js': ['src/config/'],
  'ajv-formats': ['src/config/'],
  'json-schema-to-typescript': ['src/codegen/'],
};

t.test('each heavy dependency has one home', async (t) => {
  for (const f of srcFiles) {
    for (const spec of imports(join(root, f))) {
      const homes = HOMES[spec];
      if (!homes) continue;
      t.ok(homes.some((h) => f.startsWith(h)), `${f} imports ${spec} (allowed only in ${homes.join(', ')})`);
    }
  }
});

/** Folders that must not import from the listed folders. */
const FORBIDDEN: Record<string, string[]> = {
  'src/api/': ['src/server/uws', 'uWebSockets.js'],
  'src/stream/': ['src/store/', 'src/billing/', 'src/routing/', 'src/api/'],
  'src/protocols/': ['src/store/', 'src/routing/', 'src/api/', 'src/server/'],
  'src/platforms/': ['src/store/', 'src/billing/', 'src/routing/', 'src/api/', 'src/server/'],
  'src/routing/': ['src/store/', 'src/api/', 'src/server/', 'src/proxy/'],
  'src/proxy/': ['src/store/', 'src/api/inference', 'src/server/'],
  'src/upstream/': ['src/store/', 'src/billing/', 'src/routing/', 'src/server/'],
  'src/billing/': ['src/store/', 'src/api/', 'src/server/', 'src/routing/', 'src/proxy/'],
  'src/catalog/': ['src/store/', 'src/api/', 'src/server/'],
  'src/config/': ['src/store/', 'src/api/', 'src/server/', 'src/routing/', 'src/proxy/'],
  'src/store/': ['src/api/', 'src/server/', 'src/routing/', 'src/proxy/', 'src/admission/'],
  'src/generated/': ['src/'],
};

t.test('the request path never reaches the wrong way', async (t) => {
  for (const f of srcFiles) {
    const rules = Object.entries(FORBIDDEN).filter(([dir]) => f.startsWith(dir));
    for (const spec of imports(join(root, f))) {
      const target = spec.startsWith('.') ? relative(root, join(root, f, '..', spec)) : spec;
      for (const [dir, banned] of rules) {
        for (const b of banned) {
          if (dir === 'src/generated/' && spec.includes('config/compiled')) continue;
          t.notOk(target.startsWith(b) || target === b, `${f} (in ${dir}) must not import ${spec}`);
        }
      }
    }
  }
});

t.test('generated files say so in their first line', async (t) => {
  for (const f of files(join(root, 'src', 'generated'))) {
    const first = readFileSync(f, 'utf8').split('\n', 1)[0] ?? '';
    t.match(first, /generated/i, `${relative(root, f)} starts with a generated-file banner`);
  }
});
