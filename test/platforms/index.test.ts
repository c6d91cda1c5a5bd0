// The adapter registry (src/platforms/index.ts): every adapter a platform YAML names is registered —
// the bundled config and every test fixture; the invalid fixtures name exactly the one unknown adapter
// test/config/invalid-fixtures.test.ts expects rejected — and every registered adapter has its own test
// file running the shared adapter suite (test/platforms/adapter-suite.ts).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { parseDocument } from 'yaml';
import { ADAPTERS } from '../../src/platforms/index.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const INVALID = join(REPO, 'test/fixtures/config/invalid');

/** Every platforms/*.yaml under a directory, at any depth. */
function platformFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((p) => /(^|\/)platforms\/[^/]+\.yaml$/.test(p))
    .map((p) => join(dir, p))
    .sort();
}

/**
 * [file relative to the repo, the adapter id it names]; files naming none (empty ones) are left out.
 * Read leniently: some invalid fixtures have a duplicate key or a syntax error on purpose.
 */
function adaptersNamed(files: string[]): [string, string][] {
  return files.flatMap((file) => {
    const adapter: unknown = parseDocument(readFileSync(file, 'utf8'), { uniqueKeys: false }).get('adapter');
    return typeof adapter === 'string' ? [[relative(REPO, file), adapter] as [string, string]] : [];
  });
}

t.test('every adapter a platform YAML names is registered', async (t) => {
  const fixtures = platformFiles(join(REPO, 'test/fixtures/config')).filter((f) => !f.startsWith(INVALID));
  const files = [...platformFiles(join(REPO, 'config')), ...fixtures];
  const named = adaptersNamed(files);
  t.equal(named.length, files.length, `each of the ${files.length} platform files names an adapter`);
  t.same(
    named.filter(([, id]) => !ADAPTERS.has(id)),
    [],
    'no platform names an unregistered adapter',
  );
  const used = [...new Set(named.map(([, id]) => id))].sort();
  t.same(used, [...ADAPTERS.keys()].sort(), 'and every registered adapter is used by some platform');
});

t.test('the invalid fixtures name exactly one unregistered adapter, on purpose', async (t) => {
  const unknown = adaptersNamed(platformFiles(INVALID)).filter(([, id]) => !ADAPTERS.has(id));
  t.same(unknown, [['test/fixtures/config/invalid/platform-rules/platforms/delta.yaml', 'grpc']]);
});

t.test('every registered adapter runs the shared adapter suite', async (t) => {
  for (const id of ADAPTERS.keys()) {
    const file = join(REPO, 'test/platforms', `${id}.test.ts`);
    const runsSuite = existsSync(file) && readFileSync(file, 'utf8').includes('runAdapterSuite(');
    t.ok(runsSuite, `test/platforms/${id}.test.ts runs runAdapterSuite`);
  }
});
