// `pi-gateway serve` as a child process for a campaign: a copy of the fixture config (limits patched
// per target), a database prepared in this process (every resource credential sealed, one credited
// key), an upstream override, and optionally NODE_V8_COVERAGE so the line coverage the campaign
// reaches can be reported. "The process never exits" is the first oracle of every target over HTTP,
// so the child's exit is watched, its stderr kept (bounded) for the finding, and a graceful stop
// (SIGTERM, the drain) is told apart from a crash.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManualClock } from '../../src/clock.ts';
import type { CompiledConfig } from '../../src/config/compiled.ts';
import { formatIssue, loadConfig } from '../../src/config/load-config.ts';
import { decimalToNano } from '../../src/money.ts';
import { ADAPTERS } from '../../src/platforms/index.ts';
import { openStore } from '../../src/store/sqlite/store.ts';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const FIXTURE_CONFIG = join(REPO, 'test/fixtures/config/gateway');
/** What every campaign workspace is credited with: enough that no case is refused for money by accident. */
export const CAMPAIGN_CREDIT_USD = '1000000';

export interface CampaignConfig {
  dir: string;
  compiled: CompiledConfig;
}

/**
 * A copy of the gateway fixture under `dir`, with `limits` and `health` lines replaced or added
 * (values as YAML scalars). The fixture's other files are untouched.
 */
export function campaignConfig(
  dir: string,
  patch: { limits?: Record<string, number>; health?: Record<string, number> } = {},
): CampaignConfig {
  const out = join(dir, 'config');
  cpSync(FIXTURE_CONFIG, out, { recursive: true });
  const file = join(out, 'gateway.yaml');
  let text = readFileSync(file, 'utf8');
  for (const [section, values] of Object.entries(patch)) {
    for (const [k, v] of Object.entries(values ?? {})) {
      const line = new RegExp(`^(  ${k}:).*$`, 'm');
      if (line.test(text)) text = text.replace(line, `$1 ${v}`);
      else text = text.replace(new RegExp(`^${section}:\\n`, 'm'), `${section}:\n  ${k}: ${v}\n`);
    }
  }
  writeFileSync(file, text);
  const r = loadConfig(out, { adapters: ADAPTERS });
  if (!r.ok) throw new Error(`campaign config is invalid:\n${r.issues.map(formatIssue).join('\n')}`);
  return { dir: out, compiled: r.config };
}

export interface CampaignDb {
  file: string;
  masterKey: string;
  /** An API key of workspace `open`. */
  key: string;
}

/** A database file with every resource credential sealed and a credited key of workspace `open`. */
export function prepareCampaignDb(dir: string, config: CompiledConfig): CampaignDb {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'gateway.db');
  const masterKey = randomBytes(32).toString('base64');
  const store = openStore(file, { masterKey, clock: new ManualClock(Date.now()) });
  try {
    for (const r of config.resources)
      if (!store.secrets.names().has(r.credential)) store.secrets.set(r.credential, `upstream-secret-${r.credential}`);
    const key = store.apiKeys.create({ workspace: 'open', name: 'fuzz' }).key;
    store.wallets.credit('open', decimalToNano(CAMPAIGN_CREDIT_USD), 'fuzz credit');
    return { file, masterKey, key };
  } finally {
    store.close();
  }
}

/**
 * Credits workspace `open` back up to the campaign credit, through a second connection as
 * `pi-gateway wallet credit` would (the serving process picks credits up on its next request). An
 * over-charge the campaign found must not turn every later request into a 402. Returns the nano-USD
 * credited (0 when the balance is still above half the credit, or the gap is beyond any column).
 */
export function topUp(db: CampaignDb): bigint {
  const store = openStore(db.file, { masterKey: db.masterKey });
  try {
    const target = decimalToNano(CAMPAIGN_CREDIT_USD);
    const balance = store.wallets.show('open', Date.now()).balance;
    if (balance >= target / 2n) return 0n;
    const gap = target - balance;
    if (gap > 1_000_000_000_000_000_000n) return 0n;
    store.wallets.credit('open', gap, 'fuzz top-up');
    return gap;
  } finally {
    store.close();
  }
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface GatewayChild {
  url: string;
  port: number;
  pid: number;
  /** Resolves when the process ends, however it ends. */
  exited: Promise<ChildExit>;
  /** Null while it runs. */
  exit(): ChildExit | null;
  /** The last bytes it wrote to stderr (its log lines, a crash's stack). */
  stderrTail(): string;
  /** SIGTERM (the graceful drain), then SIGKILL after `graceMs`; says how it ended. */
  stop(graceMs?: number): Promise<ChildExit & { graceful: boolean }>;
  /** SIGKILL at once (a campaign that is being torn down). */
  kill(): Promise<void>;
}

const TAIL_BYTES = 64 * 1024;

export interface StartOptions {
  config: string;
  db: CampaignDb;
  upstream: string;
  /** NODE_V8_COVERAGE directory (each process and thread writes its own file there). */
  coverageDir?: string | null;
  startTimeoutMs?: number;
}

export async function startGatewayChild(opts: StartOptions): Promise<GatewayChild> {
  const args = [
    'src/cli/main.ts',
    'serve',
    '--config',
    opts.config,
    '--db',
    opts.db.file,
    '--port',
    '0',
    '--upstream-override',
    opts.upstream,
  ];
  const env: NodeJS.ProcessEnv = { ...process.env, PI_MASTER_KEY: opts.db.masterKey };
  delete env['NODE_V8_COVERAGE'];
  if (opts.coverageDir) {
    mkdirSync(opts.coverageDir, { recursive: true });
    env['NODE_V8_COVERAGE'] = opts.coverageDir;
  }
  const child: ChildProcess = spawn(process.execPath, args, { cwd: REPO, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  let pending = '';
  let listeningUrl: string | null = null;
  let onListening: (() => void) | null = null;
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (d: string) => {
    tail = (tail + d).slice(-TAIL_BYTES);
    if (listeningUrl !== null) return;
    pending += d;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const url = listeningUrlOf(line);
      if (url !== null) {
        listeningUrl = url;
        pending = '';
        onListening?.();
      }
    }
  });
  let ended: ChildExit | null = null;
  const exited = new Promise<ChildExit>((resolve) =>
    child.on('exit', (code, signal) => {
      ended = { code, signal };
      resolve(ended);
    }),
  );
  const started = await Promise.race([
    new Promise<boolean>((resolve) => (onListening = () => resolve(true))),
    exited.then(() => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), opts.startTimeoutMs ?? 60_000).unref()),
  ]);
  if (!started || listeningUrl === null) {
    child.kill('SIGKILL');
    await exited;
    throw new Error(`pi-gateway serve did not start:\n${tail}`);
  }
  const url: string = listeningUrl;
  const kill = async (): Promise<void> => {
    if (ended === null) child.kill('SIGKILL');
    await exited;
  };
  return {
    url,
    port: Number(new URL(url).port),
    pid: child.pid ?? 0,
    exited,
    exit: () => ended,
    stderrTail: () => tail,
    async stop(graceMs = 20_000) {
      if (ended !== null) return { ...ended, graceful: false };
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const e = await exited;
      clearTimeout(timer);
      return { ...e, graceful: e.code === 0 };
    },
    kill,
  };
}

function listeningUrlOf(line: string): string | null {
  if (!line.includes('"listening"')) return null;
  try {
    const v = JSON.parse(line) as { event?: unknown; url?: unknown };
    return v.event === 'listening' && typeof v.url === 'string' ? v.url : null;
  } catch {
    return null;
  }
}
