// A private PostgreSQL 15 for one test file: initdb into a temporary directory, postgres on
// 127.0.0.1 with a free port (and its Unix socket in the same directory), trust authentication,
// fsync off (the data dies with the test). Never the system service.
//
// Options for what a test must configure as an operator would (TLS, client authentication):
// `settings` are passed as `-c name=value`, `hba` replaces pg_hba.conf (it must still let the
// superuser `pigw` in over TCP from 127.0.0.1 without a password: the helper connects that way), and
// `ownFiles` (a server's certificate key, say) are handed to the account the server runs as, mode 0600.
//
// Root: postgres refuses to run as root, and CI runs as root. Then the data directory is handed to
// an unprivileged account (`postgres` when the Debian package created it, else `nobody`) and initdb
// and postgres are spawned with that uid/gid (Node's spawn options: no su/runuser in between, so
// the pid we hold is the postmaster's own and stopping by pid stays exact).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from './free-port.ts';

const BIN = process.env.PI_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface PrivatePg {
  /** postgres://pigw@127.0.0.1:PORT/postgres */
  url: string;
  port: number;
  /** A fresh empty database on this server; returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** Fast shutdown (SIGINT to the postmaster); resolves when it has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops it and removes the directory. */
  destroy(): Promise<void>;
  /** Which account the server runs as (the current user, or the unprivileged one when root). */
  runsAs: string;
}

interface Account {
  uid: number;
  gid: number;
  name: string;
}

/** The account postgres runs as: ourselves, or an unprivileged one when we are root. */
function account(): Account | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ['postgres', 'nobody']) {
    const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (r.status === 0 && g.status === 0) return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()), name };
  }
  throw new Error('running as root and no unprivileged account (postgres, nobody) to run postgres as');
}

export interface PrivatePgOptions {
  /** Server settings, each passed as `-c name=value`. */
  settings?: Record<string, string>;
  /** The whole pg_hba.conf (default: initdb's, trust for everyone). */
  hba?: string;
  /** Files the server reads that must be its account's own, mode 0600 (a TLS key). */
  ownFiles?: string[];
}

let seq = 0;

export async function startPrivatePg(opts: PrivatePgOptions = {}): Promise<PrivatePg> {
  if (!existsSync(join(BIN, 'postgres')))
    throw new Error(`no PostgreSQL binaries in ${BIN} (apt-get install postgresql, or set PI_TEST_PG_BIN)`);
  const who = account();
  const dir = mkdtempSync(join(tmpdir(), 'pi-pg-'));
  if (who) chownSync(dir, who.uid, who.gid);
  const data = join(dir, 'data');
  const ids = who ? { uid: who.uid, gid: who.gid } : {};
  const init = spawnSync(
    join(BIN, 'initdb'),
    ['-D', data, '-U', 'pigw', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'],
    {
      ...ids,
      cwd: dir,
      encoding: 'utf8',
    },
  );
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  if (opts.hba !== undefined) {
    const hba = join(data, 'pg_hba.conf');
    writeFileSync(hba, opts.hba);
    if (who) chownSync(hba, who.uid, who.gid);
  }
  for (const file of opts.ownFiles ?? []) {
    chmodSync(file, 0o600);
    if (who) chownSync(file, who.uid, who.gid);
  }
  const settings = Object.entries(opts.settings ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
  const port = await freePort();
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();

  const start = async (): Promise<void> => {
    const c = spawn(
      join(BIN, 'postgres'),
      [
        '-D',
        data,
        '-p',
        String(port),
        '-h',
        '127.0.0.1',
        '-k',
        dir,
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'max_connections=200',
        '-c',
        'log_min_messages=fatal',
        ...settings,
      ],
      { ...ids, cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let err = '';
    c.stderr?.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-4000)));
    child = c;
    exited = new Promise((resolve) => c.once('exit', () => resolve()));
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (c.exitCode !== null || c.signalCode !== null) throw new Error(`postgres exited at start: ${err}`);
      const client = new pg.Client({
        host: '127.0.0.1',
        port,
        user: 'pigw',
        database: 'postgres',
        connectionTimeoutMillis: 1000,
      });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query('SELECT 1');
        await client.end();
        return;
      } catch {
        await client.end().catch(() => undefined);
        if (Date.now() > deadline) throw new Error(`postgres did not accept connections within 20 s: ${err}`);
        await sleep(50);
      }
    }
  };

  const stop = async (): Promise<void> => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    c.kill('SIGINT');
    await exited;
    child = null;
  };

  await start();
  const url = `postgres://pigw@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    runsAs: who ? who.name : userInfo().username,
    async createDatabase(name?: string) {
      const db = name ?? `t${process.pid}_${++seq}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${db}`);
      } finally {
        await client.end();
      }
      return `postgres://pigw@127.0.0.1:${port}/${db}`;
    },
    stop,
    start,
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
