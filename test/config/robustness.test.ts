// Property: whatever one value of a valid tree is turned into (wrong type, null, deleted, …),
// loadConfig never throws and never half-loads: it returns a config, or issues that each point at a
// real line of a real file. Guards the "rules only read what the schema accepted" design.
import t from 'tap';
import fc from 'fast-check';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse, stringify } from 'yaml';
import { loadConfig } from '../../src/config/load-config.ts';
import { ADAPTERS } from '../../src/platforms/index.ts';
import { MINI } from './fixture-tree.ts';

type Seg = string | number;

function yamlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const n of readdirSync(dir).sort()) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) out.push(...yamlFiles(p));
    else if (p.endsWith('.yaml')) out.push(relative(MINI, p));
  }
  return out;
}

function paths(v: unknown, at: Seg[] = [], out: Seg[][] = []): Seg[][] {
  out.push(at);
  if (Array.isArray(v)) for (const [i, x] of v.entries()) paths(x, [...at, i], out);
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) paths(x, [...at, k], out);
  return out;
}

const DELETE = Symbol('delete');
const REPLACEMENTS: unknown[] = [
  null,
  0,
  -1,
  1.5,
  '',
  'x',
  'UPPER',
  'acme/chat-1',
  true,
  [],
  {},
  ['x'],
  { x: 1 },
  DELETE,
];

function mutate(root: unknown, path: Seg[], value: unknown): unknown {
  if (path.length === 0) return value === DELETE ? null : value;
  const copy = structuredClone(root) as Record<Seg, unknown>;
  let node = copy;
  for (const s of path.slice(0, -1)) node = node[s] as Record<Seg, unknown>;
  const last = path[path.length - 1] as Seg;
  if (value !== DELETE) node[last] = value;
  else if (Array.isArray(node)) node.splice(last as number, 1);
  else delete node[last];
  return copy;
}

t.test('one mutated value: a config or located issues, never a throw', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pi-config-fuzz-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(MINI, dir, { recursive: true });
  const files = yamlFiles(MINI).map((rel) => {
    const text = readFileSync(join(MINI, rel), 'utf8');
    const data: unknown = parse(text);
    return { rel, text, data, paths: paths(data) };
  });
  let withIssues = 0;
  fc.assert(
    fc.property(fc.nat(), fc.nat(), fc.constantFrom(...REPLACEMENTS), (fi, pi, value) => {
      const f = files[fi % files.length]!;
      const path = f.paths[pi % f.paths.length]!;
      writeFileSync(join(dir, f.rel), stringify(mutate(f.data, path, value)));
      try {
        const r = loadConfig(dir, { adapters: ADAPTERS });
        if (r.ok) return true;
        withIssues++;
        return (
          r.issues.length > 0 &&
          r.issues.every((i) => i.line >= 1 && i.col >= 1 && i.file.startsWith(dir) && i.message !== '')
        );
      } finally {
        writeFileSync(join(dir, f.rel), f.text);
      }
    }),
    { numRuns: 200 },
  );
  t.ok(withIssues > 60, `most mutations are caught (${withIssues}/200)`);
});
