// The layout rules of docs/ARCHITECTURE.md, checked from the sources with the TypeScript parser (type-only
// imports count): src/ folders are ranked layers and an import never runs up the ranks; no folder-level
// or file-level import cycle; nothing in src/ imports from outside it; no hand-written function over
// 120 lines; each heavy dependency has one home (each store driver in its backend's folder, redis in
// the fleet's); the store's contract imports no backend and the backends never import each other;
// billing and storage stay beside the request path.
// docs/ARCHITECTURE.md's folder table must list exactly these layers, in this order.
import t from 'tap';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('..', import.meta.url));
const srcDir = join(root, 'src');

/**
 * The ranked layers, lowest first. A file may import from its own layer or a lower one; within one
 * layer the cycle checks keep folders from importing each other both ways. A top-level file of src/
 * (clock.ts, gateway.ts…) is a layer member named without its extension.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['clock', 'money', 'install', 'thread', 'bounded-map'],
  ['errors'],
  ['http', 'observe'],
  ['config', 'generated'],
  ['availability', 'billing', 'stream', 'store'],
  ['catalog', 'platforms', 'protocols', 'routing', 'telemetry', 'upstream'],
  ['admission', 'proxy'],
  ['admin', 'api', 'console', 'fleet', 'workers'],
  ['server'],
  ['simulator', 'codegen'],
  ['gateway'],
  ['runtime'],
  ['cli'],
];

/** A package may be imported only from files under these prefixes. */
const HOMES: Record<string, string[]> = {
  'uWebSockets.js': ['src/server/', 'src/simulator/'],
  undici: ['src/upstream/'],
  'better-sqlite3': ['src/store/sqlite/'],
  pg: ['src/store/postgres/'],
  redis: ['src/fleet/'],
  yaml: ['src/config/'],
  ajv: ['src/config/'],
  'ajv/dist/2020': ['src/config/'],
  'ajv/dist/2020.js': ['src/config/'],
  'ajv-formats': ['src/config/'],
  'json-schema-to-typescript': ['src/codegen/'],
  'prom-client': ['src/telemetry/'],
  '@opentelemetry/api': ['src/telemetry/'],
  '@opentelemetry/core': ['src/telemetry/'],
  '@opentelemetry/exporter-trace-otlp-http': ['src/telemetry/'],
  '@opentelemetry/resources': ['src/telemetry/'],
  '@opentelemetry/sdk-trace': ['src/telemetry/'],
  // The AWS SDK pieces serve the Bedrock adapter only (the simulator checks them by hand).
  '@smithy/signature-v4': ['src/platforms/'],
  '@smithy/core/serde': ['src/platforms/'],
  '@smithy/core/event-streams': ['src/platforms/'],
};

/** Beside the path: money, storage and telemetry reach the request path through callbacks and seams only. */
const BESIDE: Record<string, string[]> = {
  stream: ['billing', 'store'],
  platforms: ['billing', 'store'],
  upstream: ['billing', 'store'],
  protocols: ['store', 'telemetry'],
  routing: ['store', 'telemetry'],
  catalog: ['store'],
  proxy: ['store', 'admission', 'telemetry'],
  billing: ['store'],
  store: ['billing'],
  // Observers (src/telemetry/) reach the request path through src/observe/'s interfaces, never by import.
  api: ['telemetry'],
  admission: ['telemetry'],
  fleet: ['telemetry'],
};

/**
 * src/store/ is one ranked folder holding three parts: the contract both backends keep (its top-level
 * files: types, errors, key format, secret rules, sealing, the store interfaces…) and one folder per
 * backend. The contract imports no backend, and no backend imports the other.
 */
const STORE_CONTRACT = join(srcDir, 'store') + sep;
const STORE_BACKENDS = ['sqlite', 'postgres'].map((b) => join(srcDir, 'store', b) + sep);

const MAX_FUNCTION_LINES = 120;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

function folderOf(file: string): string {
  const parts = relative(srcDir, file).split(sep);
  return parts.length > 1 ? (parts[0] as string) : (parts[0] as string).replace(/\.ts$/, '');
}

function resolveImport(from: string, spec: string): string | null {
  const base = resolve(dirname(from), spec);
  for (const c of [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')]) {
    if (existsSync(c) && statSync(c).isFile()) return c;
  }
  return null;
}

interface Parsed {
  file: string;
  /** Module specifiers: static imports and exports (type-only included) and dynamic import(). */
  specs: string[];
  /** The specifiers of those that load the module when run: type-only imports and exports left out. */
  valueSpecs: string[];
  /** Functions longer than the limit, as `file:line (n lines)`. */
  long: string[];
}

function parse(file: string): Parsed {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const specs: string[] = [];
  const valueSpecs: string[] = [];
  const long: string[] = [];
  const generated = file.includes(`${sep}generated${sep}`);
  const visit = (n: ts.Node): void => {
    if (
      (ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) &&
      n.moduleSpecifier &&
      ts.isStringLiteral(n.moduleSpecifier)
    ) {
      specs.push(n.moduleSpecifier.text);
      const typeOnly = ts.isImportDeclaration(n) ? n.importClause?.isTypeOnly === true : n.isTypeOnly;
      if (!typeOnly) valueSpecs.push(n.moduleSpecifier.text);
    }
    if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = n.arguments[0];
      if (arg && ts.isStringLiteral(arg)) {
        specs.push(arg.text);
        valueSpecs.push(arg.text);
      }
    }
    const isFunction =
      ts.isFunctionDeclaration(n) ||
      ts.isMethodDeclaration(n) ||
      ts.isArrowFunction(n) ||
      ts.isFunctionExpression(n) ||
      ts.isConstructorDeclaration(n);
    if (isFunction && !generated) {
      const start = sf.getLineAndCharacterOfPosition(n.getStart()).line;
      const end = sf.getLineAndCharacterOfPosition(n.getEnd()).line;
      if (end - start + 1 > MAX_FUNCTION_LINES)
        long.push(`${relative(root, file)}:${start + 1} (${end - start + 1} lines)`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return { file, specs, valueSpecs, long };
}

/** Strongly connected components with more than one member (Tarjan). */
function cycles(edges: Map<string, Set<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const nodes = new Set<string>([...edges.keys(), ...[...edges.values()].flatMap((s) => [...s])]);
  const strong = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w === undefined) break;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of nodes) if (!index.has(v)) strong(v);
  return out;
}

const rankOf = new Map<string, number>();
for (const [rank, layer] of LAYERS.entries()) for (const folder of layer) rankOf.set(folder, rank);

const parsed = sourceFiles(srcDir).map(parse);
const fileEdges = new Map<string, Set<string>>();
const folderEdges = new Map<string, Set<string>>();
const upward: string[] = [];
const outward: string[] = [];
const besideViolations: string[] = [];
for (const p of parsed) {
  const from = folderOf(p.file);
  for (const spec of p.specs) {
    if (!spec.startsWith('.')) continue;
    const target = resolveImport(p.file, spec);
    if (!target) continue;
    if (!target.startsWith(srcDir + sep)) {
      outward.push(`${relative(root, p.file)} -> ${relative(root, target)}`);
      continue;
    }
    const to = folderOf(target);
    // generated/ holds codegen output that types itself with config's compiled types; config reads
    // the generated config types. That pair is one layer and is not a cycle of hand-written code.
    const generatedPair = (from === 'generated' && to === 'config') || (from === 'config' && to === 'generated');
    if (!generatedPair) {
      if (!fileEdges.has(p.file)) fileEdges.set(p.file, new Set());
      fileEdges.get(p.file)?.add(target);
    }
    if (from === to) continue;
    if (!generatedPair) {
      if (!folderEdges.has(from)) folderEdges.set(from, new Set());
      folderEdges.get(from)?.add(to);
    }
    const rf = rankOf.get(from);
    const rt = rankOf.get(to);
    if (rf !== undefined && rt !== undefined && rt > rf)
      upward.push(`${relative(root, p.file)} (${from}, rank ${rf}) imports ${spec} (${to}, rank ${rt})`);
    if (BESIDE[from]?.includes(to))
      besideViolations.push(`${relative(root, p.file)} (${from}) imports ${spec} (${to})`);
  }
}

t.test('every src/ folder and top-level file has a rank', async (t) => {
  const folders = new Set(parsed.map((p) => folderOf(p.file)));
  for (const f of folders) t.ok(rankOf.has(f), `${f} is in LAYERS`);
  for (const f of rankOf.keys()) t.ok(folders.has(f), `LAYERS names ${f}, which exists in src/`);
});

t.test('no import runs up the ranked layers', async (t) => {
  t.same(upward, [], upward.join('\n'));
});

t.test('no folder-level import cycle (type-only imports count)', async (t) => {
  const found = cycles(folderEdges).map((c) => c.join(' <-> '));
  t.same(found, [], found.join('\n'));
});

t.test('no file-level import cycle', async (t) => {
  const found = cycles(fileEdges).map((c) => c.map((f) => relative(root, f)).join(' <-> '));
  t.same(found, [], found.join('\n'));
});

t.test('nothing in src/ imports from outside src/', async (t) => {
  t.same(outward, [], outward.join('\n'));
});

t.test(`no hand-written function over ${MAX_FUNCTION_LINES} lines`, async (t) => {
  const long = parsed.flatMap((p) => p.long);
  t.same(long, [], long.join('\n'));
});

t.test('each heavy dependency has one home', async (t) => {
  const misplaced: string[] = [];
  for (const p of parsed) {
    const rel = relative(root, p.file);
    for (const spec of p.specs) {
      const homes = HOMES[spec];
      if (homes && !homes.some((h) => rel.startsWith(h)))
        misplaced.push(`${rel} imports ${spec} (allowed only in ${homes.join(', ')})`);
    }
  }
  t.same(misplaced, [], misplaced.join('\n'));
});

// uWS reads its request-head cap from the environment when the addon loads: src/server/uws.ts sets
// it first, so it must be the one file that loads the addon (types may be imported anywhere).
t.test('only src/server/uws.ts loads uWebSockets.js', async (t) => {
  const loaders = parsed
    .filter((p) => p.valueSpecs.includes('uWebSockets.js'))
    .map((p) => relative(root, p.file).split(sep).join('/'));
  t.same(loaders, ['src/server/uws.ts']);
});

t.test('money and storage stay beside the request path', async (t) => {
  t.same(besideViolations, [], besideViolations.join('\n'));
});

t.test('the store contract (top-level files of src/store/) imports no backend', async (t) => {
  const found: string[] = [];
  for (const p of parsed) {
    if (dirname(p.file) + sep !== STORE_CONTRACT) continue;
    for (const spec of p.specs) {
      const target = spec.startsWith('.') ? resolveImport(p.file, spec) : null;
      if (target && STORE_BACKENDS.some((b) => target.startsWith(b)))
        found.push(`${relative(root, p.file)} imports ${spec}`);
    }
  }
  t.same(found, [], found.join('\n'));
});

t.test('src/store/sqlite/ and src/store/postgres/ never import each other', async (t) => {
  const found: string[] = [];
  for (const p of parsed) {
    const own = STORE_BACKENDS.find((b) => p.file.startsWith(b));
    if (own === undefined) continue;
    for (const spec of p.specs) {
      const target = spec.startsWith('.') ? resolveImport(p.file, spec) : null;
      if (target && STORE_BACKENDS.some((b) => b !== own && target.startsWith(b)))
        found.push(`${relative(root, p.file)} imports ${spec}`);
    }
  }
  t.same(found, [], found.join('\n'));
});

/** The operator console is served by the admin listener only: no other file of src/ imports it. */
const CONSOLE_IMPORTERS = ['src/server/admin-app.ts'];

t.test('only the admin listener imports the console (the gateway core never does)', async (t) => {
  const misplaced: string[] = [];
  const consoleDir = join(srcDir, 'console') + sep;
  for (const p of parsed) {
    const rel = relative(root, p.file);
    if (p.file.startsWith(consoleDir) || CONSOLE_IMPORTERS.includes(rel)) continue;
    for (const spec of p.specs) {
      const target = spec.startsWith('.') ? resolveImport(p.file, spec) : null;
      if (target?.startsWith(consoleDir)) misplaced.push(`${rel} imports ${spec}`);
    }
  }
  t.same(misplaced, [], misplaced.join('\n'));
});

t.test('the browser code of the console (console/) imports nothing from src/', async (t) => {
  const dir = join(root, 'console', 'src');
  const found: string[] = [];
  for (const f of existsSync(dir) ? readdirSync(dir) : []) {
    const text = readFileSync(join(dir, f), 'utf8');
    for (const m of text.matchAll(/from\s+'([^']+)'/g))
      if ((m[1] as string).includes('/src/') || (m[1] as string).startsWith('../../'))
        found.push(`console/src/${f} imports ${m[1]}`);
  }
  t.same(found, [], found.join('\n'));
});

t.test('generated files say so in their first line', async (t) => {
  // catalog.json cannot carry a comment; the folder's README says it is generated.
  for (const f of sourceFiles(join(srcDir, 'generated'))) {
    const first = readFileSync(f, 'utf8').split('\n', 1)[0] ?? '';
    t.match(first, /generated/i, `${relative(root, f)} starts with a generated-file banner`);
  }
});

t.test("docs/ARCHITECTURE.md's folder table lists exactly these layers, in rank order", async (t) => {
  const doc = readFileSync(join(root, 'docs', 'ARCHITECTURE.md'), 'utf8');
  // Rows of the layer table: | rank | `src/folder/` or `src/file.ts` | owns |
  const rows = [...doc.matchAll(/^\|\s*(\d+)\s*\|\s*`src\/([a-z-]+)(?:\/|\.ts)`\s*\|/gm)].map((m) => ({
    rank: Number(m[1]),
    folder: m[2] as string,
  }));
  const documented = rows.map((r) => `${r.rank} ${r.folder}`);
  const expected = LAYERS.flatMap((layer, rank) => layer.map((f) => `${rank} ${f}`));
  t.same(documented, expected);
});
