// Credentials told by name: `serve` logs at start-up every credential that active deployments need
// but the database lacks (with those deployments), every stored secret no resource names, and a
// louder line when nothing can serve; `secret set` warns when no resource of the config names the
// secret (`secret set openai-us` names a resource id, where the credential is openai-prod).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { openStore } from '../../src/store/sqlite/store.ts';
import { tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';
import { cliProcess, spawnCli } from './fixtures/run-cli.ts';

const GATEWAY = 'test/fixtures/config/gateway';

interface LogLine {
  event: string;
  [k: string]: unknown;
}

/** Runs `serve` until its start-up lines are out, then stops it; the JSON lines it wrote on stderr. */
async function startupLines(db: string, masterKey: string): Promise<LogLine[]> {
  const child = spawnCli(['serve', '--config', GATEWAY, '--db', db, '--port', '0'], { PI_MASTER_KEY: masterKey });
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 30_000);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      // The warnings are written in the same turn as "listening"; one more turn and they are all out.
      if (stderr.includes('"listening"'))
        setTimeout(() => {
          clearTimeout(timer);
          resolve();
        }, 300);
    });
  });
  child.kill('SIGTERM');
  await exited;
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

t.test('serve names missing credentials and unused secrets at start-up', async (t) => {
  const db = tempDbFile(t);
  const masterKey = randomBytes(32).toString('base64');
  const store = openStore(db, { masterKey });
  store.secrets.set('alpha-1', 'upstream-secret-a');
  store.secrets.set('openai-us', 'upstream-secret-typo');
  store.close();
  const lines = await startupLines(db, masterKey);
  t.ok(
    lines.some((l) => l.event === 'listening'),
    'it started',
  );
  const missing = lines.filter((l) => l.event === 'credential_missing');
  const beta = missing.find((l) => l['credential'] === 'beta-1');
  t.match(
    beta,
    { level: 'warn', resources: ['beta-1'], deployments: ['beta/chat-small', 'beta/reasoner'] },
    'beta-1: its deployments by name',
  );
  t.match(
    beta?.['message'],
    /^credential "beta-1" is not stored: 2 deployment\(s\) cannot serve \(beta\/chat-small, beta\/reasoner\); store it with `pi-gateway secret set beta-1`$/,
  );
  t.notOk(
    missing.some((l) => l['credential'] === 'alpha-1'),
    'a stored credential is not reported',
  );
  const unused = lines.filter((l) => l.event === 'secret_unused');
  t.same(
    unused.map((l) => l['name']),
    ['openai-us'],
    'the stored name no resource uses',
  );
  t.match(
    unused[0]?.['message'],
    /^stored secret "openai-us" is named by no resource in the config, so it serves nothing; resources use: alpha-1, beta-1, /,
  );
  t.notOk(
    lines.some((l) => l.event === 'nothing_servable'),
    'alpha can serve',
  );
  t.notMatch(JSON.stringify(lines), /upstream-secret/, 'no secret value in the log');
});

t.test('serve says so when nothing can serve at all', async (t) => {
  const db = tempDbFile(t);
  const masterKey = randomBytes(32).toString('base64');
  openStore(db, { masterKey }).close();
  const lines = await startupLines(db, masterKey);
  t.ok(lines.some((l) => l.event === 'credential_missing'));
  t.match(
    lines.find((l) => l.event === 'nothing_servable'),
    { level: 'error', message: /every inference request will answer 404 no_eligible_provider/ },
  );
});

t.test('secret set warns when no resource names the secret, and stores it anyway', async (t) => {
  const db = tempDbFile(t);
  const env = { PI_DB: db, PI_MASTER_KEY: randomBytes(32).toString('base64') };
  const typo = await cliProcess(['secret', 'set', 'openai-us', '--config', 'config'], { env, input: 'sk-test' });
  t.equal(typo.code, 0, 'stored');
  t.match(typo.stdout, /secret openai-us stored/);
  t.match(
    typo.stderr,
    /^warning: no resource in config names the credential "openai-us", so it serves nothing\. The credentials its resources use are: .*\bopenai-prod\b/,
  );
  const right = await cliProcess(['secret', 'set', 'openai-prod', '--config', 'config'], { env, input: 'sk-test' });
  t.equal(right.code, 0);
  t.equal(right.stderr, '', 'a credential the config names: no warning');
});
