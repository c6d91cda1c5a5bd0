// A private redis-server for one test file: 127.0.0.1 on a free port, no persistence, its working
// directory a temporary one. Never the system service. Stopped and restarted by pid.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './free-port.ts';
import { realClockEnv } from './real-clock-env.ts';

export interface PrivateRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.setTimeout(500);
    s.once('connect', () => s.write('PING\r\n'));
    s.once('data', (b) => {
      s.destroy();
      resolve(b.toString().startsWith('+PONG'));
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'pi-redis-'));
  const port = await freePort();
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  const start = async () => {
    const c = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--loglevel',
        'warning',
      ],
      {
        cwd: dir,
        env: realClockEnv(),
        stdio: ['ignore', 'ignore', 'ignore'],
      },
    );
    child = c;
    // A missing redis-server fails this test file with a message, not the process with an
    // unhandled 'error' event that skips every teardown (private PostgreSQL servers left running).
    let spawnError: Error | null = null;
    c.once('error', (err) => {
      spawnError = err;
    });
    exited = new Promise((resolve) => {
      c.once('exit', () => resolve());
      c.once('error', () => resolve());
    });
    const deadline = Date.now() + 10_000;
    while (!(await ping(port))) {
      if (spawnError) throw new Error(`cannot start redis-server (install it: see .ci/run): ${String(spawnError)}`);
      if (c.exitCode !== null) throw new Error('redis-server exited at start');
      if (Date.now() > deadline) throw new Error('redis-server did not answer within 10 s');
      await sleep(20);
    }
  };
  const stop = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    c.kill('SIGTERM');
    await exited;
    child = null;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    start,
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
