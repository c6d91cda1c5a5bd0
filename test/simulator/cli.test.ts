// `pi-gateway simulator`: prints where it listens, serves, and exits 0 on SIGTERM.
import t from 'tap';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

t.test('runs until SIGTERM and closes cleanly', async (t) => {
  const child = spawn(process.execPath, [MAIN, 'simulator', '--port', '0', '--api-key', 'sk-cli', '--no-record'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PI_SIM_PORT: '' },
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  child.stderr.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      out += d;
      const m = /simulator listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(out);
      if (m) resolve(m[1] as string);
    });
    child.on('exit', (code) => reject(new Error(`exited early with ${code}: ${out}`)));
  });
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  let res = await fetch(url + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"model":"m","messages":[]}',
  });
  t.equal(res.status, 401, '--api-key enforced');
  await res.text();
  res = await fetch(url + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-cli' },
    body: '{"model":"m","messages":[]}',
  });
  t.equal(res.status, 200);
  await res.text();
  t.same(await (await fetch(url + '/_sim/requests')).json(), [], '--no-record');
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  t.equal(await exited, 0);
});

t.test('--help and bad options', async (t) => {
  const run = (args: string[]) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const c = spawn(process.execPath, [MAIN, 'simulator', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      c.stdout.on('data', (d: Buffer) => (out += d.toString()));
      c.stderr.on('data', (d: Buffer) => (err += d.toString()));
      c.on('close', (code) => resolve({ code, out, err })); // 'close': everything it wrote is read
    });
  const help = await run(['--help']);
  t.equal(help.code, 0);
  t.match(help.out, /Usage: pi-gateway simulator/);
  const bad = await run(['--port', 'abc']);
  t.equal(bad.code, 2, 'a usage error');
  t.match(bad.err, /--port must be an integer/);
});
