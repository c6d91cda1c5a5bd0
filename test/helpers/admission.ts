// Helpers for the authentication and admission suites over HTTP (test/spec/authentication,
// test/spec/admission): the spec's gateway-error checks, a wallet spy, file-backed stacks whose ledger
// can be read from a second connection, a patched copy of the gateway fixture, request-log polling,
// the CLI as a separate process, and a raw POST that sends header lines exactly as given.
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { ManualClock } from '../../src/clock.ts';
import type { GatewaySettings } from '../../src/config/compiled.ts';
import { openDatabase } from '../../src/store/sqlite/db.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import type { LedgerDetails, RequestLogEntry } from '../../src/store/types.ts';
import { DEFAULT_NOW, FIXTURES, startStack, type Stack } from './stack.ts';

export const USER = [{ role: 'user', content: 'hi' }];

/** Headers the spec lets only a provider answer carry (Response headers rule 1). */
export const PROVIDER_IDENTITY_HEADERS = [
  'x-pi-provider',
  'x-pi-model',
  'x-pi-upstream-model',
  'x-pi-upstream-request-id',
];

/** Headers the simulator sends as a provider would; a gateway error must carry none of them. */
const SIMULATED_PROVIDER_HEADERS = /^(x-request-id|request-id|openai-.*|anthropic-.*|x-ratelimit-.*)$/;

const SECURITY_HEADERS: [string, string][] = [
  ['x-content-type-options', 'nosniff'],
  ['x-frame-options', 'DENY'],
  ['referrer-policy', 'strict-origin-when-cross-origin'],
  ['content-security-policy', "frame-ancestors 'none'"],
  ['permissions-policy', 'camera=(), microphone=(), geolocation=()'],
  ['strict-transport-security', 'max-age=31536000; includeSubDomains'],
];

const EXPOSED = [
  'x-pi-trace-id',
  'x-pi-provider',
  'x-pi-model',
  'x-pi-upstream-model',
  'x-pi-upstream-request-id',
  'retry-after',
  'content-encoding',
];

export interface ErrorBody {
  error: { message: string; type: string; code: string };
}

/**
 * Asserts a gateway-raised error: status, the spec's error object (message, type, code and nothing
 * else), X-Pi-Trace-Id, CORS and security headers, and none of the provider headers. Consumes the body.
 */
export async function expectGatewayError(
  t: Test,
  res: Response,
  status: number,
  code: string,
  label = code,
): Promise<ErrorBody> {
  const text = await res.text();
  t.equal(res.status, status, `${label}: status ${status}`);
  let body: ErrorBody | null = null;
  try {
    body = JSON.parse(text) as ErrorBody;
  } catch {
    t.fail(`${label}: the body is JSON`, { text });
  }
  t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${label}: JSON content type`);
  // Only no_eligible_provider adds `metadata` (the routing funnel), per the spec's error object.
  const keys = code === 'no_eligible_provider' ? ['code', 'message', 'metadata', 'type'] : ['code', 'message', 'type'];
  t.same(Object.keys(body?.error ?? {}).sort(), keys, `${label}: error object has ${keys.join(', ')}`);
  t.equal(body?.error.code, code, `${label}: code ${code}`);
  t.equal(typeof body?.error.message, 'string', `${label}: message is a string`);
  t.ok((body?.error.message ?? '').length > 0, `${label}: message is not empty`);
  t.equal(typeof body?.error.type, 'string', `${label}: type is a string`);
  expectGatewayHeaders(t, res, label);
  return body as ErrorBody;
}

/** X-Pi-Trace-Id, CORS and security headers present; provider headers absent. */
export function expectGatewayHeaders(t: Test, res: Response, label: string): void {
  t.match(res.headers.get('x-pi-trace-id') ?? '', /^[0-9a-f-]{36}$/, `${label}: X-Pi-Trace-Id`);
  t.equal(res.headers.get('access-control-allow-origin'), '*', `${label}: CORS allow-origin`);
  const exposed = (res.headers.get('access-control-expose-headers') ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase());
  t.same(
    EXPOSED.filter((h) => !exposed.includes(h)),
    [],
    `${label}: CORS expose-headers lists every X-Pi-* plus Retry-After and Content-Encoding`,
  );
  for (const [name, value] of SECURITY_HEADERS) t.equal(res.headers.get(name), value, `${label}: ${name}`);
  const names = [...res.headers.keys()].map((k) => k.toLowerCase());
  t.same(
    names.filter((n) => PROVIDER_IDENTITY_HEADERS.includes(n) || SIMULATED_PROVIDER_HEADERS.test(n)),
    [],
    `${label}: no provider headers`,
  );
}

export interface HoldCall {
  workspace: string;
  amount: bigint;
  ok: boolean;
}

export interface WalletSpy {
  holds: Map<string, HoldCall>;
  settles: Map<string, { cost: bigint; details: LedgerDetails; settled: boolean }[]>;
  releases: Set<string>;
  /** Lowest `balance` and `available` seen right after any hold or settle (never below zero). */
  lowest: { balance: bigint; available: bigint };
  /** Every call in order: `hold-ok`, `hold-refused`, `settle`, `release`. */
  events: string[];
}

/**
 * Records every hold, settle and release the gateway asks of its wallet book (admission in memory,
 * group-committed to the ledger), with their answers. `lowest` watches the book's own figures, the
 * ones admission decides on.
 */
export function spyWallet(stack: Stack, workspaces: string[] = ['open']): WalletSpy {
  const w = stack.gw.ctx.wallets;
  const spy: WalletSpy = {
    holds: new Map(),
    settles: new Map(),
    releases: new Set(),
    lowest: { balance: 1n << 62n, available: 1n << 62n },
    events: [],
  };
  const hold = w.hold.bind(w);
  const settle = w.settle.bind(w);
  const release = w.release.bind(w);
  const watchLow = () => {
    for (const ws of workspaces) {
      const v = w.view(ws);
      if (v.balance < spy.lowest.balance) spy.lowest.balance = v.balance;
      if (v.available < spy.lowest.available) spy.lowest.available = v.available;
    }
  };
  w.hold = (ws, traceId, amount) => {
    const r = hold(ws, traceId, amount);
    spy.holds.set(traceId, { workspace: ws, amount, ok: r.ok });
    spy.events.push(r.ok ? 'hold-ok' : 'hold-refused');
    watchLow();
    return r;
  };
  w.settle = (traceId, cost, details) => {
    const list = spy.settles.get(traceId) ?? [];
    const entry = { cost, details, settled: false };
    list.push(entry);
    spy.settles.set(traceId, list);
    spy.events.push('settle');
    const r = settle(traceId, cost, details);
    watchLow();
    return r.then((settled) => {
      entry.settled = settled;
      return settled;
    });
  };
  w.release = (traceId) => {
    spy.releases.add(traceId);
    spy.events.push('release');
    release(traceId);
  };
  return spy;
}

/** Polls `cond` every few ms until it holds or `ms` pass. */
export async function waitFor(cond: () => boolean, ms = 5000): Promise<boolean> {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 5));
  }
  return cond();
}

/** The request-log row of a trace, once the handler wrote it (it may finish after the client). */
export async function logRow(stack: Stack, traceId: string | null, ms = 5000): Promise<RequestLogEntry | undefined> {
  let row: RequestLogEntry | undefined;
  await waitFor(() => {
    stack.store.requestLog.flush();
    row = stack.store.requestLog.query({ limit: 10_000 }).find((r) => r.trace_id === traceId);
    return row !== undefined;
  }, ms);
  return row;
}

/** A temporary directory removed after the test. */
export function tempDir(t: Test, prefix = 'pi-admission-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface FileStack extends Stack {
  file: string;
  masterKey: string;
}

/**
 * A stack on a SQLite file (not :memory:), so a second connection (the CLI, `ledgerRows`) can read
 * and write the same database while the gateway runs.
 */
export async function fileStack(
  t: Test,
  opts: { clock?: ManualClock; limits?: Partial<GatewaySettings['limits']>; config?: string } = {},
): Promise<FileStack> {
  const dir = tempDir(t);
  const file = join(dir, 'gateway.db');
  const masterKey = randomBytes(32).toString('base64');
  const clock = opts.clock ?? new ManualClock(DEFAULT_NOW);
  const store = openStore(file, { clock, masterKey, requestLog: { flushIntervalMs: 10 } });
  let stack: Stack;
  try {
    stack = await startStack(t, {
      store,
      clock,
      ...(opts.limits ? { limits: opts.limits } : {}),
      ...(opts.config ? { config: opts.config } : {}),
    });
  } catch (err) {
    store.close();
    throw err;
  }
  // Registered after startStack's own teardown, so the gateway is closed before its store.
  t.teardown(() => store.close());
  return Object.assign(stack, { file, masterKey });
}

export interface LedgerRow {
  id: bigint;
  workspace: string;
  kind: 'credit' | 'hold' | 'settle' | 'release';
  amount_nano: bigint;
  trace_id: string;
  details: string | null;
}

/** Every ledger row of a database file, read through a second, read-only connection. */
export function ledgerRows(file: string): LedgerRow[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return db
      .prepare('SELECT id, workspace, kind, amount_nano, trace_id, details FROM ledger ORDER BY id')
      .safeIntegers(true)
      .all() as LedgerRow[];
  } finally {
    db.close();
  }
}

/** Open holds of a database file, by trace. */
export function openHolds(file: string): Map<string, bigint> {
  const db = openDatabase(file, { readonly: true });
  try {
    const rows = db
      .prepare("SELECT trace_id, amount_nano FROM holds WHERE state = 'open'")
      .safeIntegers(true)
      .all() as { trace_id: string; amount_nano: bigint }[];
    return new Map(rows.map((r) => [r.trace_id, r.amount_nano]));
  } finally {
    db.close();
  }
}

/**
 * Copies a fixture config to a temp directory, applies text replacements to some of its files, and
 * returns the name `startStack({config})` takes (a path relative to the fixtures folder).
 */
export function patchedFixture(t: Test, base: string, edits: Record<string, [string, string][]>): string {
  const dir = join(tempDir(t, 'pi-fixture-'), base);
  cpSync(join(FIXTURES, base), dir, { recursive: true });
  for (const [file, pairs] of Object.entries(edits)) {
    const path = join(dir, file);
    let text = readFileSync(path, 'utf8');
    for (const [from, to] of pairs) {
      if (!text.includes(from)) throw new Error(`patchedFixture: "${from}" not found in ${file}`);
      text = text.replace(from, to);
    }
    writeFileSync(path, text);
  }
  return relative(FIXTURES, dir);
}

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const GATEWAY_CONFIG = 'test/fixtures/config/gateway';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `pi-gateway <args>` as a separate process (`node src/cli/main.ts`, Node.js strips the types), from the repo root. */
export function cli(args: string[], env: Record<string, string> = {}, input = ''): Promise<CliRun> {
  const child = spawn(process.execPath, ['src/cli/main.ts', ...args], {
    cwd: REPO,
    env: { ...process.env, PI_CONFIG: GATEWAY_CONFIG, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A POST with exactly these header lines, in order (fetch merges duplicates and refuses non-Latin-1
 * values). Header values are sent as their UTF-8 bytes, as a browser or SDK would send them.
 */
export function rawPost(
  url: string,
  path: string,
  headers: [string, string][],
  body: string,
  query = '',
): Promise<RawAnswer> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    // A raw header array gets no defaults from node:http, so Host (required by HTTP/1.1) is added here.
    const flat: string[] = [
      'Host',
      u.host,
      'Content-Type',
      'application/json',
      'Content-Length',
      String(Buffer.byteLength(body)),
    ];
    for (const [k, v] of headers) flat.push(k, Buffer.from(v, 'utf8').toString('latin1'));
    const req = httpRequest(
      { host: u.hostname, port: u.port, method: 'POST', path: path + query, headers: flat, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    // A Buffer, not a string: node:http writes a string body in one write with the header block,
    // encoding both as UTF-8, which would encode the Latin-1 header strings above a second time.
    req.end(Buffer.from(body, 'utf8'));
  });
}
