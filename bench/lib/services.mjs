// Private PostgreSQL and Redis servers for a benchmark (the way test/helpers/pg.ts and redis.ts start
// them): initdb into a temp directory, postgres on 127.0.0.1 with a free port, trust auth, fsync
// off; redis-server without persistence. As root, postgres runs under the `postgres` (else
// `nobody`) account, spawned with that uid/gid directly so the pid held is the server's own. Both
// are pinned to `core` like every other process of a benchmark, and stopped by pid; `halt()` and
// `resume()` stop and restart one on the same port and data (the fleet drills restart them mid-burst).
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CORES, TASKSET, sleep } from './proc.mjs';

const PG_BIN = process.env.PI_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function account() {
  if (process.getuid?.() !== 0) return null;
  for (const name of ['postgres', 'nobody']) {
    const u = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (u.status === 0 && g.status === 0) return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()), name };
  }
  return null;
}

function pinned(cmd, args, core) {
  return TASKSET && CORES >= 2 && core !== null ? ['taskset', ['-c', String(core), cmd, ...args]] : [cmd, args];
}

/** Waits for the child's exit after `sig` (SIGKILL after 5 s). */
function stopChild(c, sig) {
  if (c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      try {
        process.kill(c.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }, 5000);
    c.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    try {
      process.kill(c.pid, sig);
    } catch {
      clearTimeout(t);
      resolve();
    }
  });
}

export function havePostgres() {
  const r = spawnSync('which', ['redis-server'], { encoding: 'utf8' });
  return existsSync(join(PG_BIN, 'postgres')) && r.status === 0;
}

/** { url, pid, halt(), resume(), stop() } of a private postgres; `fsync: true` keeps durable commits (default off). */
export async function startPostgres({ core = null, fsync = false } = {}) {
  const pg = (await import('pg')).default;
  const who = account();
  const dir = mkdtempSync(join(tmpdir(), 'pi-bench-pg-'));
  if (who) chownSync(dir, who.uid, who.gid);
  const data = join(dir, 'data');
  const ids = who ? { uid: who.uid, gid: who.gid } : {};
  const init = spawnSync(
    join(PG_BIN, 'initdb'),
    ['-D', data, '-U', 'pigw', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'],
    { ...ids, cwd: dir, encoding: 'utf8' },
  );
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await freePort();
  const [cmd, args] = pinned(
    join(PG_BIN, 'postgres'),
    [
      '-D',
      data,
      '-p',
      String(port),
      '-h',
      '127.0.0.1',
      '-k',
      dir,
      ...(fsync ? [] : ['-c', 'fsync=off', '-c', 'full_page_writes=off']),
      '-c',
      'max_connections=200',
      '-c',
      'log_min_messages=fatal',
    ],
    core,
  );
  let c = null;
  process.on('exit', () => {
    try {
      if (c) process.kill(c.pid, 'SIGKILL');
    } catch {
      // gone
    }
  });
  const url = `postgres://pigw@127.0.0.1:${port}/postgres`;
  // Spawns the postmaster on the same port and data directory; resolves when it answers.
  const launch = async () => {
    c = spawn(cmd, args, { ...ids, cwd: dir, stdio: ['ignore', 'ignore', 'ignore'] });
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (c.exitCode !== null) throw new Error('postgres exited at start');
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query('SELECT 1');
        await client.end();
        return;
      } catch {
        await client.end().catch(() => undefined);
        if (Date.now() > deadline) throw new Error('postgres did not accept connections within 20 s');
        await sleep(50);
      }
    }
  };
  await launch();
  return {
    url,
    get pid() {
      return c.pid;
    },
    /** A new empty database on this server; its URL (each gateway seeds its own, with its own master key). */
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name.replace(/[^a-z0-9_]/g, '_')}"`);
      } finally {
        await client.end();
      }
      return url.replace(/\/postgres$/, `/${name.replace(/[^a-z0-9_]/g, '_')}`);
    },
    /** Fast shutdown (SIGINT), keeping the data directory: `resume()` starts it again. */
    halt: () => stopChild(c, 'SIGINT'),
    resume: launch,
    async stop() {
      await stopChild(c, 'SIGINT');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function ping(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
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

/** { url, pid, stop() } of a private redis-server. */
export async function startRedis({ core = null } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'pi-bench-redis-'));
  const port = await freePort();
  const [cmd, args] = pinned(
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
    core,
  );
  let c = null;
  process.on('exit', () => {
    try {
      if (c) process.kill(c.pid, 'SIGKILL');
    } catch {
      // gone
    }
  });
  // Spawns redis-server on the same port (empty: no persistence); resolves when it answers PING.
  const launch = async () => {
    c = spawn(cmd, args, { cwd: dir, stdio: ['ignore', 'ignore', 'ignore'] });
    const deadline = Date.now() + 10_000;
    while (!(await ping(port))) {
      if (c.exitCode !== null) throw new Error('redis-server exited at start');
      if (Date.now() > deadline) throw new Error('redis-server did not answer within 10 s');
      await sleep(20);
    }
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return c.pid;
    },
    /** SIGTERM, keeping the port: `resume()` starts it again (empty). */
    halt: () => stopChild(c, 'SIGTERM'),
    resume: launch,
    async stop() {
      await stopChild(c, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
