// The admin JSON endpoints on a fleet node: `serve --db postgres://…` (src/runtime/node-runtime.ts, run
// in process) on a private PostgreSQL (test/helpers/pg.ts) with the simulator upstream and the admin
// listener with an operator token. The console API contract (test/helpers/console-api-contract.ts,
// run on the embedded store by admin-api.test.ts) on a fresh node and database per check; then what
// only a fleet node can show: the same traffic answered byte for byte as on the embedded store, the
// wallet gauges read from PostgreSQL, PostgreSQL down and back, and the listener's defences with
// operators and the audit trail in PostgreSQL.
import t, { type Test } from 'tap';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { hashPassword } from '../../src/admin/passwords.ts';
import { cli } from '../helpers/admission.ts';
import { consoleApiContract, rigTraffic } from '../helpers/console-api-contract.ts';
import { type FleetConsoleRig, fleetConsoles } from '../helpers/console-rigs.ts';
import { type AdminBody, knownTraffic, startConsoleStack, TOKEN } from '../helpers/console.ts';
import {
  type AccountsConsole,
  checkNoCors,
  checkOperatorsAndAudit,
  checkSessionBinding,
  checkSignInLimits,
} from '../helpers/console-security.ts';
import { sampleValue, scrape } from '../helpers/metrics.ts';
import { seriesRows, SERIES_QUERY } from '../helpers/spend-rows.ts';

// The whole console suite on fresh PostgreSQL databases: half a minute alone, more on a loaded
// runner; the default 120 s would cut it.
t.setTimeout(300_000);

const consoles = fleetConsoles(t);
const fleetRig = consoles.rig;

t.test('the console API on PostgreSQL (a fleet node)', async (t) => {
  consoleApiContract(t, fleetRig);
});

// Comparisons between the two stores: they mean something only where the rig is not the embedded store.
t.test(
  'the same traffic on the embedded store answers the same spend, CSV, wallets, warnings and series',
  async (t) => {
    const fleet = await fleetRig(t);
    await rigTraffic(fleet);
    const s = await startConsoleStack(t);
    await knownTraffic(s);
    for (const path of ['/admin/spend', '/admin/spend.csv', '/admin/wallets', '/admin/warnings']) {
      const [embedded, node] = [await s.call(path), await fleet.call(path)];
      t.equal(node.status, 200, path);
      t.equal(node.text, embedded.text, `${path}: byte for byte`);
    }
    await fleet.appendLog(seriesRows());
    for (const row of seriesRows()) s.store.requestLog.append(row);
    s.store.requestLog.flush();
    for (const path of [
      SERIES_QUERY,
      `${SERIES_QUERY}&by=model`,
      `${SERIES_QUERY}&by=provider`,
      `${SERIES_QUERY}&by=workspace`,
      '/admin/spend/series?workspace=slow&interval=day&from=2026-01-14&to=2026-01-15',
    ]) {
      const [embedded, node] = [await s.call(path), await fleet.call(path)];
      t.equal(node.status, 200, path);
      t.equal(node.text, embedded.text, `${path}: byte for byte`);
    }
  },
);

// The embedded store's gauges are checked in test/telemetry/wallet-gauges.test.ts.
t.test('the wallet gauges read PostgreSQL', async (t) => {
  const fleet = await fleetRig(t);
  await rigTraffic(fleet);
  const cheap = (await fleet.call('/admin/wallets')).body.wallets.find((w: AdminBody) => w.workspace === 'cheap');
  const m = await scrape(fleet.adminUrl);
  t.equal(
    sampleValue(m, 'pi_gateway_wallet_available_usd', { workspace: 'cheap' }),
    Number(cheap.available_usd),
    'the wallet gauge reads PostgreSQL',
  );
  t.equal(sampleValue(m, 'pi_gateway_wallet_below_threshold', { workspace: 'cheap' }), 1, 'cheap: below $25');
  t.equal(sampleValue(m, 'pi_gateway_wallet_below_threshold', { workspace: 'open' }), 0, 'open: above $50');
});

t.test('PostgreSQL down: the console answers 503 store_unavailable, and recovers by itself', async (t) => {
  const fleet = await fleetRig(t);
  await rigTraffic(fleet);
  await consoles.server().stop();
  try {
    const r = await fleet.call('/admin/requests');
    t.equal(r.status, 503);
    t.equal(r.body?.error?.code, 'store_unavailable');
    t.notOk(r.text.includes(TOKEN));
    const signIn = await fetch(`${fleet.adminUrl}/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ name: 'ana', token: 'a-password-while-down' }).toString(),
    });
    t.equal(signIn.status, 503, 'an account cannot be checked: 503, not a wrong-password 401');
    t.match(await signIn.text(), /database does not answer/);
  } finally {
    await consoles.server().start();
  }
  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    status = (await fleet.call('/admin/requests')).status;
    if (status !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(status, 200, 'answers again once PostgreSQL is back');
});

/** The node's console as the shared checks see it; its log lines are the JSON lines on stderr. */
function fleetConsole(t: Test, node: FleetConsoleRig): AccountsConsole {
  const logs: { event: string; fields: Record<string, unknown> }[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    for (const line of String(chunk).split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const { event, ...fields } = JSON.parse(line) as { event: string };
        logs.push({ event, fields });
      } catch {}
    }
    return write(chunk, ...rest);
  }) as typeof process.stderr.write;
  t.teardown(() => {
    process.stderr.write = write;
  });
  const withStore = async (fn: (m: Awaited<ReturnType<typeof openPgStore>>) => Promise<unknown>) => {
    const m = await openPgStore(node.dbUrl);
    try {
      await fn(m);
    } finally {
      await m.close();
    }
  };
  return {
    adminUrl: node.adminUrl,
    token: TOKEN,
    advance: (ms) => node.clock.advance(ms),
    logs: () => logs,
    balance: async (ws) => (await node.call(`/admin/wallets/${ws}`)).body.balance_usd,
    addOperator: (name, role, password) =>
      withStore(async (m) => m.operators.add(name, role, await hashPassword(password))),
    removeOperator: (name) => withStore((m) => m.operators.remove(name)),
  };
}

t.test('a fleet node: no CORS on the admin listener', async (t) => {
  const fleet = await fleetRig(t);
  await checkNoCors(t, { adminUrl: fleet.adminUrl, token: TOKEN });
});

t.test('a fleet node: wrong tokens limited with back-off and logged', async (t) => {
  const fleet = await fleetRig(t);
  await rigTraffic(fleet);
  await checkSignInLimits(t, fleetConsole(t, fleet));
});

t.test('a fleet node: sessions bound to the page secret, idle timeout, protected sign-out', async (t) => {
  const fleet = await fleetRig(t);
  await rigTraffic(fleet);
  await checkSessionBinding(t, fleetConsole(t, fleet));
});

t.test('a fleet node: operators, the viewer role and the audit trail in PostgreSQL', async (t) => {
  const fleet = await fleetRig(t);
  await rigTraffic(fleet);
  await checkOperatorsAndAudit(t, fleetConsole(t, fleet));
  const m = await openPgStore(fleet.dbUrl);
  try {
    await t.rejects(m.pool.query('UPDATE audit_log SET actor = $1', ['x']), /append-only/, 'the trail refuses UPDATE');
    await t.rejects(m.pool.query('DELETE FROM audit_log'), /append-only/, 'and DELETE');
  } finally {
    await m.close();
  }
  const env = { PI_DB: fleet.dbUrl, PI_MASTER_KEY: consoles.masterKey };
  const added = await cli(['operator', 'add', 'cleo', '--role', 'viewer'], env, 'cleo-password-on-pg-5a\n');
  t.equal(added.code, 0, added.stderr);
  const list = JSON.parse((await cli(['operator', 'list', '--json'], env)).stdout) as { name: string }[];
  t.same(
    list.map((o) => o.name),
    ['ana', 'cleo'],
    'operator list on PostgreSQL (vic was removed)',
  );
  const audit = await cli(['audit', '--json', '--limit', '3'], env);
  t.equal(audit.code, 0, audit.stderr);
  t.match(JSON.parse(audit.stdout), [
    { actor: /^cli/, action: 'operator.add', target: 'cleo' },
    { actor: 'token', action: 'key.revoke' },
    { actor: 'token', action: 'key.create' },
  ]);
});
