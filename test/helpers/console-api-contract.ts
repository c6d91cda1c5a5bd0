// What the operator console's admin JSON API answers, whichever store is behind it: the embedded
// store (`serve`) and PostgreSQL (a fleet node). One suite, run once per store
// (test/console/admin-api.test.ts, test/console/admin-api-pg.test.ts), so an endpoint's answer is
// written once and no store can drift from it. Known traffic gives exact numbers: the request log
// with its filters and one request in detail, spend (JSON and CSV) equal to the request log and the
// ledger, wallets and credits, keys created, expired and revoked (the gateway follows), the route
// preview against what the gateway then does, series, spend per key and warnings, `pi-gateway usage`
// agreeing; a wrong or missing token is a 401 everywhere and no answer carries a secret.
import type { Test } from 'tap';
import type { ManualClock } from '../../src/clock.ts';
import type { CompiledConfig } from '../../src/config/compiled.ts';
import { decimalToNano, nanoToDecimal } from '../../src/money.ts';
import type { Simulator } from '../../src/simulator/server.ts';
import type { AdminStore } from '../../src/store/admin-store-interface.ts';
import type { ConsoleStore } from '../../src/store/console-store-interface.ts';
import type { RequestLogRow } from '../../src/store/types.ts';
import { cliInProcess } from '../cli/fixtures/run-cli.ts';
import { type AdminBody, type ConsoleStack, postLogin, PROMPT_MARK, TOKEN } from './console.ts';
import { seriesRows, SERIES_QUERY, SERIES_TOTAL } from './spend-rows.ts';

/** One gateway with the admin listener (operator token `TOKEN`) on one store, nothing in it yet but
 *  the sealed upstream credentials. */
export interface ConsoleRig {
  adminUrl: string;
  /** The gateway's public API. */
  gatewayUrl: string;
  clock: ManualClock;
  sim: Simulator;
  config: CompiledConfig;
  call: ConsoleStack['call'];
  /** The store as the CLI reaches it. */
  store: AdminStore;
  /** The store as the console reads it. */
  console: ConsoleStore;
  /** Rows straight into the request log (no ledger behind them); resolves once they are readable. */
  appendLog(rows: RequestLogRow[]): Promise<void>;
  /** Writes what the request log still buffers. */
  flushLog(): Promise<void>;
  /** Environment for a `pi-gateway` command on the same store. */
  cliEnv: Record<string, string>;
  /** A key change reaches the gateway on its next request (the embedded store notices every commit);
   *  false: within the key cache's poll (a fleet node), so the suite retries for a few seconds. */
  keyChangesAtOnce: boolean;
}

type Make = (t: Test) => Promise<ConsoleRig>;

const ENDPOINTS: [string, string, unknown?][] = [
  ['GET', '/admin/requests'],
  ['GET', '/admin/requests/some-trace'],
  ['GET', '/admin/spend'],
  ['GET', '/admin/spend.csv'],
  ['GET', '/admin/spend/series'],
  ['GET', '/admin/spend/keys'],
  ['GET', '/admin/warnings'],
  ['GET', '/admin/wallets'],
  ['GET', '/admin/wallets/open'],
  ['POST', '/admin/wallets/open/credit', { usd: '1', note: 'x' }],
  ['GET', '/admin/keys'],
  ['POST', '/admin/keys', { workspace: 'open' }],
  ['POST', '/admin/keys/key_x/revoke', {}],
  ['POST', '/admin/keys/key_x/expiry', { expires_at: null }],
  ['GET', '/admin/health'],
  ['POST', '/admin/route-preview', { workspace: 'open', model: 'acme/chat-small' }],
  ['GET', '/admin/meta'],
];

const traceIds = (body: AdminBody): string[] => body.requests.map((r: { trace_id: string }) => r.trace_id);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A key made through the store, as `pi-gateway key create` does: its plaintext. */
export async function makeKey(
  rig: ConsoleRig,
  workspace: string,
  opts: { name?: string; expiresAt?: number } = {},
): Promise<string> {
  return (await rig.store.apiKeys.create({ workspace, ...opts })).key;
}

/** One chat request through the public API; resolves once its request-log row is in the store. */
export async function chatOn(
  rig: ConsoleRig,
  key: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ status: number; trace: string }> {
  const res = await fetch(`${rig.gatewayUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({ messages: [{ role: 'user', content: PROMPT_MARK }], ...body }),
  });
  await res.arrayBuffer();
  const trace = res.headers.get('x-pi-trace-id') as string;
  for (let i = 0; i < 250; i++) {
    await rig.flushLog();
    if ((await rig.store.requestLog.query({ limit: 10_000 })).some((r) => r.trace_id === trace)) break;
    await sleep(20);
  }
  return { status: res.status, trace };
}

/** The status a key now gets: at once where key changes take effect on the next request, else the
 *  first `want` within a few seconds (a fleet node's key cache follows within its 1 s poll). */
async function keyStatus(rig: ConsoleRig, key: string, want: number): Promise<number> {
  let status = 0;
  for (let i = 0; i < (rig.keyChangesAtOnce ? 1 : 40) && status !== want; i++) {
    status = (await chatOn(rig, key, { model: 'acme/chat-small' })).status;
    if (status !== want && !rig.keyChangesAtOnce) await sleep(100);
  }
  return status;
}

export interface RigTraffic {
  openKey: string;
  cheapKey: string;
  /** Trace ids, oldest first. */
  traces: { small1: string; small2: string; missing: string; cheap: string };
}

/** test/helpers/console.ts's known traffic, on any rig: workspace `open` ($100) with two
 *  acme/chat-small requests on alpha ($0.002 each) and one for a model that does not exist;
 *  workspace `cheap` ($10) with one acme/chat-small request. */
export async function rigTraffic(rig: ConsoleRig): Promise<RigTraffic> {
  const openKey = await makeKey(rig, 'open', { name: 'backend' });
  const cheapKey = await makeKey(rig, 'cheap', { name: 'batch' });
  await rig.store.wallets.credit('open', decimalToNano('100'), 'test credit');
  await rig.store.wallets.credit('cheap', decimalToNano('10'), 'test credit');
  const usage = { prompt: 1000, completion: 500 };
  const alpha = { model: 'acme/chat-small', provider: { only: ['alpha'] }, sim: { usage } };
  const small1 = await chatOn(rig, openKey, alpha, {
    'X-Title': 'Billing app',
    'HTTP-Referer': 'https://billing.example.com/x',
  });
  const small2 = await chatOn(rig, openKey, alpha);
  const missing = await chatOn(rig, openKey, { model: 'acme/no-such-model' });
  const cheap = await chatOn(rig, cheapKey, { model: 'acme/chat-small', sim: { usage } });
  return {
    openKey,
    cheapKey,
    traces: { small1: small1.trace, small2: small2.trace, missing: missing.trace, cheap: cheap.trace },
  };
}

export function consoleApiContract(t: Test, make: Make): void {
  t.test('the request log: filters, newest first, paging, live tail, one request in detail', (t) =>
    requestLogChecks(t, make),
  );
  t.test('spend by workspace, model, provider and day equals the request log and the ledger; the CSV', (t) =>
    spendChecks(t, make),
  );
  t.test('the CSV keeps a model name a spreadsheet would run as a formula as text', (t) => csvFormulaChecks(t, make));
  t.test('wallets, the ledger paged, and a credit with the operator note', (t) => walletChecks(t, make));
  t.test('a credit with an Idempotency-Key happens once, sent again or six at once', (t) =>
    idempotentCreditChecks(t, make),
  );
  t.test('keys: create (shown once), list, expire, revive, revoke; the public API follows', (t) => keyChecks(t, make));
  t.test('the route preview agrees with what the gateway then does, failover included', (t) =>
    routePreviewChecks(t, make),
  );
  t.test('a wrong or missing token is a 401 everywhere; no answer leaks a secret', (t) => tokenChecks(t, make));
  t.test('health from the request log, meta', (t) => healthChecks(t, make));
  t.test(
    'console sessions: sign-in with the token sets an HttpOnly SameSite=Strict cookie named by port; posts need the secret',
    (t) => sessionChecks(t, make),
  );
  t.test('series per hour and day: billed, rejected, unbilled, errors, exact nearest-rank p50/p95, cost', (t) =>
    seriesChecks(t, make),
  );
  t.test('spend and last use per key; warnings: wallets below their threshold, keys near expiry', (t) =>
    perKeyChecks(t, make),
  );
  t.test('the console and `pi-gateway usage` agree on a known traffic mix', (t) => usageChecks(t, make));
  t.test('malformed input is a 4xx JSON error with a code, never a 500; nothing is written', (t) =>
    malformedInputChecks(t, make),
  );
  t.test('a whole API key in a path is refused: not echoed in the answer, not kept in the audit trail', (t) =>
    wholeKeyPathChecks(t, make),
  );
  t.test('a whole API key pasted into a note or a name is refused, and kept nowhere', (t) =>
    wholeKeyInTextChecks(t, make),
  );
  t.test('text no store keeps as sent (NUL, a lone surrogate, bytes not UTF-8) is a 400, nothing written', (t) =>
    unkeepableTextChecks(t, make),
  );
  t.test('a query field given twice is a 400, not the last one silently', (t) => repeatedFieldChecks(t, make));
  t.test('a body giving a field twice is a 400, at any depth; nothing is written', (t) => duplicateKeyChecks(t, make));
  t.test('a series over too many buckets says how to ask for fewer, by the interval asked', (t) =>
    bucketLimitChecks(t, make),
  );
  t.test('a method an admin path does not take is a 405 naming the ones it does; an unknown path a 404', (t) =>
    methodChecks(t, make),
  );
}

async function requestLogChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const k = await rigTraffic(rig);
  const all = await rig.call('/admin/requests');
  t.equal(all.status, 200);
  t.same(traceIds(all.body), [k.traces.cheap, k.traces.missing, k.traces.small2, k.traces.small1], 'newest first');
  t.equal(all.body.next_before, null, 'no older page');
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

  const byStatus = await rig.call('/admin/requests?workspace=open&status=4xx');
  t.same(traceIds(byStatus.body), [k.traces.missing], 'status class filter');
  t.equal(byStatus.body.requests[0].ended, 'rejected');
  t.equal(byStatus.body.requests[0].error_code, 'model_not_found');
  t.same((await rig.call('/admin/requests?ended=rejected')).body.requests.length, 1, 'how it ended');
  t.same(traceIds((await rig.call('/admin/requests?workspace=cheap')).body), [k.traces.cheap], 'workspace');
  t.same(
    (await rig.call('/admin/requests?provider=alpha&model=acme/chat-small')).body.requests.length,
    2,
    'provider and model',
  );
  const keyId = first.key_id as string;
  t.same(
    (await rig.call(`/admin/requests?key=${keyId}`)).body.requests.length,
    3,
    'key (the 404 is logged against its key too)',
  );
  t.equal((await rig.call('/admin/requests?status=error')).body.requests.length, 1, 'any error');
  t.equal((await rig.call('/admin/requests?status=200')).body.requests.length, 3, 'an exact status');
  t.same((await rig.call('/admin/requests?from=2026-01-16')).body.requests, [], 'time range: nothing from tomorrow');
  t.same(
    (await rig.call('/admin/requests?from=2026-01-15&to=2026-01-15T12:00:01Z')).body.requests.length,
    4,
    'time range: today',
  );
  t.equal((await rig.call('/admin/requests?status=teapot')).status, 400, 'a status it cannot read is a 400');
  t.equal((await rig.call('/admin/requests?from=2026-02-30')).status, 400, 'a date off the calendar is a 400');

  const page1 = await rig.call('/admin/requests?limit=3');
  t.equal(page1.body.requests.length, 3);
  t.equal(page1.body.next_before, page1.body.requests[2].id, 'cursor: the last id of the page');
  const page2 = await rig.call(`/admin/requests?limit=3&before=${page1.body.next_before}`);
  t.same(traceIds(page2.body), [k.traces.small1], 'the older page');
  t.equal(page2.body.next_before, null);

  const newest = all.body.requests[0].id as number;
  t.same((await rig.call(`/admin/requests?since=${newest}`)).body.requests, [], 'live tail: nothing newer yet');
  const later = await chatOn(rig, k.openKey, { model: 'acme/chat-small', provider: { only: ['alpha'] } });
  t.same(
    traceIds((await rig.call(`/admin/requests?since=${newest}`)).body),
    [later.trace],
    'live tail: the new request',
  );

  const detail = await rig.call(`/admin/requests/${k.traces.small1}`);
  t.equal(detail.status, 200);
  t.match(detail.body, {
    trace_id: k.traces.small1,
    cost_usd: '0.002',
    key: { id: keyId, name: 'backend', workspace: 'open' },
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
  t.equal((await rig.call('/admin/requests/no-such-trace')).status, 404);
}

async function spendChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const k = await rigTraffic(rig);
  const cheapCost = (await rig.console.wallets.ledgerOf(k.traces.cheap)).find((l) => l.kind === 'settle')
    ?.amount as bigint;
  const cheapRow = (await rig.call(`/admin/requests/${k.traces.cheap}`)).body;
  const spend = await rig.call('/admin/spend');
  t.equal(spend.status, 200);
  t.equal(spend.body.to, '2026-01-16T00:00:00.000Z', 'up to the end of today by default');
  t.equal(spend.body.from, '2025-12-17T00:00:00.000Z', '30 days');
  const line = {
    requests: 2,
    rejected: 0,
    unbilled: 0,
    cost_usd: '0.004',
    prompt_tokens: 2000,
    completion_tokens: 1000,
  };
  t.same(
    spend.body.by_workspace.find((l: { key: string }) => l.key === 'open'),
    { key: 'open', ...line, rejected: 1 },
    'open: two billed $0.002 requests, and a refused one apart',
  );
  const cheapLine = spend.body.by_workspace.find((l: { key: string }) => l.key === 'cheap');
  t.equal(cheapLine.cost_usd, cheapRow.cost_usd, 'cheap: its request cost');
  t.equal(decimalToNano(cheapLine.cost_usd), cheapCost, "cheap: what the ledger's settlement charged");
  const cheapSettle = cheapRow.ledger.find((l: { kind: string }) => l.kind === 'settle');
  t.equal(cheapLine.cost_usd, cheapSettle.amount_usd, 'cheap: the settlement the request detail shows');
  t.same(
    spend.body.by_day.map((l: { key: string; requests: number; rejected: number }) => [l.key, l.requests, l.rejected]),
    [['2026-01-15', 3, 1]],
  );
  t.same(
    spend.body.by_provider.find((l: { key: string }) => l.key === 'alpha'),
    { key: 'alpha', ...line },
  );
  t.equal(spend.body.total.requests, 3, 'billed requests');
  t.equal(spend.body.total.rejected, 1, 'the refused one, apart');
  t.equal(spend.body.total.unbilled, 0);
  t.equal(spend.body.total.prompt_tokens, 3000);

  const rows = await rig.store.requestLog.query({ limit: 10_000 });
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

  const onlyOpen = await rig.call('/admin/spend?workspace=open&from=2026-01-15&to=2026-01-16');
  t.same(
    onlyOpen.body.by_workspace.map((l: { key: string }) => l.key),
    ['open'],
    'narrowed to a workspace',
  );
  t.same(
    (await rig.call('/admin/spend?from=2026-01-16&to=2026-01-17')).body.total,
    { requests: 0, rejected: 0, unbilled: 0, cost_usd: '0', prompt_tokens: 0, completion_tokens: 0 },
    'another day: nothing',
  );
  t.equal((await rig.call('/admin/spend?from=2026-01-16&to=2026-01-15')).status, 400, 'from after to');

  const csv = await rig.call('/admin/spend.csv?workspace=open');
  t.equal(csv.status, 200);
  t.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
  t.match(csv.headers.get('content-disposition') ?? '', /attachment; filename="spend\.csv"/);
  t.same(csv.text.split('\r\n'), [
    'day,workspace,model,provider,requests,rejected,unbilled,prompt_tokens,completion_tokens,cost_usd',
    '2026-01-15,open,acme/chat-small,alpha,2,0,0,2000,1000,0.004',
    '2026-01-15,open,acme/no-such-model,,0,1,0,0,0,0',
    '',
  ]);
}

async function csvFormulaChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const key = await makeKey(rig, 'open', { name: 'sheet' });
  const models = ['=1+1', '+1', '-1', '@SUM(A1)', '\t=2+2', '\r=3+3', 'acme/plain'];
  for (const model of models) t.equal((await chatOn(rig, key, { model })).status, 404, JSON.stringify(model));
  await rig.flushLog();
  const csv = await rig.call('/admin/spend.csv?workspace=open');
  t.equal(csv.status, 200);
  // What each model's field must read: an apostrophe first (the field quoted when it holds a line break).
  const fields = ["'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\t=2+2", '"\'\r=3+3"', 'acme/plain'];
  for (const field of fields) t.ok(csv.text.includes(`,open,${field},,0,1,`), `the row of ${JSON.stringify(field)}`);
  t.equal(csv.text.split('\r\n').length, models.length + 2, 'one row per model, a header and the last line break');
}

async function walletChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  await rigTraffic(rig);
  const list = await rig.call('/admin/wallets');
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
    'every workspace of the config, even without a wallet yet',
  );

  const credit = await rig.call('/admin/wallets/open/credit', { body: { usd: '5.5', note: 'invoice 42' } });
  t.equal(credit.status, 200);
  t.match(credit.body, { workspace: 'open', credited_usd: '5.5', balance_usd: '105.496', note: 'invoice 42' });
  t.equal((await rig.store.wallets.show('open', rig.clock.now())).balance, 105_496_000_000n, 'the store has it');
  const detail = await rig.call('/admin/wallets/open?limit=2');
  t.match(detail.body.ledger[0], {
    kind: 'credit',
    amount_usd: '5.5',
    note: 'invoice 42',
    trace_id: credit.body.trace_id,
  });
  t.match(detail.body.ledger[1], { kind: 'settle', amount_usd: '0.002', model: 'acme/chat-small', provider: 'alpha' });
  const older = await rig.call(`/admin/wallets/open?limit=2&before=${detail.body.ledger[1].id}`);
  t.match(older.body.ledger[0], { kind: 'hold' }, 'paging back');
  t.ok((await rig.store.wallets.verify()).ok, 'ledger verify agrees');

  t.equal((await rig.call('/admin/wallets/open/credit', { body: { usd: '5' } })).status, 400, 'a credit needs a note');
  t.equal(
    (await rig.call('/admin/wallets/open/credit', { body: { usd: '-1', note: 'n' } })).status,
    400,
    'a positive amount',
  );
  t.equal(
    (await rig.call('/admin/wallets/open/credit', { body: { usd: '0.0000000001', note: 'n' } })).status,
    400,
    'at most 9 decimals',
  );
  t.equal(
    (await rig.call('/admin/wallets/nobody/credit', { body: { usd: '1', note: 'n' } })).status,
    404,
    'a workspace of the config',
  );
  t.equal((await rig.call('/admin/wallets/nobody')).status, 404);
}

/** A credit with an `Idempotency-Key` happens once, however often or however concurrently it is sent. */
async function idempotentCreditChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const balance = async (ws: string) => (await rig.store.wallets.show(ws, rig.clock.now())).balance;
  const credits = async (ws: string) =>
    ((await rig.call(`/admin/wallets/${ws}?limit=999`)).body.ledger as { kind: string }[]).filter(
      (l) => l.kind === 'credit',
    ).length;
  const send = (ws: string, key: string | undefined, usd = '7.25', note = 'invoice 7') =>
    rig.call(`/admin/wallets/${ws}/credit`, {
      body: { usd, note },
      ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
    });
  const before = await balance('open');
  const creditsBefore = await credits('open');

  const first = await send('open', 'inv-7');
  t.equal(first.status, 200);
  t.match(first.body, { credited_usd: '7.25', replayed: false });
  t.match(first.body.trace_id, /^credit_[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const again = await send('open', 'inv-7');
  t.equal(again.status, 200, 'a repeat is answered as the first was');
  t.match(again.body, { trace_id: first.body.trace_id, credited_usd: '7.25', replayed: true });
  t.equal(again.body.balance_usd, first.body.balance_usd, 'the balance as it is: nothing added');
  t.equal(await balance('open'), before + decimalToNano('7.25'), 'credited once');
  const trail = (await rig.call('/admin/audit?limit=10')).body.entries as { action: string; detail: unknown }[];
  t.same(
    trail.filter((e) => e.action === 'wallet.credit').map((e) => e.detail),
    [
      { usd: '7.25', note: 'invoice 7', replayed: true },
      { usd: '7.25', note: 'invoice 7' },
    ],
    'the trail tells the repeat from the credit, newest first',
  );

  // Six at once with one new key: one credit, five replays, whichever store serialises them.
  const burst = await Promise.all(Array.from({ length: 6 }, () => send('open', 'inv-8', '1.5')));
  t.same(
    burst.map((r) => r.status),
    [200, 200, 200, 200, 200, 200],
  );
  t.equal(burst.filter((r) => r.body.replayed === false).length, 1, 'exactly one applied');
  t.equal(new Set(burst.map((r) => r.body.trace_id)).size, 1, 'one trace id');
  t.equal(await balance('open'), before + decimalToNano('8.75'), 'the burst credited 1.5 once');
  t.equal(await credits('open'), creditsBefore + 2, 'two credit rows in the ledger');

  // The key names one credit: another amount or note under it is refused and changes nothing.
  const otherAmount = await send('open', 'inv-7', '9');
  t.equal(otherAmount.status, 409);
  t.equal(otherAmount.body.error.code, 'idempotency_key_reused');
  t.match(otherAmount.body.error.message, /already credited 7\.25 USD to open with the note "invoice 7"/);
  t.equal((await send('open', 'inv-7', '7.25', 'another note')).status, 409, 'another note');
  t.equal(await balance('open'), before + decimalToNano('8.75'), 'nothing changed');

  // Keys are per workspace; without a key every credit is applied.
  const cheapBefore = await balance('cheap');
  const elsewhere = await send('cheap', 'inv-7');
  t.match(elsewhere.body, { replayed: false });
  t.not(elsewhere.body.trace_id, first.body.trace_id);
  await send('cheap', undefined, '1');
  await send('cheap', undefined, '1');
  t.equal(await balance('cheap'), cheapBefore + decimalToNano('9.25'), 'two keyless credits, both applied');

  for (const bad of ['', 'a b', 'x'.repeat(256), 'a\u00e9b']) {
    const r = await rig.call('/admin/wallets/open/credit', {
      body: { usd: '1', note: 'n' },
      headers: { 'idempotency-key': bad },
    });
    t.equal(r.status, 400, `refused key ${JSON.stringify(bad.slice(0, 20))}`);
    t.match(r.body.error.message, /^Idempotency-Key: /);
  }
  t.equal(await balance('open'), before + decimalToNano('8.75'), 'no refused key credited');
  t.ok((await rig.store.wallets.verify()).ok, 'ledger verify agrees');
}

async function keyChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  await rig.store.wallets.credit('open', decimalToNano('10'), 'test credit');
  const created = await rig.call('/admin/keys', { body: { workspace: 'open', name: 'console-made', rpm: 60 } });
  t.equal(created.status, 201);
  t.match(created.body, { workspace: 'open', name: 'console-made', rpm: 60, state: 'active', expires_at: null });
  t.match(created.body.key, /^sk-pi-[A-Za-z0-9_-]{43}$/, 'the key, this once');
  const key = created.body.key as string;
  const id = created.body.id as string;
  const listed = await rig.call('/admin/keys?workspace=open');
  t.same(
    listed.body.keys.map((k: { id: string }) => k.id),
    [id],
  );
  t.ok(
    listed.body.keys.some((k: { id: string }) => k.id === id),
    'listed',
  );
  t.notOk(listed.text.includes(key), 'the list never shows the key');
  t.equal(await keyStatus(rig, key, 200), 200, 'the new key works');

  // A past expiry is refused (test/console/find-requests.test.ts); one that then passes expires the key.
  const expiring = await rig.call(`/admin/keys/${id}/expiry`, { body: { expires_at: '2026-01-15T13:00:00Z' } });
  t.match(expiring.body, { state: 'active', expires_at: '2026-01-15T13:00:00.000Z' });
  rig.clock.advance(2 * 3_600_000);
  t.match((await rig.call('/admin/keys?workspace=open')).body.keys[0], { id, state: 'expired' });
  t.equal(await keyStatus(rig, key, 401), 401, `an expired key is refused${rig.keyChangesAtOnce ? ' at once' : ''}`);
  const revived = await rig.call(`/admin/keys/${id}/expiry`, { body: { expires_at: null } });
  t.match(revived.body, { state: 'active', expires_at: null });
  t.equal(await keyStatus(rig, key, 200), 200, 'cleared expiry: works again');
  const revoked = await rig.call(`/admin/keys/${id}/revoke`, { body: {} });
  t.match(revoked.body, { state: 'revoked', changed: true });
  t.equal(await keyStatus(rig, key, 401), 401, 'revoked');
  t.match(
    (await rig.call(`/admin/keys/${id}/revoke`, { body: {} })).body,
    { changed: false },
    'revoking twice changes nothing',
  );
  t.equal(
    (await rig.call(`/admin/keys/${id}/expiry`, { body: { expires_at: null } })).status,
    400,
    'a revoked key stays revoked',
  );
  t.equal((await rig.call('/admin/keys', { body: { workspace: 'nobody' } })).status, 400);
  t.equal((await rig.call('/admin/keys', { body: { workspace: 'open', expires_at: 'soon' } })).status, 400);
  t.equal((await rig.call('/admin/keys/key_nope/revoke', { body: {} })).status, 404);
}

async function routePreviewChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const key = await makeKey(rig, 'cheap');
  await rig.store.wallets.credit('cheap', decimalToNano('10'), 'test credit');
  const preview = await rig.call('/admin/route-preview', { body: { workspace: 'cheap', model: 'acme/chat-small' } });
  t.equal(preview.status, 200);
  t.equal(preview.body.ordering, 'price', 'the workspace sorts by price');
  const [model] = preview.body.models;
  t.equal(model.model, 'acme/chat-small');
  const order = model.deployments.map((d: { deployment: string }) => d.deployment) as string[];
  t.ok(order.length >= 2, `several deployments: ${order.join(', ')}`);
  t.notOk(order.includes('gcp/chat-small'), 'an inactive deployment is not offered');
  const prices = model.deployments.map(
    (d: { price: { prompt_usd_per_mtok: string; completion_usd_per_mtok: string } }) =>
      Number(d.price.prompt_usd_per_mtok) + Number(d.price.completion_usd_per_mtok),
  );
  t.same(
    prices,
    [...prices].sort((a, b) => a - b),
    'cheapest first',
  );
  t.ok(
    model.funnel.some((st: { stage: string }) => st.stage === 'available'),
    'the funnel is there',
  );
  const gcp = model.funnel
    .flatMap((st: { removed: { provider: string; reason: string }[] }) => st.removed)
    .find((r: { provider: string }) => r.provider === 'gcp');
  t.match(gcp, { provider: 'gcp', reason: /inactive/ }, 'why gcp was filtered');

  // The first choice fails once (503) before its first byte: the gateway fails over to the second.
  const first = model.deployments[0];
  rig.sim.script(first.upstream_model, { status: 503 }, 1);
  const r = await chatOn(rig, key, { model: 'acme/chat-small' });
  t.equal(r.status, 200);
  const detail = (await rig.call(`/admin/requests/${r.trace}`)).body;
  t.same(
    detail.attempt_list.map((a: { deployment: string; outcome: string }) => [a.deployment, a.outcome]),
    [
      [order[0], 'status_503'],
      [order[1], 'ok'],
    ],
    'the attempts follow the preview',
  );
  t.equal(detail.deployment, order[1]);

  const health = await rig.call('/admin/health');
  const failed = health.body.deployments.find((d: { id: string }) => d.id === order[0]);
  t.match(
    failed,
    { breaker: { state: 'closed', consecutive_failures: 1 }, recent: { attempts: 1, failures: 1, failure_rate: 1 } },
    'health shows the failure',
  );
  t.ok(failed.breaker.error_rate > 0);
  const served = health.body.deployments.find((d: { id: string }) => d.id === order[1]);
  t.match(served, { recent: { attempts: 1, failures: 0, failure_rate: 0 }, callable: true });
  t.equal(typeof served.recent.ttfb_p50_ms, 'number', 'time to first byte');
  t.equal(health.body.config.hash, rig.config.sourceHash);
  t.equal(health.body.state, 'ready');
  t.equal(health.body.last_reload, null);

  const pinned = await rig.call('/admin/route-preview', {
    body: { workspace: 'open', model: 'acme/chat-small', provider: { only: ['zeta'] } },
  });
  t.same(
    pinned.body.models[0].deployments.map((d: { deployment: string }) => d.deployment),
    ['zeta/chat-small'],
    'provider preferences apply',
  );
  const none = await rig.call('/admin/route-preview', {
    body: { workspace: 'open', model: 'acme/chat-small', provider: { only: ['gcp'] } },
  });
  t.equal(none.body.eligible, false, 'nothing eligible');
  t.same(none.body.models[0].deployments, []);
  const last = none.body.models[0].funnel.at(-1);
  t.equal(last.remaining, 0, 'the funnel ends at zero, as no_eligible_provider carries it');
  t.equal(
    (await rig.call('/admin/route-preview', { body: { workspace: 'open', model: 'acme/nope' } })).status,
    404,
    'an unknown model',
  );
  t.equal(
    (await rig.call('/admin/route-preview', { body: { workspace: 'nobody', model: 'acme/chat-small' } })).status,
    400,
  );
  t.equal(
    (
      await rig.call('/admin/route-preview', {
        body: { workspace: 'open', model: 'acme/chat-small', provider: { sort: 'fastest-ever' } },
      })
    ).status,
    422,
    'bad preferences: the router refuses them',
  );
  t.equal(rig.sim.requests.length, 2, 'previews called no upstream: only the two attempts reached the simulator');
}

async function tokenChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const k = await rigTraffic(rig);
  for (const [method, path, body] of ENDPOINTS) {
    // A new minute for each endpoint: wrong tokens are limited per minute (admin-listener-security.test.ts).
    rig.clock.advance(60_000);
    for (const token of [null, 'wrong', `${TOKEN}x`, TOKEN.slice(0, -1)]) {
      const r = await rig.call(path, { method, body, token });
      t.equal(r.status, 401, `${method} ${path} with ${token === null ? 'no token' : 'a wrong token'}: 401`);
      t.equal(r.body?.error?.code, 'unauthorized');
    }
  }
  const cookieOnly = await fetch(`${rig.adminUrl}/admin/requests`, {
    headers: { cookie: `pi_console_${new URL(rig.adminUrl).port}=forged` },
  });
  t.equal(cookieOnly.status, 401, 'a forged session cookie');

  const secrets = [
    TOKEN,
    k.openKey,
    k.cheapKey,
    PROMPT_MARK,
    ...rig.config.resources.map((r) => `upstream-secret-${r.credential}`),
  ];
  const texts: string[] = [];
  for (const [method, path, body] of ENDPOINTS) texts.push((await rig.call(path, { method, body })).text);
  for (const trace of Object.values(k.traces)) texts.push((await rig.call(`/admin/requests/${trace}`)).text);
  texts.push((await rig.call('/admin/wallets/open')).text, (await rig.call('/admin/keys')).text);
  for (const text of texts)
    for (const secret of secrets) t.notOk(text.includes(secret), `no ${secret.slice(0, 12)}… in an answer`);
}

async function healthChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const k = await rigTraffic(rig);
  const health = await rig.call('/admin/health');
  t.equal(health.status, 200);
  t.equal(health.body.state, 'ready');
  const alpha = health.body.deployments.find((d: { id: string }) => d.id === 'alpha/chat-small');
  t.ok(alpha.recent.attempts >= 2, 'recent attempts from the request log');
  t.equal((await rig.call('/admin/meta')).status, 200);
  t.equal((await rig.call('/admin/requests', { token: 'wrong' })).status, 401);
  t.equal((await rig.call('/admin/requests', { token: null })).status, 401);
  const texts = [
    (await rig.call('/admin/requests')).text,
    (await rig.call('/admin/keys')).text,
    (await rig.call(`/admin/requests/${k.traces.small1}`)).text,
  ];
  for (const text of texts)
    for (const secret of [TOKEN, k.openKey, PROMPT_MARK]) t.notOk(text.includes(secret), 'no secret in an answer');
}

async function sessionChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const port = new URL(rig.adminUrl).port;
  const wrong = await postLogin(rig.adminUrl, { token: 'not-it' });
  t.equal(wrong.status, 401, 'wrong token');
  t.equal(wrong.headers.get('set-cookie'), null, 'no cookie');
  t.match(await wrong.text(), /not the operator token/);
  const ok = await postLogin(rig.adminUrl, { token: TOKEN });
  t.equal(ok.status, 303);
  t.equal(ok.headers.get('location'), '/console');
  const cookie = ok.headers.get('set-cookie') ?? '';
  t.match(
    cookie,
    new RegExp(`^pi_console_${port}=[A-Za-z0-9_-]{43}; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200$`),
  );
  const session = cookie.split(';')[0] as string;
  t.equal(
    (await fetch(`${rig.adminUrl}/admin/meta`, { headers: { cookie: session } })).status,
    200,
    'the session reads',
  );
  const handOver = await fetch(`${rig.adminUrl}/console/session`, {
    headers: { cookie: session, 'x-pi-console': '1' },
  });
  const { secret } = (await handOver.json()) as { secret: string };
  const post = (headers: Record<string, string>) =>
    fetch(`${rig.adminUrl}/admin/route-preview`, {
      method: 'POST',
      headers: { cookie: session, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ workspace: 'open', model: 'acme/chat-small' }),
    });
  t.equal((await post({})).status, 403, 'a cookie-authenticated post without the secret');
  t.equal((await post({ 'x-pi-console': '1' })).status, 403, 'the old constant header is not enough');
  t.equal((await post({ 'x-pi-console-secret': secret })).status, 200, 'with the secret');
  const shell = await fetch(`${rig.adminUrl}/console`, { headers: { cookie: session } });
  t.match(shell.headers.get('content-security-policy') ?? '', /script-src 'self'/);
  const out = await fetch(`${rig.adminUrl}/console/logout`, {
    method: 'POST',
    headers: { cookie: session, 'x-pi-console-secret': secret },
  });
  t.equal(out.status, 200);
  t.match(out.headers.get('set-cookie') ?? '', /Max-Age=0/);
  t.equal((await fetch(`${rig.adminUrl}/admin/meta`, { headers: { cookie: session } })).status, 401, 'signed out');
}

async function seriesChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  await rig.appendLog(seriesRows());
  const hourly = await rig.call(SERIES_QUERY);
  t.equal(hourly.status, 200, hourly.text);
  t.match(hourly.body, { interval: 'hour', by: 'total', percentiles: 'nearest-rank' });
  t.same(hourly.body.buckets, ['2026-01-14T09:00:00.000Z', '2026-01-14T10:00:00.000Z']);
  t.same(hourly.body.series, [SERIES_TOTAL], 'exact counts, percentiles and nano-USD sums');

  const byModel = await rig.call(`${SERIES_QUERY}&by=model`);
  t.same(
    byModel.body.series.map((x: AdminBody) => [x.key, x.requests, x.rejected, x.p50_ms, x.p95_ms, x.total_cost_usd]),
    [
      ['acme/chat-small', [10, 0], [1, 0], [600, null], [5000, null], '1.23456789'],
      ['acme/chat-big', [0, 3], [0, 0], [null, 60], [null, 70], '0.000000003'],
    ],
    'one series per model, largest cost first, every bucket present',
  );
  const byProvider = await rig.call(`${SERIES_QUERY}&by=provider`);
  t.same(
    byProvider.body.series.map((x: AdminBody) => x.key),
    ['alpha', 'beta', ''],
    'the refused and failed requests have no provider (and no cost: last)',
  );

  const daily = await rig.call('/admin/spend/series?workspace=slow&interval=day&from=2026-01-14&to=2026-01-15');
  t.same(daily.body.buckets, ['2026-01-14T00:00:00.000Z']);
  t.match(daily.body.series[0], {
    requests: [13],
    rejected: [1],
    unbilled: [1],
    errors: [1],
    // 14 requests not rejected: 50, 60, 70, 100 … 1000, 5000 — the 7th and the 14th.
    p50_ms: [400],
    p95_ms: [5000],
    cost_usd: ['1.234567893'],
  });

  const dflt = await rig.call('/admin/spend/series');
  t.equal(dflt.body.interval, 'day', 'thirty days by default: daily');
  t.equal(dflt.body.buckets.length, 30);
  t.equal(dflt.body.series[0].requests[29], 0, 'an empty day is there, at zero');
  t.same(dflt.body.series[0].p50_ms[29], null);
  const short = await rig.call('/admin/spend/series?from=2026-01-15&to=2026-01-16');
  t.equal(short.body.interval, 'hour', 'a day or two: hourly');
  t.equal(short.body.buckets.length, 24);

  t.equal((await rig.call('/admin/spend/series?interval=minute')).status, 400, 'an unknown interval');
  t.equal((await rig.call('/admin/spend/series?by=key')).status, 400, 'an unknown grouping');
  const long = await rig.call('/admin/spend/series?interval=hour&from=2025-11-01&to=2026-01-16');
  t.equal(long.status, 400, 'too many buckets');
  t.match(long.body.error.message, /at most 1000/);
}

async function perKeyChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const k = await rigTraffic(rig);
  const now = rig.clock.now();
  const soon = await rig.store.apiKeys.create({
    workspace: 'open',
    name: 'expires-soon',
    expiresAt: now + 3 * 86_400_000,
  });
  await rig.store.apiKeys.create({ workspace: 'open', name: 'expires-later', expiresAt: now + 10 * 86_400_000 });
  await rig.store.apiKeys.create({ workspace: 'open', name: 'already-expired', expiresAt: now - 1 });

  const perKey = await rig.call('/admin/spend/keys?from=2026-01-15&to=2026-01-16');
  t.equal(perKey.status, 200);
  const backend = perKey.body.keys.find((x: AdminBody) => x.name === 'backend');
  const backendSpend = {
    name: 'backend',
    workspace: 'open',
    state: 'active',
    expires_at: null,
    requests: 2,
    rejected: 1,
    unbilled: 0,
    cost_usd: '0.004',
    prompt_tokens: 2000,
    completion_tokens: 1000,
    last_used_at: '2026-01-15T12:00:00.000Z',
  };
  t.same(
    { ...backend, id: undefined, prefix: undefined },
    { id: undefined, prefix: undefined, ...backendSpend },
    'billed requests, the refused one apart, exact cost, last use',
  );
  t.match(backend, backendSpend, 'billed requests, the refused one apart, exact cost, last use (match)');
  t.notOk(perKey.text.includes(k.openKey), 'no key in the answer');
  t.same(perKey.body.keys.map((x: AdminBody) => x.name).slice(0, 2), ['backend', 'batch'], 'largest cost first');
  const unused = perKey.body.keys.find((x: AdminBody) => x.name === 'expires-soon');
  t.match(unused, { requests: 0, rejected: 0, cost_usd: '0', last_used_at: null }, 'a key never used');

  // A day later the cheap key is used again: its last use moves, the first day's spend does not.
  rig.clock.advance(86_400_000);
  await chatOn(rig, k.cheapKey, { model: 'acme/chat-small' });
  const later = await rig.call('/admin/spend/keys?from=2026-01-15&to=2026-01-16&workspace=cheap');
  t.same(
    later.body.keys.map((x: AdminBody) => [x.name, x.requests, x.last_used_at]),
    [['batch', 1, '2026-01-16T12:00:00.000Z']],
    'last use is the latest request at any time; the range narrows only the spend',
  );
  rig.clock.set(now);

  const cheap = await rig.store.wallets.show('cheap', now);
  const warnings = await rig.call('/admin/warnings');
  t.equal(warnings.status, 200);
  t.same(warnings.body.low_balance, [
    {
      workspace: 'cheap',
      name: 'Cheapest first',
      available_usd: nanoToDecimal(cheap.available),
      low_balance_usd: '25',
    },
  ]);
  t.same(
    warnings.body.low_balance.map((w: AdminBody) => [w.workspace, w.low_balance_usd]),
    [['cheap', '25']],
  );
  t.same(
    warnings.body.keys_expiring.map((x: AdminBody) => [x.id, x.name, x.expires_at, x.expires_in_hours]),
    [[soon.id, 'expires-soon', '2026-01-18T12:00:00.000Z', 72]],
    'an active key expiring within 7 days; not the later one, not the expired one',
  );
  t.equal((await rig.call('/admin/warnings?days=30')).body.keys_expiring.length, 2, 'a wider window');
  t.equal((await rig.call('/admin/warnings?days=0')).status, 400);
  const wallets = (await rig.call('/admin/wallets')).body.wallets;
  t.match(
    wallets.find((w: AdminBody) => w.workspace === 'cheap'),
    { low_balance_usd: '25', low_balance: true },
  );
  t.match(
    wallets.find((w: AdminBody) => w.workspace === 'strict'),
    { low_balance_usd: null, low_balance: false },
    'no threshold, no warning',
  );
  // Exactly at the threshold is not below it.
  await rig.store.wallets.credit('cheap', decimalToNano('25') - cheap.available, 'to the threshold');
  t.same((await rig.call('/admin/warnings')).body.low_balance, [], 'at the threshold: no warning');
}

async function usageChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const k = await rigTraffic(rig);
  // One the upstream fails (every attempt 503): logged, neither billed nor rejected.
  rig.sim.script('small-v1', { status: 503 }, 5);
  const failed = await chatOn(rig, k.openKey, { model: 'acme/chat-small', provider: { only: ['alpha'] } });
  t.equal(failed.status >= 500, true, `the upstream failure answered ${failed.status}`);
  // And one with an unknown key: refused before anything, no workspace.
  t.equal((await chatOn(rig, 'sk-pi-not-a-key', { model: 'acme/chat-small' })).status, 401);
  await rig.flushLog();

  const env = { ...rig.cliEnv, PI_CONFIG: 'test/fixtures/config/gateway' };
  for (const ws of ['open', 'cheap']) {
    const cli = await cliInProcess(
      ['usage', '--workspace', ws, '--since', '2026-01-15', '--until', '2026-01-16', '--json'],
      env,
    );
    t.equal(cli.code, 0, cli.stderr);
    const usage = JSON.parse(cli.stdout);
    const spend = (await rig.call(`/admin/spend?workspace=${ws}&from=2026-01-15&to=2026-01-16`)).body;
    t.equal(spend.total.requests, usage.requests, `${ws}: the same requests as the CLI (${usage.requests})`);
    t.equal(spend.total.cost_usd, usage.total_usd, `${ws}: the same cost, to the nano-dollar`);
    for (const l of usage.lines) {
      const byModel = spend.by_model.find((x: AdminBody) => x.key === l.model);
      const byProvider = spend.by_provider.find((x: AdminBody) => x.key === l.provider);
      t.same([byModel.requests, byModel.cost_usd], [l.requests, l.cost_usd], `${ws} ${l.model}`);
      t.same([byProvider.requests, byProvider.cost_usd], [l.requests, l.cost_usd], `${ws} ${l.provider}`);
    }
    if (ws === 'open') t.match(spend.total, { requests: 2, rejected: 1, unbilled: 1 }, 'open: the rest apart');
  }
  const all = (await rig.call('/admin/spend?from=2026-01-15&to=2026-01-16')).body.total;
  t.match(all, { requests: 3, rejected: 2, unbilled: 1 }, 'every logged request in one of the three');
}

/** Path segments that are not percent-encoded UTF-8: a lone `%`, a cut-off sequence, a lone surrogate. */
const BAD_SEGMENTS = ['%', '%E0%A4', '%ED%A0%80', 'a%zz'];

async function malformedInputChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  await rigTraffic(rig);
  const ledgerBefore = (await rig.call('/admin/wallets/open?limit=999')).body.ledger.length;
  for (const seg of BAD_SEGMENTS) {
    const calls: [string, unknown?][] = [
      [`/admin/requests/${seg}`],
      [`/admin/wallets/${seg}`],
      [`/admin/wallets/${seg}/credit`, { usd: '1', note: 'x' }],
      [`/admin/keys/${seg}/revoke`, {}],
      [`/admin/keys/${seg}/expiry`, { expires_at: null }],
    ];
    for (const [path, body] of calls) {
      const r = await rig.call(path, body === undefined ? {} : { body });
      t.equal(r.status, 400, `${path}: 400`);
      t.match(r.body, { error: { code: 'invalid_request', message: /percent-encoded/ } }, `${path}: says why`);
    }
  }
  t.equal((await rig.call('/admin/wallets/open?limit=999')).body.ledger.length, ledgerBefore, 'no credit was written');
  const audit = await rig.call('/admin/audit?limit=500');
  t.ok(
    audit.body.entries.some(
      (e: { action: string; target: string; outcome: string }) =>
        e.action === 'wallet.credit' && e.target === '%' && e.outcome === 'refused: invalid_request',
    ),
    'a refused write still enters the audit trail, its target as sent',
  );
}

async function methodChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const wrong: [string, string, string][] = [
    ['PUT', '/admin/requests', 'GET'],
    ['DELETE', '/admin/keys', 'GET, POST'],
    ['PATCH', '/admin/wallets', 'GET'],
    ['POST', '/admin/requests', 'GET'],
    ['POST', '/admin/requests/some-trace', 'GET'],
    ['GET', '/admin/keys/key_x/revoke', 'POST'],
    ['GET', '/admin/wallets/open/credit', 'POST'],
    ['DELETE', '/admin/reload', 'POST'],
  ];
  for (const [method, path, allow] of wrong) {
    const r = await rig.call(path, { method });
    t.equal(r.status, 405, `${method} ${path}: 405`);
    t.equal(r.headers.get('allow'), allow, `${method} ${path}: Allow: ${allow}`);
    t.match(r.body, { error: { code: 'method_not_allowed', message: /use/ } }, `${method} ${path}: says which`);
  }
  const head = await rig.call('/admin/requests', { method: 'HEAD' });
  t.equal(head.status, 405, 'HEAD on a GET route: 405 (its answers are not cached nor probed)');
  t.equal(head.headers.get('allow'), 'GET');
  for (const method of ['PUT', 'POST', 'DELETE']) {
    const r = await rig.call('/admin/nope', { method });
    t.equal(r.status, 404, `${method} on an unknown admin path: 404`);
    t.match(r.body, { error: { code: 'not_found' } }, `${method} on an unknown admin path: the console's error`);
  }
  const anon = await rig.call('/admin/keys', { method: 'DELETE', token: null });
  t.equal(anon.status, 401, 'without credentials a wrong method is a 401 like any other admin call');
}

async function wholeKeyPathChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const k = await rigTraffic(rig);
  const calls: [string, unknown?][] = [
    [`/admin/keys/${k.openKey}/revoke`, {}],
    [`/admin/keys/${k.openKey}/expiry`, { expires_at: null }],
    [`/admin/requests/${k.openKey}`],
    [`/admin/wallets/${k.openKey}`],
    [`/admin/keys/%20${k.openKey}/revoke`, {}],
  ];
  for (const [path, body] of calls) {
    const r = await rig.call(path, body === undefined ? {} : { body });
    t.equal(r.status, 400, `${path.slice(0, 20)}…: 400`);
    t.match(r.body, { error: { code: 'whole_key', message: /secret/ } }, `${path.slice(0, 20)}…: says why`);
    t.notOk(r.text.includes(k.openKey), `${path.slice(0, 20)}…: the key is not in the answer`);
  }
  const audit = await rig.call('/admin/audit?limit=500');
  const refused = audit.body.entries.filter(
    (e: { action: string; outcome: string }) => e.action === 'key.revoke' && e.outcome === 'refused: whole_key',
  );
  t.equal(refused.length, 2, 'the refused revokes are in the audit trail');
  t.notOk(audit.text.includes(k.openKey), 'the key is not in the audit trail');
  t.equal(await keyStatus(rig, k.openKey, 200), 200, 'the key still works: nothing was revoked');
}

async function wholeKeyInTextChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const k = await rigTraffic(rig);
  const ledger = async (): Promise<number> => (await rig.call('/admin/wallets/open?limit=999')).body.ledger.length;
  const keys = async (): Promise<number> => (await rig.call('/admin/keys')).body.keys.length;
  const [ledgerBefore, keysBefore] = [await ledger(), await keys()];
  const writes: [string, Record<string, unknown>][] = [
    ['/admin/wallets/open/credit', { usd: '1', note: `refund for ${k.openKey}, see ticket 7` }],
    ['/admin/wallets/open/credit', { usd: '1', note: k.openKey }],
    ['/admin/keys', { workspace: 'open', name: `replaces ${k.cheapKey}` }],
    // Across the audit entry's 200-character cut, and next to characters a key has itself.
    ['/admin/wallets/open/credit', { usd: '1', note: `${'x'.repeat(170)} ${k.openKey}` }],
    ['/admin/wallets/open/credit', { usd: '1', note: `refund-${k.openKey}_x` }],
  ];
  for (const [path, body] of writes) {
    const r = await rig.call(path, { body });
    t.equal(r.status, 400, `${path}: 400`);
    t.match(r.body, { error: { code: 'whole_key', message: /secret/ } }, `${path}: says why`);
    t.notOk(r.text.includes(k.openKey) || r.text.includes(k.cheapKey), `${path}: the key is not in the answer`);
  }
  t.equal(await ledger(), ledgerBefore, 'no credit written');
  t.equal(await keys(), keysBefore, 'no key created');
  const audit = await rig.call('/admin/audit?limit=500');
  t.equal(
    audit.body.entries.filter((e: { outcome: string }) => e.outcome === 'refused: whole_key').length,
    5,
    'the refusals are in the audit trail',
  );
  t.notOk(audit.text.includes(k.openKey) || audit.text.includes(k.cheapKey), 'the keys are not in the audit trail');
  for (const key of [k.openKey, k.cheapKey])
    t.notOk(audit.text.includes(key.slice(14, 24)), 'nor any part of a key past its shown prefix');
  t.match(audit.text, new RegExp(`refund for ${k.openKey.slice(0, 14)}…`), 'the note is kept with the key cut');
  // A key's prefix is not a whole key.
  const prefix = await rig.call('/admin/wallets/open/credit', {
    body: { usd: '1', note: `refund for ${k.openKey.slice(0, 14)}` },
  });
  t.equal(prefix.status, 200, 'a note naming a key by its prefix is taken');
  t.equal(await keyStatus(rig, k.openKey, 200), 200, 'the keys still work');
}

async function unkeepableTextChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  await rigTraffic(rig);
  const ledger = async (): Promise<number> => (await rig.call('/admin/wallets/open?limit=999')).body.ledger.length;
  const keys = async (): Promise<number> => (await rig.call('/admin/keys')).body.keys.length;
  const [ledgerBefore, keysBefore] = [await ledger(), await keys()];
  const writes: [string, Record<string, unknown>][] = [
    ['/admin/wallets/open/credit', { usd: '1', note: 'invoice\u0000 7' }],
    ['/admin/wallets/open/credit', { usd: '1', note: 'invoice \ud800' }],
    ['/admin/wallets/open/credit', { usd: '1', note: '\udc00 invoice' }],
    ['/admin/keys', { workspace: 'open', name: 'batch \ud800' }],
    ['/admin/keys', { workspace: 'open\u0000' }],
  ];
  for (const [path, body] of writes) {
    const r = await rig.call(path, { body });
    t.equal(r.status, 400, `${path} ${JSON.stringify(body)}: 400`);
    t.match(r.body, { error: { code: 'invalid_request', message: /NUL or a lone surrogate/ } }, 'says why');
  }
  const notUtf8 = Buffer.concat([Buffer.from('{"usd":"1","note":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
  const res = await fetch(`${rig.adminUrl}/admin/wallets/open/credit`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: notUtf8,
  });
  t.equal(res.status, 400, 'a body that is not UTF-8: 400');
  t.match(await res.json(), { error: { code: 'invalid_request', message: /UTF-8/ } });
  t.equal(await ledger(), ledgerBefore, 'no credit was written');
  t.equal(await keys(), keysBefore, 'no key was made');
}

async function repeatedFieldChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  await rigTraffic(rig);
  for (const path of [
    '/admin/requests?workspace=open&workspace=cheap',
    '/admin/requests?limit=1&limit=2',
    '/admin/spend?from=2026-01-01&from=2026-01-10',
    '/admin/spend.csv?model=acme/chat-small&model=acme/chat-small',
    '/admin/keys?workspace=open&workspace=cheap',
    '/admin/wallets/open?before=9&before=3',
    '/admin/audit?limit=5&limit=6',
  ]) {
    const r = await rig.call(path);
    t.equal(r.status, 400, `${path}: 400`);
    t.match(r.body, { error: { code: 'invalid_request', message: /given twice/ } }, `${path}: says which`);
  }
  const blank = await rig.call('/admin/requests?workspace=cheap&workspace=');
  t.equal(blank.status, 200, 'an empty repeat is absent, as any empty field');
  t.equal(blank.body.requests.length, 1, 'the one given filters');
}

async function duplicateKeyChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  await rigTraffic(rig);
  const ledger = async (): Promise<number> => (await rig.call('/admin/wallets/open?limit=999')).body.ledger.length;
  const keys = async (): Promise<number> => (await rig.call('/admin/keys')).body.keys.length;
  const [ledgerBefore, keysBefore] = [await ledger(), await keys()];
  const post = async (path: string, text: string) => {
    const res = await fetch(`${rig.adminUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: text,
    });
    return { status: res.status, body: (await res.json()) as AdminBody };
  };
  const twice: [string, string, string][] = [
    ['/admin/wallets/open/credit', '{"usd":"1","note":"grant","usd":"1000"}', 'usd'],
    ['/admin/wallets/open/credit', '{"usd":"1","note":"a","no\\u0074e":"b"}', 'note'],
    ['/admin/keys', '{"workspace":"open", "workspace" :"cheap"}', 'workspace'],
    [
      '/admin/route-preview',
      '{"workspace":"open","model":"acme/chat-small","provider":{"only":["alpha"],"only":["beta"]}}',
      'only',
    ],
  ];
  for (const [path, text, field] of twice) {
    const r = await post(path, text);
    t.equal(r.status, 400, `${text}: 400`);
    t.match(r.body, { error: { code: 'invalid_request', message: `"${field}" twice` } }, `${text}: names it`);
  }
  const same = await post('/admin/wallets/open/credit', '{"usd":"1","note":"{\\"usd\\":1,\\"usd\\":2}"}');
  t.equal(same.status, 200, 'keys inside a string value are text, not fields');
  t.equal(await ledger(), ledgerBefore + 1, 'only that credit was written');
  t.equal(await keys(), keysBefore, 'no key was made');
  const deep = await post('/admin/route-preview', `${'['.repeat(32_000)}${']'.repeat(32_000)}`);
  t.equal(deep.status, 400, 'a body nested 32,000 deep: 400, no stack overflow');
}

async function bucketLimitChecks(t: Test, make: Make): Promise<void> {
  const rig = await make(t);
  const byDay = await rig.call('/admin/spend/series?from=2020-01-01&to=2026-01-01&interval=day');
  t.equal(byDay.status, 400);
  t.match(byDay.body, { error: { code: 'invalid_request', message: /2192 days; ask for at most 1000/ } });
  t.notMatch(byDay.body.error.message, /interval=day/, 'does not suggest the interval already asked');
  const byHour = await rig.call('/admin/spend/series?from=2025-01-01&to=2026-01-01&interval=hour');
  t.equal(byHour.status, 400);
  t.match(byHour.body.error.message, /8760 hours; .*interval=day/, 'hourly: suggests days');
}
