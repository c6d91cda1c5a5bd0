// `pi-gateway serve` as a child process, for what only a real process shows: signals (SIGTERM drain,
// a second signal, SIGHUP reload), the owner lock dying with its process, two servers on one database
// or one port. The database is prepared in this process (sealed credentials, a key, a credit), the
// upstream is the in-process simulator, and the child's JSON log lines are collected from stderr.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Test } from 'tap';
import { ManualClock } from '../../src/clock.ts';
import { decimalToNano } from '../../src/money.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { REPO, tempDir, waitFor } from './admission.ts';
import { fixtureConfig } from './stack.ts';

export interface PreparedDb {
  file: string;
  masterKey: string;
  /** An API key of workspace `open`, credited with $100. */
  key: string;
}

/** A database file with every resource credential of fixture `config` sealed, a key and a credit (and
 *  a credited key for each of `extraKeys`' workspaces, which need not be in the config). */
export function prepareDb(
  t: Test,
  config = 'gateway',
  extraKeys: string[] = [],
): PreparedDb & { extra: Record<string, string> } {
  const file = join(tempDir(t, 'pi-serve-'), 'gateway.db');
  const masterKey = randomBytes(32).toString('base64');
  // Created "now": the child runs on the real clock.
  const store = openStore(file, { masterKey, clock: new ManualClock(Date.now()) });
  try {
    for (const r of fixtureConfig(config).resources)
      if (!store.secrets.names().has(r.credential)) store.secrets.set(r.credential, `upstream-secret-${r.credential}`);
    const key = store.apiKeys.create({ workspace: 'open', name: 'test' }).key;
    store.wallets.credit('open', decimalToNano('100'), 'test credit');
    const extra: Record<string, string> = {};
    for (const ws of extraKeys) {
      extra[ws] = store.apiKeys.create({ workspace: ws, name: 'test' }).key;
      store.wallets.credit(ws, decimalToNano('100'), 'test credit');
    }
    return { file, masterKey, key, extra };
  } finally {
    store.close();
  }
}

export interface LogEvent {
  event: string;
  [k: string]: unknown;
}

export interface ServeProcess {
  child: ChildProcess;
  /** http://127.0.0.1:PORT once it listens. */
  url: string;
  port: number;
  /** Every JSON log line so far. */
  events: LogEvent[];
  /** Everything it wrote to stderr. */
  stderr(): string;
  /** Resolves with its exit code (or the signal that killed it). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>;
  /** Waits for a log event (and `pred` on it). */
  waitForEvent(event: string, pred?: (e: LogEvent) => boolean, ms?: number): Promise<LogEvent | undefined>;
}

export interface ServeOptions {
  /** Config directory (absolute, or relative to the repository). */
  config: string;
  db: PreparedDb;
  upstream?: string;
  port?: number;
  /** Resolve at once instead of waiting for `listening` (for servers expected to refuse to start). */
  noWait?: boolean;
  /** More environment for the child (e.g. PI_WRITER_QUEUE). */
  env?: Record<string, string>;
  /** More arguments after the others (e.g. --workers 2). */
  args?: string[];
  /** Called the moment the `listening` line is read, before anything else runs (to signal the process
   *  as fast as a supervisor reading its output could). */
  onListening?: (child: ChildProcess) => void;
}

/** Starts `pi-gateway serve`; killed (SIGKILL) at teardown if still running. */
export async function startServe(t: Test, opts: ServeOptions): Promise<ServeProcess> {
  const args = [
    'src/cli/main.ts',
    'serve',
    '--config',
    opts.config,
    '--db',
    opts.db.file,
    '--port',
    String(opts.port ?? 0),
  ];
  if (opts.upstream) args.push('--upstream-override', opts.upstream);
  if (opts.args) args.push(...opts.args);
  const child = spawn(process.execPath, args, {
    cwd: REPO,
    env: { ...process.env, ...opts.env, PI_MASTER_KEY: opts.db.masterKey },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  let pending = '';
  const events: LogEvent[] = [];
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
    pending += d.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      try {
        const v = JSON.parse(line) as unknown;
        if (typeof v === 'object' && v !== null && 'event' in v) {
          events.push(v as LogEvent);
          if ((v as LogEvent).event === 'listening') opts.onListening?.(child);
        }
      } catch {
        // A plain line (a startup refusal): kept in stderr().
      }
    }
  });
  child.stdout?.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>((resolve) => {
    let atMs = 0;
    child.once('exit', () => (atMs = performance.now()));
    // Resolved at 'close', not 'exit': by then every line the process wrote is in `events` (at 'exit'
    // its pipes may still hold the last ones, `drained` among them). `atMs` is still the exit's time.
    child.once('close', (code, signal) => resolve({ code, signal, atMs: atMs || performance.now() }));
  });
  let running = true;
  void exited.then(() => (running = false));
  t.teardown(async () => {
    if (running) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  const proc: ServeProcess = {
    child,
    url: '',
    port: 0,
    events,
    stderr: () => err,
    exited,
    async waitForEvent(event, pred = () => true, ms = 20_000) {
      let found: LogEvent | undefined;
      await waitFor(() => (found = events.find((e) => e.event === event && pred(e))) !== undefined || !running, ms);
      return found ?? events.find((e) => e.event === event && pred(e));
    },
  };
  if (opts.noWait) return proc;
  // A bound for a loaded machine (several serve processes starting at once), not a time rule: a
  // process that exits early ends the wait at once.
  const listening = await proc.waitForEvent('listening', () => true, 60_000);
  if (!listening) throw new Error(`serve did not start:\n${err}`);
  proc.url = String(listening['url']);
  proc.port = Number(new URL(proc.url).port);
  return proc;
}
