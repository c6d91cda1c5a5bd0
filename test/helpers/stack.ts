// Starts a real stack for HTTP tests: the simulator, an in-memory store with sealed credentials, and
// the gateway on 127.0.0.1 port 0 with every upstream redirected to the simulator. Everything is torn
// down with the test. The clock is a ManualClock pinned to 2026-01-15T12:00:00Z unless given.
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { ManualClock } from '../../src/clock.ts';
import type { CompiledConfig, GatewaySettings } from '../../src/config/compiled.ts';
import { formatIssue, loadConfig } from '../../src/config/load-config.ts';
import { startGateway, type Gateway } from '../../src/gateway.ts';
import { decimalToNano } from '../../src/money.ts';
import { ADAPTERS } from '../../src/platforms/index.ts';
import { Lifecycle } from '../../src/observe/lifecycle.ts';
import { type AdminListener, startAdminListener } from '../../src/server/admin-app.ts';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/server.ts';
import { openStore, type Store } from '../../src/store/sqlite/store.ts';
import { startTelemetry, type TelemetryOptions } from '../../src/telemetry/telemetry.ts';
import { seededRandom } from './prng.ts';

export const FIXTURES = fileURLToPath(new URL('../fixtures/config/', import.meta.url));
export const DEFAULT_NOW = '2026-01-15T12:00:00Z';

const configCache = new Map<string, CompiledConfig>();

/** A compiled fixture config (test/fixtures/config/<name>), or the bundled `config/` for 'bundled'. */
export function fixtureConfig(name = 'gateway'): CompiledConfig {
  const cached = configCache.get(name);
  if (cached) return cached;
  const dir = name === 'bundled' ? fileURLToPath(new URL('../../config/', import.meta.url)) : join(FIXTURES, name);
  const r = loadConfig(dir, { adapters: ADAPTERS });
  if (!r.ok) throw new Error(`fixture config ${name} is invalid:\n${r.issues.map(formatIssue).join('\n')}`);
  configCache.set(name, r.config);
  return r.config;
}

export interface StackOptions {
  /** Fixture name under test/fixtures/config (default 'gateway'), or 'bundled'. */
  config?: string;
  clock?: ManualClock;
  random?: () => number;
  limits?: Partial<GatewaySettings['limits']>;
  /** Which credentials get sealed: default every resource's except names ending in "-unsealed-key". */
  seal?: (credential: string) => boolean;
  /** Sealed values by credential name (AWS keys, a service account); the rest get `upstream-secret-<name>`. */
  secrets?: Record<string, string>;
  simulator?: SimulatorOptions;
  /** Use this store instead of a fresh in-memory one. */
  store?: Store;
  /** Receives the gateway's log events (default: dropped). */
  log?: (event: string, fields?: Record<string, unknown>) => void;
  /** Metrics, traces and the access log to start with the gateway (none by default). */
  telemetry?: TelemetryOptions;
  /** Start an admin listener on 127.0.0.1 port 0 (Stack.admin). */
  admin?: boolean;
  /** The admin listener's operator token (PI_ADMIN_TOKEN): turns on the console and /admin/ endpoints. */
  adminToken?: string;
}

export interface Stack {
  gw: Gateway;
  sim: Simulator;
  store: Store;
  clock: ManualClock;
  config: CompiledConfig;
  /** http://127.0.0.1:PORT (the spec's {base_url}). */
  url: string;
  /** {base_url}/v1 (what the OpenAI SDK takes). */
  v1: string;
  /** The admin listener, when asked for (StackOptions.admin). */
  admin: AdminListener | null;
  /** Creates an API key in the workspace and returns the plaintext. */
  key(workspace?: string, opts?: { rpm?: number; expiresAt?: number; name?: string }): string;
  /** Credits the workspace wallet (decimal USD string). */
  credit(workspace: string, usd: string): void;
  /** POST JSON with a bearer key. */
  post(path: string, body: unknown, opts?: { key?: string; headers?: Record<string, string> }): Promise<Response>;
  close(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function startStack(t: Teardown, opts: StackOptions = {}): Promise<Stack> {
  const config = fixtureConfig(opts.config ?? 'gateway');
  const clock = opts.clock ?? new ManualClock(DEFAULT_NOW);
  const sim = await startSimulator(opts.simulator ?? {});
  const masterKey = randomBytes(32).toString('base64');
  const store = opts.store ?? openStore(':memory:', { clock, masterKey, requestLog: { flushIntervalMs: 10 } });
  const seal = opts.seal ?? ((name: string) => !name.endsWith('-unsealed-key'));
  for (const r of config.resources)
    if (seal(r.credential) && !store.secrets.names().has(r.credential))
      store.secrets.set(r.credential, opts.secrets?.[r.credential] ?? `upstream-secret-${r.credential}`);
  let gw: Gateway;
  const telemetry = opts.telemetry ? await startTelemetry(opts.telemetry) : null;
  const admin = opts.admin
    ? await startAdminListener({
        host: '127.0.0.1',
        port: 0,
        lifecycle: new Lifecycle(clock),
        metrics: telemetry?.metrics ?? null,
        token: opts.adminToken ?? null,
        ...(opts.log ? { log: opts.log } : {}),
      })
    : null;
  try {
    gw = await startGateway({
      config,
      store,
      clock,
      random: opts.random ?? seededRandom(7),
      upstreamOverride: sim.url,
      ...(opts.limits ? { limits: opts.limits } : {}),
      ...(telemetry ? { telemetry } : {}),
      ...(admin ? { admin } : {}),
      log: opts.log ?? (() => undefined),
    });
  } catch (err) {
    admin?.close();
    await telemetry?.close();
    await sim.close();
    throw err;
  }
  let closed = false;
  const stack: Stack = {
    gw,
    sim,
    store,
    clock,
    config,
    url: gw.url,
    v1: `${gw.url}/v1`,
    admin,
    key(workspace = 'open', o = {}) {
      return store.apiKeys.create({ workspace, ...o }).key;
    },
    credit(workspace, usd) {
      store.wallets.credit(workspace, decimalToNano(usd), 'test credit');
    },
    post(path, body, o = {}) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        ...(o.key ? { authorization: `Bearer ${o.key}` } : {}),
        ...o.headers,
      };
      return fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers,
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      await gw.close();
      await sim.close();
      if (!opts.store) store.close();
    },
  };
  t.teardown(() => stack.close());
  return stack;
}

/** Reads an SSE body into its events (as raw text blocks). */
export async function sseEvents(res: Response): Promise<string[]> {
  const text = await res.text();
  return text.split(/\n\n/).filter((e) => e.trim() !== '');
}
