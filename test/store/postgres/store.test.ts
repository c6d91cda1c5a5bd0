// The PostgreSQL store against a private postgres (test/helpers/pg.ts): migrations and the schema
// check, keys, sealed secrets, credits, holds exact under concurrency (one atomic statement each),
// settle/release idempotent per trace, the hold lease (renew, sweep) on an injected clock, ledger
// verify of a lapsed lease, the request log (what verify proves on both stores:
// test/store/ledger-verify-stores.test.ts).
import t from 'tap';
import type { Test } from 'tap';
import { PgWalletService } from '../../../src/fleet/pg-wallet-service.ts';
import { ManualClock } from '../../../src/clock.ts';
import { openPgStore, type PgStore } from '../../../src/store/postgres/store.ts';
import type { RequestLogRow } from '../../../src/store/types.ts';
import { logRow } from '../../helpers/log-rows.ts';
import { startPrivatePg, type PrivatePg } from '../../helpers/pg.ts';
import { masterKey } from '../sqlite/fixtures/temp-db.ts';

let server: PrivatePg;
t.before(async () => {
  server = await startPrivatePg();
});
t.teardown(() => server.destroy());

const clock = new ManualClock(Date.UTC(2026, 0, 1));

async function fresh(t: Test, opts: { key?: string } = {}): Promise<PgStore> {
  const url = await server.createDatabase();
  const m = await openPgStore(url, { clock, checkSchema: false, masterKey: opts.key ?? masterKey(1) });
  await m.migrate();
  await m.close();
  const s = await openPgStore(url, { clock, masterKey: opts.key ?? masterKey(1), requestLog: { flushIntervalMs: 5 } });
  t.teardown(() => s.close());
  return s;
}

t.test('serve-time schema check: an unmigrated database is refused with the command that fixes it', async (t) => {
  t.equal(server.runsAs.length > 0, true, `postgres runs as ${server.runsAs}`);
  const url = await server.createDatabase();
  await t.rejects(openPgStore(url), { message: /no pi-gateway schema; run `pi-gateway migrate --db URL`/ });
  const m = await openPgStore(url, { checkSchema: false });
  t.same(await m.migrate(), [1, 2, 3, 4]);
  t.same(await m.migrate(), [], 'a second migrate finds nothing to do');
  await m.close();
  const s = await openPgStore(url);
  t.same(await s.schemaVersion(), { current: 4, latest: 4 });
  await s.close();
  await t.rejects(openPgStore('postgres://pigw@127.0.0.1:1/none'), { message: /PostgreSQL is unreachable/ });
});

t.test('keys: create, verify, list, revoke; the change counter moves', async (t) => {
  const s = await fresh(t);
  const v0 = await s.changeVersion();
  const k = await s.apiKeys.create({ workspace: 'w', name: 'n', rpm: 5 });
  t.ok((await s.changeVersion()) > v0);
  t.match(await s.apiKeys.verify(k.key, clock.now()), { status: 'ok', key: { id: k.id, workspace: 'w', rpm: 5 } });
  t.same(await s.apiKeys.verify('sk-pi-' + 'x'.repeat(43), clock.now()), { status: 'not_found' });
  t.same(await s.apiKeys.verify('nope', clock.now()), { status: 'invalid' });
  t.equal((await s.apiKeys.list('w')).length, 1);
  t.equal(await s.apiKeys.revoke(k.id), true);
  t.equal(await s.apiKeys.revoke(k.id), false);
  t.same(await s.apiKeys.verify(k.key, clock.now()), { status: 'revoked' });
  const e = await s.apiKeys.create({ workspace: 'w', expiresAt: clock.now() + 10 });
  t.same(await s.apiKeys.verify(e.key, clock.now() + 10), { status: 'expired' });
});

t.test('secrets: sealed under the master key, one key per database, rotation', async (t) => {
  const s = await fresh(t);
  await s.secrets.set('openai', 'sk-upstream');
  t.same(
    (await s.secrets.list()).map((x) => x.name),
    ['openai'],
  );
  const all = await s.secrets.revealAll();
  t.same(all.get('openai'), { value: 'sk-upstream' });
  await s.secrets.assertUsable();
  const raw = await s.pool.query<{ ciphertext: Buffer }>('SELECT ciphertext FROM secrets');
  t.notOk(raw.rows[0]?.ciphertext.toString().includes('sk-upstream'), 'stored sealed');
  const r = await s.secrets.rotateMaster(masterKey(2));
  t.same(r.resealed, ['openai']);
  t.equal(r.scrubbed, true);
  await t.rejects(s.secrets.assertUsable(), { name: 'SecretError', code: 'wrong_master_key' });
  const other = await openPgStore(s.pool.options.connectionString as string, { masterKey: masterKey(2) });
  t.same((await other.secrets.revealAll()).get('openai'), { value: 'sk-upstream' });
  await t.rejects(other.secrets.rotateMaster(masterKey(2)), { name: 'SecretError', code: 'same_master_key' });
  await other.close();
  t.equal(await s.secrets.remove('openai'), true);
  t.equal(await s.secrets.remove('openai'), false);
});

t.test('holds: zero overdraft under 200 concurrent holds on a wallet worth 7 of them', async (t) => {
  const s = await fresh(t);
  await s.wallets.credit('w', 7_000n, 'seed');
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) => s.holds.hold('w', `tr-${i}`, 1_000n, clock.now(), 'node-a')),
  );
  t.equal(results.filter((r) => r.ok).length, 7, 'exactly 7 admitted');
  t.match(
    results.find((r) => !r.ok),
    { ok: false, available: 0n },
  );
  const v = await s.wallets.show('w', clock.now());
  t.match(v, { balance: 7_000n, held: 7_000n, available: 0n, openHolds: 7 });
  // Settle and release race per trace: exactly one close each.
  const admitted = results.flatMap((r, i) => (r.ok ? [`tr-${i}`] : []));
  const closes = await Promise.all(
    admitted.flatMap((tr) => [
      s.holds.settle(tr, 600n, { model: 'v/m', provider: 'p' }, clock.now()),
      s.holds.release(tr, clock.now()),
      s.holds.settle(tr, 600n, {}, clock.now()),
    ]),
  );
  t.equal(closes.filter(Boolean).length, 7, 'each trace closed exactly once');
  t.same(await s.wallets.verify(), { ok: true, problems: [] });
  const after = await s.wallets.show('w', clock.now());
  t.equal(after.held, 0n);
  t.equal(after.openHolds, 0);
  await t.rejects(s.holds.hold('w', admitted[0] as string, 0n, clock.now(), 'node-a'), /already has a hold/);
  t.same(await s.wallets.verify(), { ok: true, problems: [] }, 'a refused duplicate wrote nothing');
});

t.test('the hold lease: renewed holds stay, lapsed holds are released by any node', async (t) => {
  const s = await fresh(t);
  await s.wallets.credit('w', 10_000n, 'seed');
  const now = clock.now();
  t.match(await s.holds.hold('w', 'kept', 1_000n, now, 'node-a', 30_000), { ok: true });
  t.match(await s.holds.hold('w', 'orphan', 2_000n, now, 'node-b', 30_000), { ok: true });
  t.equal(await s.holds.sweep(now + 29_999), 0, 'nothing lapsed yet');
  t.equal(await s.holds.renew(['kept', 'gone'], now + 20_000, 30_000), 1, 'node-a renews what it serves');
  t.equal(await s.holds.sweep(now + 30_001), 1, 'node-b’s hold lapsed');
  t.match(await s.wallets.show('w', now), { held: 1_000n, openHolds: 1 });
  t.equal(await s.holds.settle('orphan', 5n, {}, now + 30_002), false, 'a late settle of a swept hold is a no-op');
  t.equal(await s.holds.settle('kept', 700n, {}, now + 40_000), true);
  t.equal(await s.holds.sweep(now + 100_000), 0);
  const notes = await s.pool.query<{ note: string }>("SELECT note FROM ledger WHERE kind = 'release'");
  t.match(notes.rows[0]?.note, /hold lease lapsed \(node node-b\)/);
  t.match(await s.wallets.show('w', now + 40_000), { balance: 9_300n, held: 0n });
  t.same(await s.wallets.verify(), { ok: true, problems: [] });
});

t.test('usage and the request log', async (t) => {
  const s = await fresh(t);
  await s.wallets.credit('w', 5_000n, 'seed');
  await s.holds.hold('w', 'a', 1_000n, clock.now(), 'n');
  await s.holds.settle('a', 300n, { model: 'v/m', provider: 'p1' }, clock.now());
  t.same(await s.wallets.usage('w'), [{ model: 'v/m', provider: 'p1', requests: 1, costNano: 300n }]);
  t.same(await s.wallets.workspaces(), ['w']);
  s.requestLog.append(
    logRow('a', {
      ts: clock.now(),
      key_id: 'key_x',
      endpoint: 'chat.completions',
      model_requested: 'v/m',
      model_served: 'v/m',
      provider: 'p1',
      deployment: 'p1/m',
      stream: true,
      latency_ms: 12,
      ttfb_ms: 5,
      prompt_tokens: 3,
      completion_tokens: 4,
      cost_nano: 300n,
      session_id: 's',
    }),
  );
  await s.requestLog.flush();
  const rows = await s.requestLog.query({ workspace: 'w' });
  t.match(rows, [{ id: 1, trace_id: 'a', stream: true, cost_nano: 300n, ended: 'completed', session_id: 's' }]);
  t.same(await s.requestLog.query({ afterId: 1 }), []);
});

t.test('the request log: a row the database cannot store never holds back the others', async (t) => {
  const url = await server.createDatabase();
  const m = await openPgStore(url, { clock, checkSchema: false, masterKey: masterKey(1) });
  await m.migrate();
  await m.close();
  const errors: string[] = [];
  const s = await openPgStore(url, {
    clock,
    masterKey: masterKey(1),
    requestLog: { flushIntervalMs: 5 },
    onLogError: (err) => errors.push(err instanceof Error ? err.message : String(err)),
  });
  t.teardown(() => s.close());
  const row = (traceId: string, over: Partial<RequestLogRow> = {}): RequestLogRow =>
    logRow(traceId, {
      ts: clock.now(),
      model_requested: 'v/m',
      model_served: null,
      provider: null,
      deployment: null,
      attempts: 0,
      status: 404,
      error_code: 'model_not_found',
      latency_ms: 1,
      ttfb_ms: null,
      prompt_tokens: null,
      completion_tokens: null,
      ended: 'rejected',
      ...over,
    });
  // A client may send U+0000 in a JSON string (PostgreSQL text cannot hold it): stored as U+FFFD.
  s.requestLog.append(row('before'));
  s.requestLog.append(row('nul', { model_requested: 'a\u0000b', session_id: '\u0000' }));
  // A value no column takes (a figure that is not an integer): that row alone is refused.
  s.requestLog.append(row('refused', { latency_ms: 1.5 }));
  s.requestLog.append(row('after'));
  await s.requestLog.flush();
  const rows = await s.requestLog.query({ workspace: 'w' });
  t.same(
    rows.map((r) => [r.trace_id, r.model_requested, r.session_id]),
    [
      ['before', 'v/m', null],
      ['nul', 'a\uFFFDb', '\uFFFD'],
      ['after', 'v/m', null],
    ],
    'every row but the refused one is written, in order',
  );
  t.match(s.requestLog.stats(), { queued: 0, refused: 1, dropped: 0 });
  t.equal(errors.length, 1, 'the refused row is reported once');
  t.match(errors[0], /request-log row of trace refused refused by the database/);
  s.requestLog.append(row('later'));
  await s.requestLog.flush();
  t.equal((await s.requestLog.query({ workspace: 'w' })).length, 4, 'the log goes on');
});
t.test(
  'an amount beyond its column is refused before the write; the wallet service releases that hold at once',
  async (t) => {
    const s = await fresh(t);
    await s.wallets.credit('w', 10_000n, 'seed');
    const now = clock.now();
    await t.rejects(s.holds.hold('w', 'big-hold', 2n ** 63n, now, 'n'), {
      name: 'WalletError',
      code: 'amount_out_of_range',
    });
    t.match(await s.holds.hold('w', 'a', 1_000n, now, 'n'), { ok: true });
    await t.rejects(
      s.holds.settle('a', 2n ** 63n, {}, now),
      { name: 'WalletError', code: 'amount_out_of_range' },
      'a cost past BIGINT is refused by name',
    );
    t.match(
      await s.wallets.show('w', now),
      { balance: 10_000n, held: 1_000n, openHolds: 1 },
      'nothing of it was written',
    );
    t.equal(await s.holds.settle('a', 400n, {}, now), true, 'the hold is still there to settle');

    const logs: string[] = [];
    const service = new PgWalletService(s, { clock, node: 'n', timer: false, log: (event) => logs.push(event) });
    t.teardown(() => service.close());
    t.match(await service.hold('w', 'b', 1_000n), { ok: true });
    await t.rejects(service.settle('b', 2n ** 63n, {}), { code: 'amount_out_of_range' });
    t.same(logs, ['settlement_refused']);
    t.equal(service.openHolds, 0);
    const rows = await s.pool.query<{ kind: string; note: string | null }>(
      "SELECT kind, note FROM ledger WHERE trace_id = 'b' ORDER BY id",
    );
    t.same(
      rows.rows.map((r) => r.kind),
      ['hold', 'release'],
      'released at once, not when its lease lapses',
    );
    t.match(rows.rows[1]?.note, /settlement refused by the store/);
    t.same(await s.wallets.verify(), { ok: true, problems: [] });
  },
);

t.test('ledger verify names a hold whose lease lapsed and an answered request without its settlement', async (t) => {
  const url = await server.createDatabase();
  const m = await openPgStore(url, { clock, checkSchema: false, masterKey: masterKey(1) });
  await m.migrate();
  await m.close();
  const local = new ManualClock(Date.UTC(2026, 0, 1));
  const s = await openPgStore(url, { clock: local, masterKey: masterKey(1), requestLog: { flushIntervalMs: 5 } });
  t.teardown(() => s.close());
  await s.wallets.credit('w', 10_000n, 'seed');
  const now = local.now();
  t.match(await s.holds.hold('w', 'in-flight', 1_000n, now, 'node-a', 30_000), { ok: true });
  t.same(await s.wallets.verify(), { ok: true, problems: [] }, 'a hold within its lease is served');
  s.requestLog.append({
    trace_id: 'lost-charge',
    ts: now,
    workspace: 'w',
    key_id: null,
    endpoint: 'chat_completions',
    model_requested: 'v/m',
    model_served: 'v/m',
    provider: 'p',
    deployment: 'p/m',
    attempts: 1,
    attempts_json: [],
    stream: false,
    status: 200,
    error_code: null,
    latency_ms: 1,
    ttfb_ms: 1,
    prompt_tokens: 1,
    completion_tokens: 1,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: 300n,
    app_title: null,
    app_origin: null,
    session_id: null,
    ended: 'completed',
  });
  // A charge beyond BIGINT is stored without its cost; the rest of the batch goes in with it.
  s.requestLog.append({
    trace_id: 'too-big',
    ts: now,
    workspace: 'w',
    key_id: null,
    endpoint: 'chat_completions',
    model_requested: 'v/m',
    model_served: null,
    provider: null,
    deployment: null,
    attempts: 0,
    attempts_json: [],
    stream: false,
    status: 429,
    error_code: 'rate_limited',
    latency_ms: 1,
    ttfb_ms: null,
    prompt_tokens: null,
    completion_tokens: null,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: 2n ** 63n,
    app_title: null,
    app_origin: null,
    session_id: null,
    ended: 'rejected',
  });
  await s.requestLog.flush();
  t.same(
    (await s.requestLog.query({})).map((r) => [r.trace_id, r.cost_nano]),
    [
      ['lost-charge', 300n],
      ['too-big', null],
    ],
  );
  local.advance(31_000);
  t.same((await s.wallets.verify()).problems, [
    "hold in-flight of workspace w is open but nothing serves it: its lease lapsed 1000 ms ago (node node-a stopped renewing it); any node's sweeper releases it",
    'request lost-charge logged a charge of 0.0000003 USD but has no settlement',
  ]);
});
