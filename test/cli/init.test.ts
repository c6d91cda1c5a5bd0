// `pi-gateway init DIR`: a starter config (one OpenAI-compatible provider, one workspace) that passes
// `check` and, after one `secret set`, a key and a credit, serves: the whole path a newcomer takes,
// each step a real `pi-gateway` process, the upstream the simulator standing in for OpenAI.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load-config.ts';
import { ADAPTERS } from '../../src/platforms/index.ts';
import { startSimulator } from '../../src/simulator/server.ts';
import { tempDir } from '../helpers/admission.ts';
import { startServe } from '../helpers/serve-process.ts';
import { cliInProcess, cliProcess } from './fixtures/run-cli.ts';

// Several fresh Node processes on the TypeScript sources.
t.setTimeout(180_000);

/** Every file under `dir`, relative, sorted. */
function filesUnder(dir: string, rel = ''): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(dir, join(rel, e.name)) : [join(rel, e.name)]))
    .sort();
}

t.test('init → check → secret set → key create → wallet credit → serve answers a request', async (t) => {
  const work = tempDir(t, 'pi-init-');
  const dir = join(work, 'my-gateway');
  const db = join(work, 'gateway.db');
  const masterKey = randomBytes(32).toString('base64');
  const env = { PI_CONFIG: dir, PI_DB: db, PI_MASTER_KEY: masterKey };

  const init = await cliProcess(['init', dir]);
  t.equal(init.code, 0, init.stderr);
  for (const step of [
    'secret set openai-api-key',
    'key create --workspace default',
    'wallet credit --workspace default',
    'pi-gateway serve',
  ]) {
    t.match(init.stdout, step, `the next steps name: ${step}`);
  }
  t.strictSame(
    filesUnder(dir),
    [
      'deployments/openai.yaml',
      'gateway.yaml',
      'models/openai.yaml',
      'platforms/openai.yaml',
      'resources/openai.yaml',
      'vocabularies.yaml',
      'workspaces.yaml',
    ],
    'one provider: its platform, resource, deployments and models file, and the shared files',
  );

  const check = await cliProcess(['check', '--config', dir, '--json']);
  t.equal(check.code, 0, check.stdout + check.stderr);
  t.match(JSON.parse(check.stdout), {
    ok: true,
    counts: { models: 2, enabled_models: 2, platforms: 1, resources: 1, deployments: 2, workspaces: 1 },
  });

  const upstreamKey = 'sk-openai-for-the-starter-test';
  const secret = await cliProcess(['secret', 'set', 'openai-api-key'], { env, input: upstreamKey });
  t.equal(secret.code, 0, secret.stderr);
  t.equal(secret.stderr, '', 'the starter names this credential: no warning');
  const key = await cliProcess(['key', 'create', '--workspace', 'default'], { env });
  t.equal(key.code, 0, key.stderr);
  const apiKey = key.stdout.trim();
  const credit = await cliProcess(['wallet', 'credit', '--workspace', 'default', '--usd', '10'], { env });
  t.equal(credit.code, 0, credit.stderr);

  // The simulator stands in for api.openai.com and accepts only the key stored with `secret set`.
  const sim = await startSimulator({ port: 0, apiKey: upstreamKey });
  t.teardown(() => sim.close());
  const serve = await startServe(t, { config: dir, db: { file: db, masterKey, key: apiKey }, upstream: sim.url });
  t.notOk(
    serve.events.find((e) => e.event === 'credential_missing' || e.event === 'nothing_servable'),
    'nothing is missing after one secret set',
  );
  const res = await fetch(`${serve.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-6-luna', messages: [{ role: 'user', content: 'Hello' }] }),
  });
  const body = (await res.json()) as { model?: string; choices?: { message: { content: string } }[] };
  t.equal(res.status, 200, JSON.stringify(body));
  t.equal(body.model, 'openai/gpt-6-luna');
  t.ok(body.choices?.[0]?.message.content, 'an answer');
  const upstream = sim.requests.at(-1);
  t.equal(upstream?.headers['authorization'], `Bearer ${upstreamKey}`, 'sent with the sealed OpenAI key');
  t.match(upstream?.body, { model: 'gpt-6-luna' }, 'under OpenAI’s own model id');
  serve.child.kill('SIGTERM');
  t.equal((await serve.exited).code, 0, 'drains and exits 0');
});

t.test('the starter is small: only the models it serves, each a model of the bundled catalog', async (t) => {
  const dir = join(tempDir(t, 'pi-init-'), 'starter');
  t.equal((await cliInProcess(['init', dir])).code, 0);
  const starter = loadConfig(dir, { adapters: ADAPTERS });
  const bundled = loadConfig('config', { adapters: ADAPTERS });
  if (!starter.ok || !bundled.ok) throw new Error('a config does not load');
  const served = new Set(starter.config.deployments.map((d) => d.model));
  t.strictSame(starter.config.models.map((m) => m.id).sort(), [...served].sort(), 'every model listed is served');
  for (const m of starter.config.models) {
    const original = bundled.config.models.find((b) => b.id === m.id);
    t.ok(original, `${m.id} is in the bundled catalog`);
    t.strictSame(m, original, `${m.id}: the bundled facts and prices, unchanged`);
    t.ok(original?.enabled, `${m.id} is enabled in the bundled catalog`);
  }
  t.equal(starter.config.platforms.length, 1);
  t.strictSame(starter.config.settings, bundled.config.settings, 'gateway.yaml: the bundled defaults');
  t.match(readFileSync(join(dir, 'resources/openai.yaml'), 'utf8'), /credential: openai-api-key/);
});

t.test('init refuses a non-empty directory, a file, a bad workspace id, and no DIR', async (t) => {
  const work = tempDir(t, 'pi-init-');
  const full = join(work, 'full');
  mkdirSync(full);
  writeFileSync(join(full, 'notes.txt'), 'mine\n');
  const r = await cliInProcess(['init', full]);
  t.equal(r.code, 1);
  t.equal(
    r.stderr,
    `pi-gateway init: ${full} is not empty (1 entry); init writes into a new or empty directory only\n`,
  );
  t.strictSame(readdirSync(full), ['notes.txt'], 'nothing written');

  const file = join(work, 'file');
  writeFileSync(file, '');
  const f = await cliInProcess(['init', file]);
  t.equal(f.code, 1);
  t.match(f.stderr, 'exists and is not a directory');

  const bad = await cliInProcess(['init', join(work, 'x'), '--workspace', 'My Team']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--workspace must be 1 to 64 lowercase letters, digits or dashes/);
  t.equal((await cliInProcess(['init'])).code, 2, 'DIR is required');

  // An empty directory is fine, and a chosen workspace id is the one written.
  const empty = join(work, 'empty');
  mkdirSync(empty);
  const ok = await cliInProcess(['init', empty, '--workspace', 'team-a']);
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, 'key create --workspace team-a');
  t.match(readFileSync(join(empty, 'workspaces.yaml'), 'utf8'), /- id: team-a/);
});
