// `npm run lint` (part of `npm test`) must keep failing on an unformatted file and on a lint error,
// and must leave alone what biome.jsonc excludes. Checked on a scratch project holding the repo's
// biome.jsonc and .gitignore, with the very command `scripts.lint` runs, on the local Biome binary:
// a config that stopped loading, or a path that stopped being checked, would otherwise pass silently.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIOME = createRequire(import.meta.url).resolve('@biomejs/biome/bin/biome');
const scripts = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts;
const [tool, ...args] = (scripts['lint'] ?? '').split(' ');

t.equal(tool, 'biome', 'npm run lint runs Biome');
t.match(scripts['test'], /npm run lint/, 'npm test runs npm run lint');

/** Formatted as Biome wants it with this repo's options (single quotes, two spaces) and lint-clean. */
const CLEAN = 'export function twice(n: number): number {\n  return n * 2;\n}\n';

function project(t: Test): {
  dir: string;
  write: (rel: string, text: string) => void;
  lint: () => { code: number | null; out: string };
} {
  const dir = mkdtempSync(join(tmpdir(), 'pi-lint-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const f of ['biome.jsonc', '.gitignore']) copyFileSync(join(REPO, f), join(dir, f));
  const write = (rel: string, text: string) => {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  };
  write('src/clean.ts', CLEAN);
  const lint = () => {
    // The script itself turns colours off (a CI log shows escape codes as noise); add it if not.
    const plain = args.includes('--colors=off') ? args : [...args, '--colors=off'];
    const r = spawnSync(process.execPath, [BIOME, ...plain], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { code: r.status, out: `${r.stdout}${r.stderr}` };
  };
  return { dir, write, lint };
}

t.test('a clean tree passes', async (t) => {
  const p = project(t);
  const r = p.lint();
  t.equal(r.code, 0, 'exit 0', { output: r.out });
  t.match(r.out, /Checked \d+ files?/, 'files were checked');
});

t.test('an unformatted file fails the check', async (t) => {
  const p = project(t);
  p.write('src/unformatted.ts', 'export const name = "double quotes";\n');
  const r = p.lint();
  t.not(r.code, 0, 'non-zero exit');
  t.match(r.out, /src\/unformatted\.ts format/, 'the file is named as unformatted');
});

t.test('a lint error fails the check', async (t) => {
  const p = project(t);
  p.write('src/loose.ts', 'export function same(a: number, b: number): boolean {\n  return a == b;\n}\n');
  const r = p.lint();
  t.not(r.code, 0, 'non-zero exit');
  t.match(r.out, /src\/loose\.ts:2:\d+ lint\/suspicious\/noDoubleEquals/, 'the rule and place are named');
});

t.test('what biome.jsonc leaves alone stays unchecked', async (t) => {
  const p = project(t);
  // Generated code, deliberately broken config, and the operators' YAML with its aligned comments.
  p.write('src/generated/tables.ts', 'export const x = "generated"  ;\n');
  p.write('test/fixtures/config/invalid/yaml-syntax/models/zeta.yaml', 'models: [unclosed\n');
  p.write(
    'config/models/acme.yaml',
    'models:\n  - id: acme/a          # aligned\n    context_length: 8   # comments\n',
  );
  const r = p.lint();
  t.equal(r.code, 0, 'exit 0: none of them is checked', { output: r.out });
});
