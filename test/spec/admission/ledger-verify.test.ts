// `pi-gateway ledger verify` fails on what the books agree on but must not be: a hold left open by a
// `serve` that was SIGKILLed mid-request (nothing will ever close it until the next start) — and is
// clean again once the next start released it; a request-log row that records an answered request
// whose trace has no settlement — but not a token count, which is answered and never billed.
import t from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { openStore } from '../../../src/store/sqlite/store.ts';
import { cli, GATEWAY_CONFIG, openHolds, USER, waitFor } from '../../helpers/admission.ts';
import { rawUpstream } from '../../helpers/raw-upstream.ts';
import { prepareDb, startServe } from '../../helpers/serve-process.ts';
import { startSimulator } from '../../../src/simulator/server.ts';

t.test('a hold a killed server left open fails ledger verify until the next start releases it', async (t) => {
  // A provider that never answers: the request stays in flight, its hold open.
  const up = await rawUpstream(t, () => undefined);
  const db = prepareDb(t);
  const server = await startServe(t, { config: GATEWAY_CONFIG, db, upstream: up.url });
  const pending = fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${db.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'acme/chat-small', messages: USER, max_tokens: 50 }),
  }).catch(() => null);
  t.ok(await waitFor(() => openHolds(db.file).size === 1, 10_000), 'the request holds money');
  const live = await cli(['ledger', 'verify', '--db', db.file]);
  t.equal(live.code, 0, `a hold its live server serves is fine: ${live.stdout}${live.stderr}`);

  server.child.kill('SIGKILL');
  await server.exited;
  await pending;
  const [trace] = [...openHolds(db.file).keys()];
  const after = await cli(['ledger', 'verify', '--db', db.file]);
  t.equal(after.code, 1, 'ledger verify fails');
  t.match(
    after.stdout,
    new RegExp(
      `^hold ${trace} of workspace open is open but nothing serves it: the process that took it \\(pid ${server.child.pid}\\) is gone; the next start releases it\\n$`,
    ),
    after.stdout,
  );

  const next = await startServe(t, { config: GATEWAY_CONFIG, db, upstream: up.url });
  next.child.kill('SIGTERM');
  t.equal((await next.exited).code, 0, 'the next start, stopped gracefully');
  t.same([...openHolds(db.file).keys()], [], 'released the orphaned hold');
  const clean = await cli(['ledger', 'verify', '--db', db.file]);
  t.equal(clean.code, 0, `clean again: ${clean.stdout}${clean.stderr}`);
});

t.test('an answered request without its settlement fails ledger verify', async (t) => {
  const db = prepareDb(t);
  const store = openStore(db.file, { masterKey: db.masterKey, clock: new ManualClock(Date.now()) });
  // What a lost settlement leaves: the request's log row says it was answered and charged.
  store.requestLog.append({
    trace_id: 'lost-charge',
    ts: Date.now(),
    workspace: 'open',
    key_id: null,
    endpoint: 'chat_completions',
    model_requested: 'acme/chat-small',
    model_served: 'acme/chat-small',
    provider: 'alpha',
    deployment: 'alpha/chat-small',
    attempts: 1,
    attempts_json: [],
    stream: false,
    status: 200,
    error_code: null,
    latency_ms: 12,
    ttfb_ms: 5,
    prompt_tokens: 10,
    completion_tokens: 20,
    reasoning_tokens: null,
    cached_tokens: null,
    cost_nano: 50_000n,
    app_title: null,
    app_origin: null,
    session_id: null,
    ended: 'completed',
  });
  store.close();
  const r = await cli(['ledger', 'verify', '--db', db.file, '--json']);
  t.equal(r.code, 1, 'exit 1');
  t.same(JSON.parse(r.stdout), {
    ok: false,
    wallets: 1,
    problems: ['request lost-charge logged a charge of 0.00005 USD but has no settlement'],
  });
});

t.test('token counts are answered without a hold or a settlement, and ledger verify stays clean', async (t) => {
  const sim = await startSimulator();
  t.teardown(() => sim.close());
  const db = prepareDb(t);
  const server = await startServe(t, { config: GATEWAY_CONFIG, db, upstream: sim.url });
  const post = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'x-api-key': db.key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const count = await post('/v1/messages/count_tokens', { model: 'beta-labs/sonnet-ish', messages: USER });
  t.equal(count.status, 200, await count.text());
  const chat = await post('/v1/chat/completions', { model: 'acme/chat-small', messages: USER, max_tokens: 20 });
  t.equal(chat.status, 200, 'a billed request beside it');
  server.child.kill('SIGTERM');
  t.equal((await server.exited).code, 0, 'stopped gracefully: every log row written');
  const store = openStore(db.file, { masterKey: db.masterKey, clock: new ManualClock(Date.now()) });
  const rows = store.requestLog.query({ limit: 10 });
  store.close();
  t.match(
    rows.find((r) => r.endpoint === 'count_tokens'),
    { status: 200, model_served: 'beta-labs/sonnet-ish', cost_nano: null },
    'the count is logged as answered, at no cost',
  );
  const r = await cli(['ledger', 'verify', '--db', db.file, '--json']);
  t.equal(r.code, 0, r.stdout);
  t.same(JSON.parse(r.stdout), { ok: true, wallets: 1, problems: [] });
});
