// `serve` runs from the generated tables when they were built from exactly the given YAML, and
// compiles any other directory in memory; a broken directory never starts a server.
import t from 'tap';
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { configForServe } from '../../src/runtime/runtime.ts';
import { tables } from '../../src/generated/tables.ts';

t.test('the bundled config is served from the generated tables', async (t) => {
  const r = await configForServe('config');
  t.equal(r?.source, 'generated tables');
  t.equal(r?.config, tables);
});

t.test('another directory is compiled', async (t) => {
  const r = await configForServe('test/fixtures/config/gateway');
  t.equal(r?.source, 'compiled');
  t.ok(r?.config.models.some((m) => m.id === 'acme/chat-small'));
});

t.test('a changed copy of the bundled config is compiled, not matched to stale tables', async (t) => {
  const dir = t.testdir({});
  cpSync('config', dir, { recursive: true });
  writeFileSync(join(dir, 'gateway.yaml'), 'limits:\n  max_attempts: 3\n');
  const r = await configForServe(dir);
  t.equal(r?.source, 'compiled');
  t.equal(r?.config.settings.limits.maxAttempts, 3);
});

t.test('an invalid directory gives no config (and prints its issues)', async (t) => {
  const dir = t.testdir({ 'vocabularies.yaml': 'protocols: [' });
  const writes: string[] = [];
  const orig = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string) => {
    writes.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    t.equal(await configForServe(dir), null);
  } finally {
    process.stderr.write = orig;
  }
  t.match(writes.join(''), /not starting/);
});
