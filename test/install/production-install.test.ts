// Installing pi-gateway without the executable, as an operator with their own Node.js 22 would: the
// project's files (what git tracks, as they are in this working tree) copied to a new folder,
// `npm ci --omit=dev` there — no TypeScript, no tsx, no build step, no compiler — then `serve` answers
// a request and drains. And the npm package: `npm pack` lists only what runs (never demo state, keys,
// databases or tests).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import t from 'tap';
import { startSimulator } from '../../src/simulator/server.ts';
import { REPO, tempDir, waitFor } from '../helpers/admission.ts';

/** The tracked files of this working tree, copied into `dir` (what a clone of this state holds). */
function copyTracked(dir: string): void {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: REPO })
    .toString()
    .split('\0')
    .filter((f) => f !== '');
  for (const f of files) {
    if (!existsSync(join(REPO, f))) continue;
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    copyFileSync(join(REPO, f), join(dir, f));
  }
}

t.test('npm ci --omit=dev gives a gateway that serves, with no build tools', async (t) => {
  const dir = tempDir(t, 'pi-prod-');
  copyTracked(dir);
  const ci = spawnSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 300_000,
  });
  t.equal(ci.status, 0, `npm ci --omit=dev: ${ci.stderr.slice(-2000)}`);
  for (const tool of ['typescript', 'tsx', 'esbuild', 'tap', 'node'])
    t.notOk(existsSync(join(dir, 'node_modules', tool)), `no ${tool} installed`);
  t.notOk(existsSync(join(dir, 'dist')), 'nothing was built');

  const sim = await startSimulator({});
  t.teardown(() => sim.close());
  const env = { ...process.env, PI_MASTER_KEY: Buffer.alloc(32, 3).toString('base64'), PI_DB: join(dir, 'state.db') };
  const cli = (args: string[], input = '') =>
    spawnSync(process.execPath, ['bin/pi-gateway.js', ...args], { cwd: dir, env, input, encoding: 'utf8' });
  t.equal(cli(['secret', 'set', 'local-sim'], 'sk-local').status, 0, 'secret set');
  const created = cli(['key', 'create', '--workspace', 'acme']);
  t.equal(created.status, 0, created.stderr);
  const key = /sk-pi-[A-Za-z0-9_-]+/.exec(created.stdout)?.[0] ?? '';
  t.equal(cli(['wallet', 'credit', '--workspace', 'acme', '--usd', '5']).status, 0, 'wallet credit');
  const serve = spawn(
    process.execPath,
    ['bin/pi-gateway.js', 'serve', '--config', 'config', '--port', '0', '--upstream-override', sim.url],
    { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  t.teardown(() => {
    if (serve.exitCode === null) serve.kill('SIGKILL');
  });
  let log = '';
  serve.stderr.on('data', (d: Buffer) => (log += d.toString()));
  await waitFor(() => log.includes('"event":"listening"') || serve.exitCode !== null, 30_000);
  const url = /"event":"listening".*?"url":"([^"]+)"/.exec(log)?.[1];
  t.ok(url, `serve listens: ${log.slice(-1000)}`);
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'openai/gpt-6-luna',
      messages: [{ role: 'user', content: 'Hello' }],
      provider: { only: ['local'] },
    }),
  });
  t.equal(res.status, 200, 'answered');
  await res.text();
  serve.kill('SIGTERM');
  const code = await new Promise<number | null>((r) => serve.on('exit', (c) => r(c)));
  t.equal(code, 0, 'drained, exit 0');
});

t.test('the npm package lists only what runs', async (t) => {
  // A demo's state in the tree must not be packed either.
  const dir = tempDir(t, 'pi-pack-');
  copyTracked(dir);
  mkdirSync(join(dir, '.demo'));
  writeFileSync(join(dir, '.demo', 'master.key'), 'secret');
  writeFileSync(join(dir, 'pi-gateway.db'), '');
  const pack = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: dir, encoding: 'utf8' });
  t.equal(pack.status, 0, pack.stderr);
  const files = (JSON.parse(pack.stdout) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? [];
  t.ok(files.includes('bin/pi-gateway.js'), 'the CLI');
  t.ok(files.includes('console/dist/app.js'), 'the console bundle');
  t.ok(
    files.some((f) => f.startsWith('schemas/')) && files.some((f) => f.startsWith('config/')),
    'schemas and the example config',
  );
  const stray = files.filter((f) =>
    /^(\.demo|state|test|tap-snapshots|bench|fuzz|src)\/|\.db$|\.key$|master|\.tap\//.test(f),
  );
  t.same(stray, [], 'no state, key, database, test or source file');
});
