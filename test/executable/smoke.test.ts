// The single executable (`npm run dist`, which `npm test` runs first), as a user would run it: copied
// alone into an empty folder and started with a PATH that has no node (and no git, npm or compiler).
// demo answers Chat Completions, Messages and a stream; serve --workers 2 on a fresh database,
// prepared with the executable's own key, wallet and secret commands, answers and drains on SIGTERM
// with exit 0; ledger verify agrees; several copies started at once unpack their files without
// tripping over each other.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { startSimulator } from '../../src/simulator/server.ts';
import { GATEWAY_CONFIG, REPO, tempDir, waitFor } from '../helpers/admission.ts';
import { freePort } from '../helpers/free-port.ts';
import { fixtureConfig } from '../helpers/stack.ts';

const BUILT = join(REPO, 'dist', 'pi-gateway-linux-x64');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface Place {
  /** The folder holding only the executable (the working directory of every run). */
  dir: string;
  exe: string;
  env: Record<string, string>;
}

/** The executable copied alone into an empty folder; PATH is an empty folder; its own cache. */
function place(t: Test): Place {
  if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: npm test builds it (npm run dist)`);
  const dir = tempDir(t, 'pi-exe-');
  const exe = join(dir, 'pi-gateway');
  copyFileSync(BUILT, exe);
  execFileSync('chmod', ['755', exe]);
  const empty = join(dir, '.empty-path');
  mkdirSync(empty);
  return { dir, exe, env: { PATH: empty, HOME: dir, PI_CACHE_DIR: join(dir, '.cache') } };
}

function run(p: Place, args: string[], env: Record<string, string> = {}, input = ''): Promise<Run> {
  const child = spawn(p.exe, args, { cwd: p.dir, env: { ...p.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  return collect(child, input);
}

function collect(child: ChildProcess, input = ''): Promise<Run> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin?.end(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

function gitHead(): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO }).toString().trim();
  } catch {
    return null;
  }
}

t.test('the executable runs with no node on PATH and prints its version and commit', async (t) => {
  const p = place(t);
  t.throws(() => execFileSync('node', ['-v'], { env: p.env, stdio: 'ignore' }), 'no node on this PATH');
  const r = await run(p, ['--version']);
  t.equal(r.code, 0, r.stderr);
  // Nothing on stderr: in particular no "Code cache data rejected" (the code cache matches the
  // V8 flags the executable starts with).
  t.equal(r.stderr, '', 'no warning');
  const m = /^pi-gateway (\d+\.\d+\.\d+) \(commit ([0-9a-f]{12}|unknown), Node\.js (v\d+)\.\d+\.\d+\)\n$/.exec(
    r.stdout,
  );
  t.ok(m, `version line: ${r.stdout}`);
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
  t.equal(m?.[1], pkg.version, 'the package version');
  t.equal(m?.[3], 'v22', 'built on Node.js 22');
  // The commit `npm run dist` recorded (git HEAD when it built; HEAD may have moved since).
  const recorded = (
    JSON.parse(readFileSync(join(REPO, 'dist', 'executable', 'build-info.json'), 'utf8')) as { commit: string }
  ).commit;
  if (gitHead() !== null) t.match(recorded, /^[0-9a-f]{40}$/, 'the build recorded its commit');
  t.equal(m?.[2], recorded === 'unknown' ? 'unknown' : recorded.slice(0, 12), 'the commit it was built from');
  const help = await run(p, ['build', '--config', join(REPO, GATEWAY_CONFIG)]);
  t.not(help.code, 0, 'codegen is not part of the executable');
  t.match(help.stderr, /not part of the single executable/, 'and says so');
});

t.test('copies started together unpack once, without a race', async (t) => {
  const p = place(t);
  const runs = await Promise.all(Array.from({ length: 4 }, () => run(p, ['--version'])));
  for (const [i, r] of runs.entries()) t.equal(r.code, 0, `copy ${i} exited 0 ${r.stderr}`);
  const cache = readdirSync(p.env['PI_CACHE_DIR'] as string);
  t.equal(cache.length, 1, `one unpacked folder, no temporary leftovers: ${cache.join(', ')}`);
  const folder = join(p.env['PI_CACHE_DIR'] as string, cache[0] as string);
  t.ok(
    existsSync(join(folder, 'natives', 'uws.node')) && existsSync(join(folder, 'natives', 'better_sqlite3.node')),
    'the addons are there',
  );
  t.ok(existsSync(join(folder, '.complete')), 'marked complete');
});

async function untilLine(child: ChildProcess, pattern: RegExp, ms = 30_000): Promise<string> {
  let text = '';
  child.stdout?.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (text += d.toString()));
  await waitFor(() => pattern.test(text) || child.exitCode !== null, ms);
  if (!pattern.test(text)) throw new Error(`no ${pattern} in:\n${text}`);
  return text;
}

function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise((r) => child.on('exit', (code) => r(code)));
}

t.test('demo answers Chat Completions, Messages and a stream', async (t) => {
  const p = place(t);
  const [port, simPort] = [await freePort(), await freePort()];
  const demo = spawn(p.exe, ['demo', '--port', String(port), '--sim-port', String(simPort)], {
    cwd: p.dir,
    env: p.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (demo.exitCode === null) demo.kill('SIGKILL');
  });
  const out = await untilLine(demo, /Ctrl-C drains/);
  const key = /sk-pi-[A-Za-z0-9_-]+/.exec(out)?.[0] ?? '';
  t.ok(key, 'a key was printed');
  const base = `http://127.0.0.1:${port}`;
  const post = (path: string, body: unknown): Promise<Response> =>
    fetch(base + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const chat = await post('/v1/chat/completions', {
    model: 'openai/gpt-6-luna',
    messages: [{ role: 'user', content: 'Hello' }],
  });
  t.equal(chat.status, 200, 'chat completion');
  t.equal(((await chat.json()) as { model: string }).model, 'openai/gpt-6-luna');
  const msg = await post('/v1/messages', {
    model: 'anthropic/claude-sonnet-5.5',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  t.equal(msg.status, 200, 'messages');
  t.equal(((await msg.json()) as { type: string }).type, 'message');
  const stream = await post('/v1/chat/completions', {
    model: 'openai/gpt-6-luna',
    stream: true,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  t.equal(stream.status, 200, 'stream');
  t.match(stream.headers.get('content-type') ?? '', /text\/event-stream/);
  const text = await stream.text();
  t.match(text, /data: \[DONE\]\n\n$/, 'the stream ended with [DONE]');
  // The bundle loads uWS after the head-size cap is set, as the sources do.
  const long = await fetch(`${base}/v1/models?q=${'a'.repeat(10_000)}`);
  t.equal(long.status, 200, 'a 10,000-character query is served');
  demo.kill('SIGTERM');
  t.equal(await exited(demo), 0, 'demo drained and exited 0');
  t.ok(existsSync(join(p.dir, '.demo', 'pi-gateway.db')), 'its state is in the working folder');
});

t.test('serve --workers 2 on a fresh database: prepared by the executable, answers, drains, verifies', async (t) => {
  const p = place(t);
  const sim = await startSimulator({});
  t.teardown(() => sim.close());
  const db = join(p.dir, 'gateway.db');
  const config = join(REPO, GATEWAY_CONFIG);
  const env = { PI_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'), PI_DB: db, PI_CONFIG: config };
  for (const cred of new Set(fixtureConfig().resources.map((r) => r.credential))) {
    const r = await run(p, ['secret', 'set', cred], env, `upstream-secret-${cred}`);
    t.equal(r.code, 0, `secret set ${cred} ${r.stderr}`);
  }
  const created = await run(p, ['key', 'create', '--workspace', 'open', '--name', 'smoke'], env);
  t.equal(created.code, 0, `key create ${created.stderr}`);
  const key = /sk-pi-[A-Za-z0-9_-]+/.exec(created.stdout)?.[0] ?? '';
  t.ok(key, 'key printed');
  const credit = await run(p, ['wallet', 'credit', '--workspace', 'open', '--usd', '10'], env);
  t.equal(credit.code, 0, `wallet credit ${credit.stderr}`);

  const serve = spawn(p.exe, ['serve', '--port', '0', '--workers', '2', '--upstream-override', sim.url], {
    cwd: p.dir,
    env: { ...p.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (serve.exitCode === null) serve.kill('SIGKILL');
  });
  const log = await untilLine(serve, /"event":"listening".*"url":"[^"]+"/);
  const url = /"event":"listening".*?"url":"([^"]+)"/.exec(log)?.[1] ?? '';
  // The executable starts its main thread with the start-up V8 flags (its execArgv), not only the
  // threads started after: no "(not the main thread)" mark.
  t.match(log, '"v8_flags":["--no-allocation-site-pretenuring","--no-memory-reducer"]', 'start-up V8 flags');
  for (let i = 0; i < 4; i++) {
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }] }),
    });
    t.equal(res.status, 200, `request ${i} answered`);
    await res.text();
  }
  serve.kill('SIGTERM');
  t.equal(await exited(serve), 0, 'drained on SIGTERM, exit 0');
  const verify = await run(p, ['ledger', 'verify'], env);
  t.equal(verify.code, 0, `ledger verify: ${verify.stdout}${verify.stderr}`);
  const logs = await run(p, ['logs', '--limit', '10', '--json'], env);
  t.equal(logs.code, 0, logs.stderr);
  t.equal(
    logs.stdout
      .trim()
      .split('\n')
      .filter((l) => l.includes('acme/chat-small')).length >= 1,
    true,
    'the requests are in the log',
  );
});

t.test('runs as an unprivileged user, as the systemd unit and the container run it', async (t) => {
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/setpriv')) {
    t.comment('not root or no setpriv: the unprivileged run is checked where the suite runs as root (CI)');
    t.pass('skipped here');
    return;
  }
  const p = place(t);
  // Its own copy of the config, as the unit (/etc/pi-gateway) and the container have: the clone's may
  // not be readable by another user (a clone in a 0700 temporary folder).
  cpSync(join(REPO, GATEWAY_CONFIG), join(p.dir, 'config'), { recursive: true });
  execFileSync('chown', ['-R', '65534:65534', p.dir]);
  const as = (args: string[], env: Record<string, string>, input = ''): Promise<Run> =>
    collect(
      spawn('/usr/bin/setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', p.exe, ...args], {
        cwd: p.dir,
        env: { ...p.env, ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
      input,
    );
  const keyFile = join(p.dir, 'master-key');
  execFileSync('sh', [
    '-c',
    `printf %s "$(head -c 32 /dev/urandom | base64)" > ${keyFile} && chown 65534:65534 ${keyFile} && chmod 0400 ${keyFile}`,
  ]);
  const env = {
    PI_DB: join(p.dir, 'state', 'gateway.db'),
    PI_CONFIG: join(p.dir, 'config'),
    PI_MASTER_KEY_FILE: keyFile,
  };
  mkdirSync(join(p.dir, 'state'));
  execFileSync('chown', ['65534:65534', join(p.dir, 'state')]);
  const sealed = await as(['secret', 'set', 'openai-prod'], env, 'sk-upstream');
  t.equal(sealed.code, 0, `secret set as nobody: ${sealed.stderr}`);
  const key = await as(['key', 'create', '--workspace', 'open'], env);
  t.equal(key.code, 0, `key create as nobody: ${key.stderr}`);
  const verify = await as(['ledger', 'verify'], env);
  t.equal(verify.code, 0, `ledger verify as nobody: ${verify.stderr}`);
});
