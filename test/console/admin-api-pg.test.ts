// The admin JSON endpoints on a fleet node: `serve --db postgres://…` (src/cli/node-runtime.ts, run
// in process) on a private PostgreSQL (test/helpers/pg.ts) with the simulator upstream and the admin
// listener with an operator token. The same known traffic as test/console/admin-api.test.ts gives the
// same answers: the request log with its filters, one request in detail, spend equal to the request
// log and the ledger (and byte for byte what an embedded-store gateway answers for the same traffic),
// wallets, a credit with the operator's note in the ledger rows, keys created, expired and revoked
// (the node's key cache follows within its poll), health from the request log.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { ManualClock } from '../../src/clock.ts';
import { runNode, type RunningNode } from '../../src/cli/node-runtime.ts';
import { decimalToNano } from '../../src/money.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { hashPassword } from '../../src/admin/passwords.ts';
import { cli } from '../helpers/admission.ts';
import { type AdminBody, knownTraffic, PROMPT_MARK, startConsoleStack, TOKEN } from '../helpers/console.ts';
import {
  type AccountsConsole,
  checkNoCors,
  checkOperatorsAndAudit,
  checkSessionBinding,
  checkSignInLimits,
} from '../helpers/console-security.ts';
import { freePort } from '../helpers/free-port.ts';
import { sampleValue, scrape } from '../helpers/metrics.ts';
import { startPrivatePg, type PrivatePg } from '../helpers/pg.ts';
import { seriesRows, SERIES_QUERY, SERIES_TOTAL } from '../helpers/spend-rows.ts';
import { DEFAULT_NOW, fixtureConfig } from '../helpers/stack.ts';
import { cliInProcess } from '../cli/fixtures/run-cli.ts';

let pg: PrivatePg;
let sim: Simulator;
let node: RunningNode;
let adminUrl: string;
let dbUrl: string;
const clock = new ManualClock(DEFAULT_NOW);
const keys: Record<string, string> = {};
const traces: Record<string, string> = {};
const env = { token: process.env.PI_ADMIN_TOKEN, master: process.env.PI_MASTER_KEY };

t.before(async () => {
  [pg, sim] = await Promise.all([startPrivatePg(), startSimulator({})]);
  const url = await pg.createDatabase();
  dbUrl = url;
  const masterKey = randomBytes(32).toString('base64');
  const m = await openPgStore(url, { checkSchema: false, masterKey });
  await m.migrate();
  const config = fixtureConfig('gateway');
  for (const r of config.resources)
    if (!r.credential.endsWith('-unsealed-key') && !(await m.secrets.list()).some((s) => s.name === r.credential))
      await m.secrets.set(r.credential, `upstream-secret-${r.credential}`);
  keys.open = (await m.apiKeys.create({ workspace: 'open', name: 'backend' })).key;
  keys.cheap = (await m.apiKeys.create({ workspace: 'cheap', name: 'batch' })).key;
  await m.wallets.credit('open', decimalToNano('100'), 'test credit');
  await m.wallets.credit('cheap', decimalToNano('10'), 'test credit');
  await m.close();
  process.env.PI_ADMIN_TOKEN = TOKEN;
  process.env.PI_MASTER_KEY = masterKey;
  const adminPort = await freePort();
  node = await runNode({
    config,
    db: url,
    redis: null,
    host: '127.0.0.1',
    port: 0,
    upstreamOverride: sim.url,
    clock,
    // Per-request holds: the answers are compared with an embedded store's, whose ledger has a hold
    // row per request (under escrow a request admitted from a slice has its settle row only).
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
  adminUrl = `http://127.0.0.1:${adminPort}`;
});

t.teardown(async () => {
  if (node) {
    await node.gateway.close();
    await node.close();
  }
  await sim?.close();
  await pg?.destroy();
  if (env.token === undefined) delete process.env.PI_ADMIN_TOKEN;
  else process.env.PI_ADMIN_TOKEN = env.token;
  if (env.master === undefined) delete process.env.PI_MASTER_KEY;
  else process.env.PI_MASTER_KEY = env.master;
});

async function call(
  path: string,
  init: { method?: string; body?: unknown; token?: string | null } = {},
): Promise<{ status: number; body: AdminBody; text: string }> {
  const token = init.token === undefined ? TOKEN : init.token;
  const headers: Record<string, string> = {};
  if (token !== null) headers['authorization'] = `Bearer ${token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${adminUrl}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: res.status, body, text };
}

/** One chat request to the node; waits until its request-log row is in PostgreSQL. */
async function chat(
  key: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ status: number; trace: string }> {
  const res = await fetch(`${node.gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({ messages: [{ role: 'user', content: PROMPT_MARK }], ...body }),
  });
  await res.arrayBuffer();
  const trace = res.headers.get('x-pi-trace-id') as string;
  for (let i = 0; i < 250; i++) {
    if ((await node.store.requestLog.search({ traceId: trace }, 1)).rows.length > 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return { status: res.status, trace };
}

/** Chat until the status is `want` (the node's key cache follows a change within its 1 s poll). */
async function chatUntil(key: string, want: number): Promise<number> {
  let status = 0;
  for (let i = 0; i < 40 && status !== want; i++) {
    status = (await chat(key, { model: 'acme/chat-small' })).status;
    if (status !== want) await new Promise((r) => setTimeout(r, 100));
  }
  return status;
}

const traceIds = (body: { requests: { trace_id: string }[] }) => body.requests.map((r) => r.trace_id);

t.test('known traffic on the node', async (t) => {
  const usage = { prompt: 1000, completion: 500 };
  traces.small1 = (
    await chat(
      keys.open as string,
      { model: 'acme/chat-small', provider: { only: ['alpha'] }, sim: { usage } },
      { 'X-Title': 'Billing app', 'HTTP-Referer': 'https://billing.example.com/x' },
    )
  ).trace;
  traces.small2 = (
    await chat(keys.open as string, { model: 'acme/chat-small', provider: { only: ['alpha'] }, sim: { usage } })
  ).trace;
  traces.missing = (await chat(keys.open as string, { model: 'acme/no-such-model' })).trace;
  traces.cheap = (await chat(keys.cheap as string, { model: 'acme/chat-small', sim: { usage } })).trace;
  t.equal(Object.values(traces).filter(Boolean).length, 4);
});

t.test('the request log on PostgreSQL: filters, paging, live tail, one request in detail', async (t) => {
  const all = await call('/admin/requests');
  t.equal(all.status, 200);
  t.same(traceIds(all.body), [traces.cheap, traces.missing, traces.small2, traces.small1], 'newest first');
  t.equal(all.body.next_before, null);
  const first = all.body.requests[3];
  t.match(first, {
    workspace: 'open',
    endpoint: 'chat_completions',
    model_requested: 'acme/chat-small',
    model_served: 'acme/chat-small',
    provider: 'alpha',
    deployment: 'alpha/chat-small',
    status: 200,
    ended: 'completed',
    prompt_tokens: 1000,
    completion_tokens: 500,
    cost_usd: '0.002',
    app_title: 'Billing app',
    app_origin: 'https://billing.example.com',
    time: '2026-01-15T12:00:00.000Z',
  });
  const byStatus = await call('/admin/requests?workspace=open&status=4xx');
  t.same(traceIds(byStatus.body), [traces.missing], 'status class filter');
  t.match(byStatus.body.requests[0], { ended: 'rejected', error_code: 'model_not_found' });
  t.equal((await call('/admin/requests?ended=rejected')).body.requests.length, 1, 'how it ended');
  t.same(traceIds((await call('/admin/requests?workspace=cheap')).body), [traces.cheap], 'workspace');
  t.equal(
    (await call('/admin/requests?provider=alpha&model=acme/chat-small')).body.requests.length,
    2,
    'provider and model',
  );
  t.equal((await call(`/admin/requests?key=${first.key_id}`)).body.requests.length, 3, 'key');
  t.equal((await call('/admin/requests?status=error')).body.requests.length, 1, 'any error');
  t.equal((await call('/admin/requests?status=200')).body.requests.length, 3, 'an exact status');
  t.same((await call('/admin/requests?from=2026-01-16')).body.requests, [], 'time range: nothing tomorrow');
  t.equal(
    (await call('/admin/requests?from=2026-01-15&to=2026-01-15T12:00:01Z')).body.requests.length,
    4,
    'time range: today',
  );
  t.equal((await call('/admin/requests?status=teapot')).status, 400);

  const page1 = await call('/admin/requests?limit=3');
  t.equal(page1.body.next_before, page1.body.requests[2].id, 'cursor');
  const page2 = await call(`/admin/requests?limit=3&before=${page1.body.next_before}`);
  t.same(traceIds(page2.body), [traces.small1], 'the older page');
  t.equal(page2.body.next_before, null);
  const newest = all.body.requests[0].id as number;
  t.same((await call(`/admin/requests?since=${newest}`)).body.requests, [], 'live tail: nothing newer');

  const detail = await call(`/admin/requests/${traces.small1}`);
  t.equal(detail.status, 200);
  t.match(detail.body, {
    trace_id: traces.small1,
    cost_usd: '0.002',
    key: { id: first.key_id, name: 'backend', workspace: 'open' },
  });
  t.same(
    detail.body.attempt_list.map((a: Record<string, unknown>) => [a.n, a.deployment, a.provider, a.outcome, a.status]),
    [[1, 'alpha/chat-small', 'alpha', 'ok', 200]],
  );
  t.same(
    detail.body.ledger.map((l: Record<string, unknown>) => l.kind),
    ['hold', 'settle'],
    'its ledger rows',
  );
  t.equal(detail.body.ledger[1].amount_usd, '0.002');
  t.equal((await call('/admin/requests/no-such-trace')).status, 404);
});

t.test('spend on PostgreSQL equals the request log and the ledger', async (t) => {
  const spend = await call('/admin/spend');
  t.equal(spend.status, 200);
  t.equal(spend.body.to, '2026-01-16T00:00:00.000Z');
  t.same(
    spend.body.by_workspace.find((l: { key: string }) => l.key === 'open'),
    {
      key: 'open',
      requests: 2,
      rejected: 1,
      unbilled: 0,
      cost_usd: '0.004',
      prompt_tokens: 2000,
      completion_tokens: 1000,
    },
  );
  t.same(
    spend.body.by_provider.find((l: { key: string }) => l.key === 'alpha'),
    {
      key: 'alpha',
      requests: 2,
      rejected: 0,
      unbilled: 0,
      cost_usd: '0.004',
      prompt_tokens: 2000,
      completion_tokens: 1000,
    },
  );
  t.same(
    spend.body.by_day.map((l: { key: string; requests: number; rejected: number }) => [l.key, l.requests, l.rejected]),
    [['2026-01-15', 3, 1]],
  );
  const rows = await node.store.requestLog.query({ limit: 10_000 });
  const logged = rows.reduce((a, r) => a + (r.cost_nano ?? 0n), 0n);
  t.equal(decimalToNano(spend.body.total.cost_usd), logged, 'the total is the request log’s sum, exactly');
  t.equal(
    spend.body.total.requests,
    rows.filter((r) => r.cost_nano !== null).length,
    'requests: the billed ones (a settled cost)',
  );
  t.equal(
    spend.body.total.requests + spend.body.total.rejected + spend.body.total.unbilled,
    rows.length,
    'with the rejected and unbilled ones: every logged request',
  );
  t.equal(
    spend.body.total.prompt_tokens,
    rows.reduce((a, r) => a + (r.prompt_tokens ?? 0), 0),
  );
  const cheapSettle = (await call(`/admin/requests/${traces.cheap}`)).body.ledger.find(
    (l: { kind: string }) => l.kind === 'settle',
  );
  t.equal(
    spend.body.by_workspace.find((l: { key: string }) => l.key === 'cheap').cost_usd,
    cheapSettle.amount_usd,
    "cheap: what the ledger's settlement charged",
  );
  t.same((await call('/admin/spend?from=2026-01-16&to=2026-01-17')).body.total, {
    requests: 0,
    rejected: 0,
    unbilled: 0,
    cost_usd: '0',
    prompt_tokens: 0,
    completion_tokens: 0,
  });
  const csv = await call('/admin/spend.csv?workspace=open');
  t.same(csv.text.split('\r\n'), [
    'day,workspace,model,provider,requests,rejected,unbilled,prompt_tokens,completion_tokens,cost_usd',
    '2026-01-15,open,acme/chat-small,alpha,2,0,0,2000,1000,0.004',
    '2026-01-15,open,acme/no-such-model,,0,1,0,0,0,0',
    '',
  ]);
});

t.test('the same traffic on the embedded store answers the same spend, CSV and wallets', async (t) => {
  const s = await startConsoleStack(t);
  await knownTraffic(s);
  for (const path of ['/admin/spend', '/admin/spend.csv', '/admin/wallets']) {
    const [embedded, fleet] = [await s.call(path), await call(path)];
    t.equal(fleet.status, 200, path);
    t.equal(fleet.text, embedded.text, `${path}: byte for byte`);
  }
});

t.test('spend per key, warnings and `pi-gateway usage` on PostgreSQL agree with the console', async (t) => {
  const perKey = await call('/admin/spend/keys?from=2026-01-15&to=2026-01-16');
  t.equal(perKey.status, 200);
  t.match(
    perKey.body.keys.find((x: AdminBody) => x.name === 'backend'),
    {
      workspace: 'open',
      state: 'active',
      requests: 2,
      rejected: 1,
      unbilled: 0,
      cost_usd: '0.004',
      prompt_tokens: 2000,
      completion_tokens: 1000,
      last_used_at: '2026-01-15T12:00:00.000Z',
    },
    'billed requests, the refused one apart, exact cost, last use',
  );
  const warnings = await call('/admin/warnings');
  t.same(
    warnings.body.low_balance.map((w: AdminBody) => [w.workspace, w.low_balance_usd]),
    [['cheap', '25']],
  );
  const s = await startConsoleStack(t);
  await knownTraffic(s);
  t.equal((await call('/admin/warnings')).text, (await s.call('/admin/warnings')).text, 'warnings: byte for byte');

  const cheap = (await call('/admin/wallets')).body.wallets.find((w: AdminBody) => w.workspace === 'cheap');
  const m = await scrape(adminUrl);
  t.equal(
    sampleValue(m, 'pi_gateway_wallet_available_usd', { workspace: 'cheap' }),
    Number(cheap.available_usd),
    'the wallet gauge reads PostgreSQL',
  );
  t.equal(sampleValue(m, 'pi_gateway_wallet_below_threshold', { workspace: 'cheap' }), 1, 'cheap: below $25');
  t.equal(sampleValue(m, 'pi_gateway_wallet_below_threshold', { workspace: 'open' }), 0, 'open: above $50');

  for (const ws of ['open', 'cheap']) {
    const cli = await cliInProcess(
      ['usage', '--db', dbUrl, '--workspace', ws, '--since', '2026-01-15', '--until', '2026-01-16', '--json'],
      { PI_CONFIG: 'test/fixtures/config/gateway' },
    );
    t.equal(cli.code, 0, cli.stderr);
    const usage = JSON.parse(cli.stdout);
    const spend = (await call(`/admin/spend?workspace=${ws}&from=2026-01-15&to=2026-01-16`)).body;
    t.equal(spend.total.requests, usage.requests, `${ws}: the same requests as the CLI (${usage.requests})`);
    t.equal(spend.total.cost_usd, usage.total_usd, `${ws}: the same cost, to the nano-dollar`);
    for (const l of usage.lines)
      t.same(
        [spend.by_model.find((x: AdminBody) => x.key === l.model)?.requests, l.requests],
        [l.requests, l.requests],
        `${ws} ${l.model}`,
      );
  }
});

t.test('wallets on PostgreSQL: balances, ledger rows, a credit with the operator note', async (t) => {
  const list = await call('/admin/wallets');
  t.same(
    list.body.wallets.find((w: { workspace: string }) => w.workspace === 'open'),
    {
      workspace: 'open',
      name: 'Open (default routing)',
      configured: true,
      balance_usd: '99.996',
      held_usd: '0',
      available_usd: '99.996',
      spend_today_usd: '0.004',
      open_holds: 0,
      low_balance_usd: '50',
      low_balance: false,
    },
  );
  t.ok(
    list.body.wallets.some((w: { workspace: string }) => w.workspace === 'strict'),
    'every workspace of the config',
  );
  const credit = await call('/admin/wallets/open/credit', { body: { usd: '5.5', note: 'invoice 42' } });
  t.equal(credit.status, 200);
  t.match(credit.body, { workspace: 'open', credited_usd: '5.5', balance_usd: '105.496', note: 'invoice 42' });
  t.equal((await node.store.wallets.show('open', clock.now())).balance, 105_496_000_000n, 'PostgreSQL has it');
  const detail = await call('/admin/wallets/open?limit=2');
  t.match(detail.body.ledger[0], {
    kind: 'credit',
    amount_usd: '5.5',
    note: 'invoice 42',
    trace_id: credit.body.trace_id,
  });
  t.match(detail.body.ledger[1], { kind: 'settle', amount_usd: '0.002', model: 'acme/chat-small', provider: 'alpha' });
  const older = await call(`/admin/wallets/open?limit=2&before=${detail.body.ledger[1].id}`);
  t.match(older.body.ledger[0], { kind: 'hold' }, 'paging back');
  t.ok((await node.store.wallets.verify()).ok, 'ledger verify agrees');
  t.equal((await call('/admin/wallets/open/credit', { body: { usd: '5' } })).status, 400, 'a credit needs a note');
  t.equal((await call('/admin/wallets/nobody/credit', { body: { usd: '1', note: 'n' } })).status, 404);
  t.equal((await call('/admin/wallets/nobody')).status, 404);
});

t.test('keys on PostgreSQL: create, list, expire, revive, revoke; the node follows', async (t) => {
  const created = await call('/admin/keys', { body: { workspace: 'open', name: 'console-made', rpm: 60 } });
  t.equal(created.status, 201);
  t.match(created.body, { workspace: 'open', name: 'console-made', rpm: 60, state: 'active', expires_at: null });
  const key = created.body.key as string;
  const id = created.body.id as string;
  const listed = await call('/admin/keys?workspace=open');
  // Every key here was made at the same (manual) clock time, so the list order among them is by id.
  t.ok(
    listed.body.keys.some((k: { id: string }) => k.id === id),
    'listed',
  );
  t.notOk(listed.text.includes(key), 'the list never shows the key');
  t.equal(await chatUntil(key, 200), 200, 'the new key works');
  // A past expiry is refused (test/console/find-requests-pg.test.ts); one that then passes expires the
  // key. The clock goes back after, for the tests that follow.
  const expiring = await call(`/admin/keys/${id}/expiry`, { body: { expires_at: '2026-01-15T13:00:00Z' } });
  t.match(expiring.body, { state: 'active', expires_at: '2026-01-15T13:00:00.000Z' });
  clock.advance(2 * 3_600_000);
  t.equal(await chatUntil(key, 401), 401, 'an expired key is refused');
  clock.advance(-2 * 3_600_000);
  t.match((await call(`/admin/keys/${id}/expiry`, { body: { expires_at: null } })).body, {
    state: 'active',
    expires_at: null,
  });
  t.equal(await chatUntil(key, 200), 200, 'cleared expiry: works again');
  t.match((await call(`/admin/keys/${id}/revoke`, { body: {} })).body, { state: 'revoked', changed: true });
  t.equal(await chatUntil(key, 401), 401, 'revoked');
  t.match(
    (await call(`/admin/keys/${id}/revoke`, { body: {} })).body,
    { changed: false },
    'revoking twice changes nothing',
  );
  t.equal(
    (await call(`/admin/keys/${id}/expiry`, { body: { expires_at: null } })).status,
    400,
    'a revoked key stays revoked',
  );
  t.equal((await call('/admin/keys/key_nope/revoke', { body: {} })).status, 404);
});

t.test('series on PostgreSQL: exact nearest-rank percentiles, the same as the embedded store', async (t) => {
  // Rows written straight into the log (no ledger behind them): after the ledger-verify assertions.
  for (const row of seriesRows()) node.store.requestLog.append(row);
  const s = await startConsoleStack(t);
  for (const row of seriesRows()) s.store.requestLog.append(row);
  const hourly = await call(SERIES_QUERY);
  t.equal(hourly.status, 200, hourly.text);
  t.same(hourly.body.series, [SERIES_TOTAL], 'exact counts, percentiles and nano-USD sums');
  for (const path of [
    SERIES_QUERY,
    `${SERIES_QUERY}&by=model`,
    `${SERIES_QUERY}&by=provider`,
    `${SERIES_QUERY}&by=workspace`,
    '/admin/spend/series?workspace=slow&interval=day&from=2026-01-14&to=2026-01-15',
  ]) {
    const [embedded, fleet] = [await s.call(path), await call(path)];
    t.equal(fleet.status, 200, path);
    t.equal(fleet.text, embedded.text, `${path}: byte for byte`);
  }
});

t.test('health, meta and the token on a fleet node', async (t) => {
  const health = await call('/admin/health');
  t.equal(health.status, 200);
  t.equal(health.body.state, 'ready');
  const alpha = health.body.deployments.find((d: { id: string }) => d.id === 'alpha/chat-small');
  t.ok(alpha.recent.attempts >= 2, 'recent attempts from the PostgreSQL request log');
  t.equal((await call('/admin/meta')).status, 200);
  t.equal((await call('/admin/requests', { token: 'wrong' })).status, 401);
  t.equal((await call('/admin/requests', { token: null })).status, 401);
  const texts = [
    (await call('/admin/requests')).text,
    (await call('/admin/keys')).text,
    (await call(`/admin/requests/${traces.small1}`)).text,
  ];
  for (const text of texts)
    for (const secret of [TOKEN, keys.open as string, PROMPT_MARK])
      t.notOk(text.includes(secret), 'no secret in an answer');
});

t.test('PostgreSQL down: the console answers 503 store_unavailable, and recovers by itself', async (t) => {
  await pg.stop();
  try {
    const r = await call('/admin/requests');
    t.equal(r.status, 503);
    t.equal(r.body?.error?.code, 'store_unavailable');
    t.notOk(r.text.includes(TOKEN));
    const signIn = await fetch(`${adminUrl}/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ name: 'ana', token: 'a-password-while-down' }).toString(),
    });
    t.equal(signIn.status, 503, 'an account cannot be checked: 503, not a wrong-password 401');
    t.match(await signIn.text(), /database does not answer/);
  } finally {
    await pg.start();
  }
  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    status = (await call('/admin/requests')).status;
    if (status !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(status, 200, 'answers again once PostgreSQL is back');
});

/** The node's console as the shared checks see it; its log lines are the JSON lines on stderr. */
function fleetConsole(t: Test): AccountsConsole {
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
    const m = await openPgStore(dbUrl);
    try {
      await fn(m);
    } finally {
      await m.close();
    }
  };
  return {
    adminUrl,
    token: TOKEN,
    advance: (ms) => clock.advance(ms),
    logs: () => logs,
    balance: async (ws) => (await call(`/admin/wallets/${ws}`)).body.balance_usd,
    addOperator: (name, role, password) =>
      withStore(async (m) => m.operators.add(name, role, await hashPassword(password))),
    removeOperator: (name) => withStore((m) => m.operators.remove(name)),
  };
}

t.test('a fleet node: no CORS on the admin listener', async (t) => {
  await checkNoCors(t, { adminUrl, token: TOKEN });
});

t.test('a fleet node: wrong tokens limited with back-off and logged', async (t) => {
  await checkSignInLimits(t, fleetConsole(t));
});

t.test('a fleet node: sessions bound to the page secret, idle timeout, protected sign-out', async (t) => {
  await checkSessionBinding(t, fleetConsole(t));
});

t.test('a fleet node: operators, the viewer role and the audit trail in PostgreSQL', async (t) => {
  await checkOperatorsAndAudit(t, fleetConsole(t));
  const m = await openPgStore(dbUrl);
  try {
    await t.rejects(m.pool.query('UPDATE audit_log SET actor = $1', ['x']), /append-only/, 'the trail refuses UPDATE');
    await t.rejects(m.pool.query('DELETE FROM audit_log'), /append-only/, 'and DELETE');
  } finally {
    await m.close();
  }
  const env = { PI_DB: dbUrl, PI_MASTER_KEY: process.env.PI_MASTER_KEY ?? '' };
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
