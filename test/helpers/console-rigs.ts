// The console rigs the console contract suites run over (test/helpers/console-api-contract.ts,
// find-requests-contract.ts): the embedded store's stack on a database file, and a fleet node on a
// fresh database of a private PostgreSQL.
import type { Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { runNode } from '../../src/runtime/node-runtime.ts';
import { ManualClock } from '../../src/clock.ts';
import { startSimulator } from '../../src/simulator/server.ts';
import { sqliteAdmin } from '../../src/store/sqlite/admin-store.ts';
import { sqliteConsole } from '../../src/store/sqlite/console-store.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { pgConsole } from '../../src/store/postgres/console-store.ts';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { masterKey, tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';
import type { ConsoleRig } from './console-api-contract.ts';
import { adminCaller, startConsoleStack, TOKEN } from './console.ts';
import { freePort } from './free-port.ts';
import { startPrivatePg, type PrivatePg } from './pg.ts';
import { DEFAULT_NOW, fixtureConfig } from './stack.ts';

/** `serve` on a database file (so a `pi-gateway` command reads the same store). */
export async function embeddedConsoleRig(t: Test): Promise<ConsoleRig & { file: string }> {
  const file = tempDbFile(t);
  const clock = new ManualClock(DEFAULT_NOW);
  const store = openStore(file, { clock, masterKey: masterKey(7), requestLog: { flushIntervalMs: 10 } });
  const s = await startConsoleStack(t, { store, clock });
  // Registered after the stack's own teardown, so the gateway is closed before its store.
  t.teardown(() => store.close());
  return {
    file,
    adminUrl: s.adminUrl,
    gatewayUrl: s.url,
    clock,
    sim: s.sim,
    config: s.config,
    call: s.call,
    store: sqliteAdmin(store),
    console: sqliteConsole(store),
    appendLog: async (rows) => {
      for (const row of rows) store.requestLog.append(row);
      store.requestLog.flush();
    },
    flushLog: async () => store.requestLog.flush(),
    cliEnv: { PI_DB: file },
    keyChangesAtOnce: true,
  };
}

export type FleetConsoleRig = ConsoleRig & { dbUrl: string; masterKey: string };

/** A private PostgreSQL for one test file, with the operator token and a master key in the
 *  environment a fleet node reads them from (restored after the file). */
export function fleetConsoles(t: Test): {
  server(): PrivatePg;
  masterKey: string;
  rig(t: Test): Promise<FleetConsoleRig>;
} {
  let pg: PrivatePg | null = null;
  const key = randomBytes(32).toString('base64');
  const env = { token: process.env.PI_ADMIN_TOKEN, master: process.env.PI_MASTER_KEY };
  t.before(async () => {
    pg = await startPrivatePg();
    process.env.PI_ADMIN_TOKEN = TOKEN;
    process.env.PI_MASTER_KEY = key;
  });
  t.teardown(async () => {
    await pg?.destroy();
    if (env.token === undefined) delete process.env.PI_ADMIN_TOKEN;
    else process.env.PI_ADMIN_TOKEN = env.token;
    if (env.master === undefined) delete process.env.PI_MASTER_KEY;
    else process.env.PI_MASTER_KEY = env.master;
  });
  const server = () => {
    if (!pg) throw new Error('the private PostgreSQL is not started yet');
    return pg;
  };
  return { server, masterKey: key, rig: (t) => fleetConsoleRig(t, server(), key) };
}

/** A fleet node on a fresh database of `pg`, its upstream credentials sealed under `key`. */
async function fleetConsoleRig(t: Test, pg: PrivatePg, key: string): Promise<FleetConsoleRig> {
  const sim = await startSimulator({});
  t.teardown(() => sim.close());
  const dbUrl = await pg.createDatabase();
  const m = await openPgStore(dbUrl, { checkSchema: false, masterKey: key });
  await m.migrate();
  const config = fixtureConfig('gateway');
  for (const r of config.resources)
    if (!r.credential.endsWith('-unsealed-key') && !(await m.secrets.list()).some((s) => s.name === r.credential))
      await m.secrets.set(r.credential, `upstream-secret-${r.credential}`);
  await m.close();
  const clock = new ManualClock(DEFAULT_NOW);
  const adminPort = await freePort();
  const node = await runNode({
    config,
    db: dbUrl,
    redis: null,
    host: '127.0.0.1',
    port: 0,
    upstreamOverride: sim.url,
    clock,
    // Per-request holds: the suite compares answers with the embedded store's, whose ledger has a
    // hold row per request (under escrow a request admitted from a slice has its settle row only).
    walletAdmission: 'per-request',
    observability: {
      admin: { host: '127.0.0.1', port: adminPort },
      // On for the wallet gauges, read from PostgreSQL at each scrape.
      metrics: true,
      accessLog: false,
      trustedProxies: [],
      tracesUrl: null,
      serviceName: 'pi-gateway-test',
    },
  });
  t.teardown(async () => {
    await node.gateway.close();
    await node.close();
  });
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  return {
    dbUrl,
    masterKey: key,
    adminUrl,
    gatewayUrl: node.gateway.url,
    clock,
    sim,
    config,
    call: adminCaller(adminUrl),
    store: node.store,
    console: pgConsole(node.store),
    appendLog: async (rows) => {
      for (const row of rows) node.store.requestLog.append(row);
      await node.store.requestLog.flush();
    },
    flushLog: () => node.store.requestLog.flush(),
    cliEnv: { PI_DB: dbUrl },
    keyChangesAtOnce: false,
  };
}
