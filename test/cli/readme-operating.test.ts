// The README works as written: its "Your first provider" block and its "CLI on the demo's state" block
// are read from README.md and run by bash, unchanged but for the port (a free one instead of 8080, the
// demo's too), in a fresh copy of the project (no dist/, no database), with every upstream pointed at
// the simulator through PI_UPSTREAM_OVERRIDE and a placeholder OPENAI_API_KEY.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator } from '../../src/simulator/server.ts';
import { fixtureConfig } from '../helpers/stack.ts';
import { REPO } from './fixtures/run-cli.ts';

const README = readFileSync(join(REPO, 'README.md'), 'utf8');

// Every CLI call in these blocks starts a fresh Node process on the TypeScript sources (a clone has
// no dist/): on a loaded CI machine the blocks can take a minute or more.
t.setTimeout(300_000);

/** The first ```sh block after `marker` in the README. */
function shBlock(marker: string): string {
  const at = README.indexOf(marker);
  if (at === -1) throw new Error(`README has no "${marker}"`);
  const m = /```sh\n([\s\S]*?)```/.exec(README.slice(at));
  if (!m) throw new Error(`no sh block after "${marker}"`);
  return m[1] as string;
}

/** A copy of the project as a fresh clone has it (sources, config, package files), node_modules linked. */
function freshCopy(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'pi-readme-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const p of [
    'bin',
    'config',
    'console',
    'schemas',
    'scripts',
    'src',
    'package.json',
    'package-lock.json',
    'tsconfig.json',
    'tsconfig.build.json',
  ]) {
    cpSync(join(REPO, p), join(dir, p), { recursive: true });
  }
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function bash(script: string, cwd: string, env: Record<string, string>, timeoutMs = 240_000): Promise<Run> {
  const child = spawn('bash', ['-c', `set -eo pipefail\n${script}\nwait`], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** Environment a fresh shell would have, minus anything pi-gateway reads. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('PI_')) env[k] = v;
  return env;
}

t.test('"Your first provider", as written', async (t) => {
  const block = shBlock('## Your first provider');
  t.match(block, /--port 8080/, 'the block names port 8080');
  const dir = freshCopy(t);
  const sim = await startSimulator({ port: 0 });
  t.teardown(() => sim.close());
  const port = await freePort();
  const env = { ...cleanEnv(), OPENAI_API_KEY: 'sk-placeholder-for-the-simulator', PI_UPSTREAM_OVERRIDE: sim.url };
  const r = await bash(block.replaceAll('8080', String(port)), dir, env);
  if (r.code !== 0) t.comment(r.stderr.slice(-3000));
  t.equal(r.code, 0, 'the block ran to the end');

  // The answer as the provider formatted it (the simulator pretty-prints, like OpenAI). The block
  // sends serve's stdout (the access log) to a file, so no log line can land inside curl's answer.
  const answer = /^\{\n[\s\S]*?\n\}$/m.exec(r.stdout)?.[0] ?? '{}';
  t.match(
    JSON.parse(answer),
    { model: 'openai/gpt-6-luna', object: 'chat.completion' },
    `the curl got a chat completion for the slug\n${r.stdout.slice(0, 2000)}`,
  );
  t.match(r.stdout, /credited 100 USD to acme; balance 100 USD/, 'wallet credit');
  t.match(r.stdout, /openai\/gpt-6-luna/, 'logs show the request');
  t.match(r.stdout, /^ok: /m, 'ledger verify says ok');
  t.notMatch(r.stdout, /"trace_id"/, 'no access-log line on the terminal');
  const accessLog = readFileSync(join(dir, 'state', 'access.log'), 'utf8');
  t.match(accessLog, /"model_served":"openai\/gpt-6-luna".*"status":200/, 'the access log went to state/access.log');
  t.ok(existsSync(join(dir, 'state', 'gateway.db')), 'the one database is state/gateway.db');
  t.notOk(existsSync(join(dir, 'pi-gateway.db')), 'no second database was created');
  t.match(r.stderr, /"event":"listening"/, 'serve started');
  t.notMatch(r.stderr, /"credential":"openai-prod"/, 'no warning for the credential the block stored');
  t.match(
    r.stderr,
    /"event":"credential_missing".*"credential":"anthropic-prod"/,
    'the credentials it did not store are named',
  );
  t.notMatch(r.stderr, /secret_unused/, 'the stored secret is one a resource uses');
  t.match(r.stderr, /"event":"stopping","signal":"SIGTERM"/, 'kill %1 stopped serve cleanly');
});

t.test('the README lists exactly the credential names the bundled active resources use', async (t) => {
  const at = README.indexOf('Credentials are stored under the `credential` names');
  const para = README.slice(at, README.indexOf('`secret set` warns', at));
  const listed = [...para.matchAll(/`([a-z0-9-]+)`/g)]
    .map((m) => m[1] as string)
    .filter((n) => n !== 'credential' && n !== 'openai-us');
  const config = fixtureConfig('bundled');
  const active = [...new Set(config.resources.filter((r) => r.active).map((r) => r.credential))].sort();
  t.same([...listed].sort(), active);
});

t.test('the CLI on the demo’s state, as written', async (t) => {
  const block = shBlock('To\nrun CLI commands on that state');
  const dir = freshCopy(t);
  const [port, simPort] = [await freePort(), await freePort()];
  const env = cleanEnv();
  const demo = spawn('node', ['bin/pi-gateway.js', 'demo', '--port', String(port), '--sim-port', String(simPort)], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((r) => demo.on('close', r));
  t.teardown(async () => {
    demo.kill('SIGTERM');
    await exited;
  });
  let out = '';
  demo.stdout.on('data', (d: Buffer) => (out += d.toString()));
  demo.stderr.on('data', () => undefined);
  const until = Date.now() + 60_000;
  while (!out.includes('stops both.') && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  t.match(
    out,
    /export PI_DB=\.demo\/pi-gateway\.db PI_MASTER_KEY=\$\(cat \.demo\/master\.key\)/,
    'the demo prints the same hint',
  );
  const key = /API key \(workspace acme\): (sk-pi-\S+)/.exec(out)?.[1] ?? '';
  const chat = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-6-luna', messages: [{ role: 'user', content: 'Hello' }] }),
  });
  t.equal(chat.status, 200, 'the demo answers');
  await chat.text();

  const r = await bash(block, dir, env);
  if (r.code !== 0) t.comment(r.stderr.slice(-3000));
  t.equal(r.code, 0, 'the block ran to the end');
  t.match(r.stdout, /openai\/gpt-6-luna/, 'logs read the demo’s request log');
  t.match(r.stdout, /acme\s+\S+/, 'wallet show reads the demo’s wallet');
  t.match(r.stdout, /^sk-pi-[A-Za-z0-9_-]{43}$/m, 'key create wrote a key into the demo’s database');
});
