// A config directory that is not there is said as such by every command that reads one — not as
// "1 issue" at a made-up `DIR:1:1` position inside it.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/admission.ts';
import { boundedCli } from './fixtures/bounded-cli.ts';
import { cliInProcess, fixtureWorkspace } from './fixtures/run-cli.ts';

t.test('check and build', async (t) => {
  const dir = join(tempDir(t, 'pi-missing-'), 'no-config');
  const check = await cliInProcess(['check', '--config', dir]);
  t.equal(check.code, 1);
  t.equal(check.stderr, `pi-gateway check: config directory ${dir} does not exist\n`);
  t.equal(check.stdout, '', 'no issue line, no 1:1 position');
  const json = await cliInProcess(['check', '--config', dir, '--json']);
  t.strictSame(JSON.parse(json.stdout), { ok: false, error: `config directory ${dir} does not exist`, issues: [] });
  const build = await cliInProcess(['build', '--config', dir, '--check']);
  t.equal(build.code, 1);
  t.equal(build.stderr, `pi-gateway build: config directory ${dir} does not exist\n`);
  const fromEnv = await cliInProcess(['check'], { PI_CONFIG: dir });
  t.equal(fromEnv.stderr, `pi-gateway check: config directory ${dir} does not exist\n`, 'from PI_CONFIG too');
});

t.test('a file where the directory should be', async (t) => {
  const file = join(tempDir(t, 'pi-missing-'), 'config');
  writeFileSync(file, 'workspaces: []\n');
  const r = await cliInProcess(['check', '--config', file]);
  t.equal(r.stderr, `pi-gateway check: config directory ${file} is not a directory\n`);
});

t.test('serve and demo do not start', async (t) => {
  const work = tempDir(t, 'pi-missing-');
  const dir = join(work, 'no-config');
  const serve = await boundedCli(['serve', '--config', dir, '--db', join(work, 'gateway.db'), '--port', '0']);
  t.equal(serve.code, 1);
  t.equal(serve.stderr, `pi-gateway: config directory ${dir} does not exist; not starting\n`);
  const demo = await boundedCli([
    'demo',
    '--config',
    dir,
    '--dir',
    join(work, 'demo'),
    '--port',
    '0',
    '--sim-port',
    '0',
  ]);
  t.equal(demo.code, 1);
  t.equal(demo.stderr, `pi-gateway: config directory ${dir} does not exist; not starting\n`);
});

t.test('store commands that check a workspace', async (t) => {
  const work = tempDir(t, 'pi-missing-');
  const dir = join(work, 'no-config');
  const db = join(work, 'gateway.db');
  const key = await cliInProcess(['key', 'create', '--workspace', fixtureWorkspace(), '--db', db, '--config', dir]);
  t.equal(key.code, 1);
  t.equal(key.stderr, `pi-gateway key: config directory ${dir} does not exist\n`);
  // No --config, no PI_CONFIG, no server recorded, and no ./config where the command runs.
  const dflt = await boundedCli(['wallet', 'credit', '--workspace', 'acme', '--usd', '1', '--db', db], {
    cwd: work,
    env: { PI_CONFIG: undefined },
  });
  t.equal(dflt.code, 1);
  t.equal(dflt.stderr, 'pi-gateway wallet: config directory config does not exist (give --config DIR or PI_CONFIG)\n');
});
