// The CLI and the server agree on the config directory: `serve` records the one it runs with beside
// its database (FILE.config-dir), and the store commands that check workspace ids use it when given
// neither --config nor PI_CONFIG, saying so. A workspace a reload added is then known to `key
// create` (it used to be "unknown": the CLI read ./config, not the server's directory).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configDirFile } from '../../src/runtime/owner-files.ts';
import { tempDir } from '../helpers/admission.ts';
import { startServe } from '../helpers/serve-process.ts';
import { cliProcess } from './fixtures/run-cli.ts';

t.setTimeout(120_000);

t.test('a workspace added by a reload is known to key create and wallet credit', async (t) => {
  const work = tempDir(t, 'pi-served-');
  const dir = join(work, 'served-config');
  const db = join(work, 'gateway.db');
  const masterKey = randomBytes(32).toString('base64');
  t.equal((await cliProcess(['init', dir])).code, 0);
  const serve = await startServe(t, { config: dir, db: { file: db, masterKey, key: '' } });
  t.equal(readFileSync(configDirFile(db), 'utf8'), `${dir}\n`, 'recorded, absolute, beside the database');

  appendFileSync(join(dir, 'workspaces.yaml'), '  - id: research\n    rate_limit_rpm: 60\n');
  const reload = await cliProcess(['reload', '--db', db]);
  t.equal(reload.code, 0, reload.stderr);

  // Run from the repository, whose ./config has no workspace "research"; PI_CONFIG unset.
  const env = { PI_CONFIG: undefined, PI_DB: db };
  const note = `using the config directory ${dir}, the one the server of ${db} was started with (--config DIR or PI_CONFIG to choose another)`;
  const key = await cliProcess(['key', 'create', '--workspace', 'research'], { env });
  t.equal(key.code, 0, key.stderr);
  t.match(key.stdout, /^sk-pi-/, 'the key alone on stdout');
  t.match(key.stderr, `pi-gateway key: ${note}`, 'says which directory it used');
  const credit = await cliProcess(['wallet', 'credit', '--workspace', 'research', '--usd', '1'], { env });
  t.equal(credit.code, 0, credit.stderr);
  t.match(credit.stderr, `pi-gateway wallet: ${note}`);

  // Given explicitly, --config or PI_CONFIG wins, and nothing is said about the recorded one.
  const other = await cliProcess(['key', 'create', '--workspace', 'research', '--config', 'config'], { env });
  t.equal(other.code, 1);
  t.match(other.stderr, /^pi-gateway key: unknown workspace "research": config defines /);
  t.notMatch(other.stderr, 'using the config directory');
  const fromEnv = await cliProcess(['key', 'create', '--workspace', 'research'], {
    env: { ...env, PI_CONFIG: 'config' },
  });
  t.equal(fromEnv.code, 1);

  // After the server stops its directory is still the one this database's workspaces come from.
  serve.child.kill('SIGTERM');
  t.equal((await serve.exited).code, 0);
  const after = await cliProcess(['key', 'create', '--workspace', 'research'], { env });
  t.equal(after.code, 0, after.stderr);
});
