// Finding a request on a fleet node (`serve --db postgres://…`, run in process on a private
// PostgreSQL): the same answers as the embedded store (test/console/find-requests.test.ts) — a pasted
// trace id, a key by name or prefix, pages both ways, a 60,000-character model stored bounded, key
// names bounded and past expiries refused, the wallet ledger paged.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { ManualClock } from '../../src/clock.ts';
import { runNode, type RunningNode } from '../../src/runtime/node-runtime.ts';
import { decimalToNano } from '../../src/money.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { type AdminBody, PROMPT_MARK, TOKEN } from '../helpers/console.ts';
import { freePort } from '../helpers/free-port.ts';
import { startPrivatePg, type PrivatePg } from '../helpers/pg.ts';
import { DEFAULT_NOW, fixtureConfig } from '../helpers/stack.ts';

let pg: PrivatePg;
let sim: Simulator;
let node: RunningNode;
let adminUrl: string;
let openKey = '';
const clock = new ManualClock(DEFAULT_NOW);
const env = { token: process.env.PI_ADMIN_TOKEN, master: process.env.PI_MASTER_KEY };

t.before(async () => {
  [pg, sim] = await Promise.all([startPrivatePg(), startSimulator({})]);
  const url = await pg.createDatabase();
  const masterKey = randomBytes(32).toString('base64');
  const m = await openPgStore(url, { checkSchema: false, masterKey });
  await m.migrate();
  const config = fixtureConfig('gateway');
  for (const r of config.resources)
    if (!r.credential.endsWith('-unsealed-key') && !(await m.secrets.list()).some((s) => s.name === r.credential))
      await m.secrets.set(r.credential, `upstream-secret-${r.credential}`);
  openKey = (await m.apiKeys.create({ workspace: 'open', name: 'backend' })).key;
  await m.apiKeys.create({ workspace: 'cheap', name: 'batch' });
  for (let i = 1; i <= 5; i++) await m.wallets.credit('open', decimalToNano(String(i)), `credit ${i}`);
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
    observability: {
      admin: { host: '127.0.0.1', port: adminPort },
      metrics: false,
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

async function call(path: string, body?: unknown): Promise<{ status: number; body: AdminBody; text: string }> {
  const res = await fetch(`${adminUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  return { status: res.status, body: parsed, text };
}

/** One chat request to the node; waits until its request-log row is in PostgreSQL. */
async function chat(model: string): Promise<string> {
  const res = await fetch(`${node.gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${openKey}` },
    body: JSON.stringify({ messages: [{ role: 'user', content: PROMPT_MARK }], model }),
  });
  await res.arrayBuffer();
  const trace = res.headers.get('x-pi-trace-id') as string;
  for (let i = 0; i < 250; i++) {
    if ((await node.store.requestLog.search({ traceId: trace }, 1)).rows.length > 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return trace;
}

const traceIds = (b: AdminBody): string[] => b.requests.map((r: { trace_id: string }) => r.trace_id);
const order: string[] = [];

t.test('traffic: three requests, one with a 60,000-character model', async (t) => {
  order.unshift(await chat('acme/chat-small'));
  order.unshift(await chat(`acme/${'m'.repeat(60_000)}`));
  order.unshift(await chat('acme/chat-small'));
  t.equal(new Set(order).size, 3);
});

t.test('a pasted trace id and a key by name or prefix, on PostgreSQL', async (t) => {
  t.same(traceIds((await call(`/admin/requests?trace=${order[1]}`)).body), [order[1]], 'the pasted trace');
  t.same((await call('/admin/requests?trace=nope')).body.requests, []);
  const prefix = openKey.slice(0, 12);
  for (const q of ['backend', 'Backend', prefix]) {
    const r = await call(`/admin/requests?key=${encodeURIComponent(q)}`);
    t.same(traceIds(r.body), order, `key=${q}`);
    t.equal(r.body.requests[0].key_name, 'backend');
  }
  t.same((await call('/admin/requests?key=batch')).body.requests, [], 'the other key has no request');
  t.equal((await call(`/admin/requests?key=${openKey}`)).body.error.code, 'whole_key');
});

t.test('pages both ways on PostgreSQL', async (t) => {
  const first = (await call('/admin/requests?limit=2')).body;
  t.same(traceIds(first), order.slice(0, 2));
  t.equal(first.prev_after, null);
  const second = (await call(`/admin/requests?limit=2&before=${first.next_before}`)).body;
  t.same(traceIds(second), order.slice(2));
  t.equal(second.next_before, null);
  const back = (await call(`/admin/requests?limit=2&after=${second.prev_after}`)).body;
  t.same(traceIds(back), order.slice(0, 2), 'back to the first page');
  t.equal(back.prev_after, null);
});

t.test('the long model is stored bounded on PostgreSQL', async (t) => {
  const row = (await call(`/admin/requests/${order[1]}`)).body;
  t.equal(row.model_requested, `acme/${'m'.repeat(250)}…`, '255 characters and an ellipsis');
  t.equal(Array.from(row.model_requested as string).length, 256);
});

t.test('key names bounded and past expiries refused on PostgreSQL', async (t) => {
  const long = await call('/admin/keys', { workspace: 'open', name: 'n'.repeat(129) });
  t.equal(long.status, 400);
  t.equal(long.body.error.code, 'invalid_name');
  const past = await call('/admin/keys', { workspace: 'open', expires_at: '2026-01-15T11:00:00Z' });
  t.equal(past.status, 400);
  t.equal(past.body.error.code, 'expiry_in_past');
  const made = await call('/admin/keys', { workspace: 'open', name: 'n'.repeat(128) });
  t.equal(made.status, 201);
  const set = await call(`/admin/keys/${made.body.id}/expiry`, { expires_at: '2026-01-15' });
  t.equal(set.body.error.code, 'expiry_in_past');
  t.match((await call(`/admin/keys/${made.body.id}/expiry`, { expires_at: '2026-02-01' })).body, {
    state: 'active',
    expires_at: '2026-02-01T00:00:00.000Z',
  });
});

t.test('the wallet ledger pages on PostgreSQL', async (t) => {
  const ids = (b: AdminBody): number[] => b.ledger.map((l: { id: number }) => l.id);
  const all = ids((await call('/admin/wallets/open?limit=100')).body);
  t.ok(all.length >= 5, `${all.length} ledger rows`);
  const seen: number[] = [];
  let before: number | null = null;
  for (let n = 0; n < all.length; n++) {
    const page: AdminBody = (await call(`/admin/wallets/open?limit=2${before === null ? '' : `&before=${before}`}`))
      .body;
    seen.push(...ids(page));
    before = page.next_before;
    if (before === null) break;
  }
  t.same(seen, all, 'the pages, older and older, are the whole ledger once');
});
