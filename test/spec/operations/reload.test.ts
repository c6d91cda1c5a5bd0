// Live config reload in process (Gateway.reload, what SIGHUP applies once the directory compiled; the
// signal and `pi-gateway reload` are tested in reload-command.test.ts): new requests use the new
// tables while an in-flight one finishes on the old; a new workspace's keys work at once; wallets,
// rate-limit windows, session pins and breaker state survive; the catalog follows; what only a
// restart applies is reported.
import t, { type Test } from 'tap';
import { fixtureConfig, startStack, type Stack } from '../../helpers/stack.ts';
import { patchedFixture, USER } from '../../helpers/admission.ts';
import { logRow, spyWallet } from '../../helpers/inference.ts';
import { pinKey } from '../../../src/routing/session-pins.ts';

/** The gateway fixture with a workspace `newcomer` and chat-small's prompt at $0.000003 a token. */
function changed(t: Test): string {
  return patchedFixture(t, 'gateway', {
    'workspaces.yaml': [
      ['workspaces:\n', 'workspaces:\n  - id: newcomer\n    name: Added by a reload\n    rate_limit_rpm: 100000\n'],
    ],
    'models/acme.yaml': [['prompt: "0.000001"', 'prompt: "0.000003"']],
  });
}

function chat(s: Stack, key: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] }, ...extra },
    { key, headers },
  );
}

t.test('a new workspace’s keys work after a reload, without a restart', async (t) => {
  const s = await startStack(t);
  const key = s.key('newcomer');
  s.credit('newcomer', '10');
  const before = await chat(s, key);
  t.equal(before.status, 401, 'unknown workspace before');
  t.equal(((await before.json()) as { error: { code: string } }).error.code, 'api_key_not_found');
  const next = fixtureConfig(changed(t));
  t.not(s.gw.configHash, next.sourceHash);
  const r = s.gw.reload(next);
  t.same(r.restartNeeded, []);
  t.equal(s.gw.configHash, next.sourceHash, 'the running hash is the new one');
  const after = await chat(s, key);
  t.equal(after.status, 200, 'admitted after the reload');
  await after.text();
});

t.test('an in-flight stream finishes on the old config; the next request uses the new prices', async (t) => {
  const s = await startStack(t, { limits: { streamIdleTimeoutMs: 2000 } });
  const key = s.key('open');
  s.credit('open', '100');
  const w = spyWallet(s);
  const usage = { prompt: 1000, completion: 10 };
  const res = await chat(s, key, { stream: true, sim: { usage, chunks: 10, chunkDelayMs: 40 } });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  s.gw.reload(fixtureConfig(changed(t)));
  while (!(await reader.read()).done) {
    // read to the end
  }
  const oldTrace = res.headers.get('x-pi-trace-id') ?? '';
  await logRow(s, oldTrace);
  t.equal(w.settles.get(oldTrace)?.cost, 1000n * 1000n + 10n * 2000n, 'settled at the price it started with');
  const next = await chat(s, key, { sim: { usage } });
  await next.text();
  const newTrace = next.headers.get('x-pi-trace-id') ?? '';
  await logRow(s, newTrace);
  t.equal(w.settles.get(newTrace)?.cost, 1000n * 3000n + 10n * 2000n, 'a new request pays the new price');
  const catalog = (await (await fetch(`${s.url}/v1/models/acme/chat-small`)).json()) as { pricing: { prompt: string } };
  t.equal(catalog.pricing.prompt, '0.000003', 'the catalog shows the new config');
});

t.test('rate-limit windows, breaker state, session pins and wallets survive a reload', async (t) => {
  const s = await startStack(t);
  const slow = s.key('slow'); // 3 requests a minute
  s.credit('slow', '10');
  const open = s.key('open');
  s.credit('open', '10');
  for (let i = 0; i < 3; i++) {
    const res = await chat(s, slow);
    await res.text();
    t.equal(res.status, 200, `request ${i + 1} of the 3 a minute is admitted`);
  }
  // Trip alpha/chat-small's breaker (3 failures in a row in this fixture).
  for (let i = 0; i < 3; i++) await (await chat(s, open, { sim: { status: 500 } })).text();
  t.equal(s.gw.ctx.health.state('alpha/chat-small').state, 'open', 'breaker open');
  // Pin a session to beta.
  const pinned = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: USER, provider: { order: ['beta'] } },
    { key: open, headers: { 'x-pi-session-id': 'sess-1' } },
  );
  t.equal(pinned.headers.get('x-pi-provider'), 'beta');
  await pinned.text();
  const pins = s.gw.ctx.pins.size;
  const balance = s.gw.ctx.wallets.view('open');

  s.gw.reload(fixtureConfig(changed(t)));

  const limited = await chat(s, slow);
  t.equal(limited.status, 429, 'the rate-limit window survived');
  await limited.text();
  t.equal(s.gw.ctx.health.state('alpha/chat-small').state, 'open', 'the breaker survived');
  t.equal(s.gw.ctx.pins.size, pins, 'the pins survived');
  t.same(s.gw.ctx.wallets.view('open'), balance, 'the wallet book survived');
  const keyId = s.store.apiKeys.list('open')[0]?.id ?? '';
  t.equal(
    s.gw.ctx.pins.get(pinKey('open', keyId, 'acme/chat-small', 'sess-1')),
    'beta/chat-small',
    'the session is still pinned to beta',
  );
});

t.test('what only a restart applies is reported; health thresholds and pin bounds apply at once', async (t) => {
  const s = await startStack(t);
  const name = patchedFixture(t, 'gateway', {
    'gateway.yaml': [
      [
        'health:\n  consecutive_failures: 3',
        'request_log:\n  flush_interval_ms: 50\nsessions:\n  max_pins: 1\nhealth:\n  consecutive_failures: 1',
      ],
    ],
  });
  const r = s.gw.reload(fixtureConfig(name));
  t.same(r.restartNeeded, ['gateway.yaml request_log (the log writer is opened at start)']);
  const open = s.key('open');
  s.credit('open', '10');
  await (await chat(s, open, { sim: { status: 500 } })).text();
  t.equal(s.gw.ctx.health.state('alpha/chat-small').state, 'open', 'one failure trips it now');
  for (const id of ['a', 'b'])
    await (
      await s.post(
        '/v1/chat/completions',
        { model: 'acme/chat-small', messages: USER },
        { key: open, headers: { 'x-pi-session-id': id } },
      )
    ).text();
  t.equal(s.gw.ctx.pins.size, 1, 'the new pin bound');
});
