// Session pins (X-Pi-Session-Id) through a real gateway with a manual clock: same workspace + key +
// model + session go first to the deployment that last answered for them, for 1 hour restarted by
// every admitted request; longer ids count as absent; a bounded LRU; a down or ineligible
// deployment is not put first. The default first deployment is aws (constant random), so a pin is
// made visible by failing aws once: gcp answers and the session sticks to gcp.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { ManualClock } from '../../../src/clock.ts';
import { openStore } from '../../../src/store/sqlite/store.ts';
import { ConfigIndex } from '../../../src/config/index.ts';
import { planRoute } from '../../../src/routing/plan.ts';
import { mergePreferences } from '../../../src/routing/preferences.ts';
import { PIN_TTL_MS, SessionPins, pinKey } from '../../../src/routing/session-pins.ts';
import { declaredHealth } from '../../../src/availability/serving.ts';
import { DEFAULT_NOW, fixtureConfig } from '../../helpers/stack.ts';
import { lastLog, routingStack, upstreams, type RoutingStack } from './routing-helpers.ts';

const MINUTE = 60_000;

async function ask(
  r: RoutingStack,
  session: string | null,
  body: Record<string, unknown> = {},
  key?: string,
): Promise<{ status: number; provider: string | null; tried: string[] }> {
  // Not sim.clear(): that would also forget the behaviours a test scripted for this request.
  const from = r.s.sim.requests.length;
  const headers: Record<string, string> = session === null ? {} : { 'x-pi-session-id': session };
  const res = await r.chat(body, { headers, ...(key ? { key } : {}) });
  await res.text();
  return { status: res.status, provider: res.headers.get('x-pi-provider'), tried: upstreams(r.s).slice(from) };
}

/** Pins `session` to gcp/multi: aws fails once, gcp answers. */
async function pinToGcp(t: Test, r: RoutingStack, session: string, key?: string): Promise<void> {
  r.s.sim.script('multi-aws', { status: 500 }, 1);
  const a = await ask(r, session, {}, key);
  t.same(a.tried, ['multi-aws', 'multi-gcp'], `${session.slice(0, 12)}: aws failed, gcp answered`);
}

t.test('the pin: first to the deployment that last answered, per workspace, key, model and session', async (t) => {
  const r = await routingStack(t);
  await pinToGcp(t, r, 'sess-1');
  t.equal(r.s.gw.ctx.pins.size, 1);

  let a = await ask(r, 'sess-1');
  t.equal(a.provider, 'gcp');
  t.same(a.tried, ['multi-gcp'], 'the pinned deployment first, aws not asked');
  // Each other request below may create a pin of its own; sess-1 is asked again after each so it
  // stays the most recently used of the fixture's 3 pins.
  const others: [string, string | null, Record<string, unknown>, string | undefined, string][] = [
    ['no session: weight decides', null, {}, undefined, 'multi-aws'],
    ['another session', 'sess-2', {}, undefined, 'multi-aws'],
    ['session ids are compared exactly', 'SESS-1', {}, undefined, 'multi-aws'],
    ['another key of the same workspace', 'sess-1', {}, r.s.key('open'), 'multi-aws'],
    ['another workspace', 'sess-1', {}, r.keyFor('quant'), 'multi-aws'],
    ['another model', 'sess-1', { model: 'acme/pricey' }, undefined, 'pricey-aws'],
  ];
  for (const [what, session, body, key, first] of others) {
    t.same((await ask(r, session, body, key)).tried, [first], what);
    t.same((await ask(r, 'sess-1')).tried, ['multi-gcp'], `sess-1 still pinned after: ${what}`);
  }

  // The pin yields to the request's routing rules, and the deployment that then answers is the
  // session's last used one.
  a = await ask(r, 'sess-1', { provider: { ignore: ['gcp'] } });
  t.same(a.tried, ['multi-aws'], 'gcp excluded by this request: not first');
  t.same((await ask(r, 'sess-1')).tried, ['multi-aws'], 're-pinned to what answered last');

  // The pin goes first even ahead of an order tier: it still meets the request's rules.
  await pinToGcp(t, r, 'sess-3');
  t.same((await ask(r, 'sess-3', { provider: { order: ['nu'] } })).tried, ['multi-gcp']);
  t.same((await ask(r, 'sess-3', { provider: { sort: 'price' } })).tried, ['multi-gcp']);

  // Forwarded upstream and recorded.
  await ask(r, 'sess-3');
  t.equal(r.s.sim.requests.at(-1)?.headers['x-pi-session-id'], 'sess-3');
  t.equal(lastLog(r.s).session_id, 'sess-3');
});

t.test('lifetime: 1 hour, restarted by each admitted request, not by refused ones', async (t) => {
  const r = await routingStack(t);
  const clock = r.s.clock;
  await pinToGcp(t, r, 'sess');

  clock.advance(59 * MINUTE);
  t.same((await ask(r, 'sess')).tried, ['multi-gcp'], '59 min later');
  clock.advance(59 * MINUTE);
  t.same((await ask(r, 'sess')).tried, ['multi-gcp'], '118 min after pinning, 59 after the last request');
  clock.advance(PIN_TTL_MS - 1);
  t.same((await ask(r, 'sess')).tried, ['multi-gcp'], 'one ms before expiry');
  clock.advance(PIN_TTL_MS);
  t.same((await ask(r, 'sess')).tried, ['multi-aws'], 'exactly 1 hour after the last request: expired');

  // Refused requests (402, 422, 404 no provider) are not admitted: they do not restart the hour.
  await pinToGcp(t, r, 'sess');
  clock.advance(30 * MINUTE);
  // Everything available is held by another request, so this one's hold cannot fit. (An oversized
  // max_tokens no longer does it: the hold is capped at what the model can write.)
  const book = r.s.gw.ctx.wallets;
  t.ok(book.hold('open', 'test-blocker', book.view('open').available).ok, 'the wallet is fully held');
  let a = await ask(r, 'sess');
  t.equal(a.status, 402, 'the hold does not fit the wallet');
  book.release('test-blocker');
  a = await ask(r, 'sess', { provider: { bogus: true } });
  t.equal(a.status, 422);
  a = await ask(r, 'sess', { provider: { only: ['aws'], zdr: true, quantizations: ['fp4'] } });
  t.equal(a.status, 404);
  t.same(a.tried, []);
  clock.advance(30 * MINUTE);
  t.same((await ask(r, 'sess')).tried, ['multi-aws'], 'expired 1 hour after the last admitted request');

  // An admitted request that fails restarts it (and does not move the pin).
  await pinToGcp(t, r, 'sess');
  clock.advance(30 * MINUTE);
  r.s.sim.script('multi-gcp', { status: 400 }, 1);
  a = await ask(r, 'sess');
  t.equal(a.status, 400, 'the client-fault answer is returned');
  t.same(a.tried, ['multi-gcp']);
  clock.advance(59 * MINUTE);
  t.same((await ask(r, 'sess')).tried, ['multi-gcp'], '89 min after pinning, 59 after the failed admitted request');
  clock.advance(30 * MINUTE);
  a = await ask(r, 'sess', { sim: { status: 503 } });
  t.equal(a.status, 503, 'every attempt failed');
  t.same(a.tried.slice(0, 2), ['multi-gcp', 'multi-aws']);
  t.same((await ask(r, 'sess')).tried, ['multi-gcp'], 'an all-failed request does not move the pin');
});

t.test('X-Pi-Session-Id longer than 256 characters counts as absent', async (t) => {
  const r = await routingStack(t);
  const max = 's'.repeat(256);
  const over = 's'.repeat(257);
  await pinToGcp(t, r, max);
  t.same((await ask(r, max)).tried, ['multi-gcp'], '256 characters: a session');
  t.equal(lastLog(r.s).session_id, max);
  const before = r.s.gw.ctx.pins.size;
  await pinToGcp(t, r, over);
  t.equal(r.s.gw.ctx.pins.size, before, 'no pin for a 257-character id');
  t.same((await ask(r, over)).tried, ['multi-aws'], '257 characters: no session');
  t.equal(lastLog(r.s).session_id, null);
  t.same((await ask(r, '')).tried, ['multi-aws'], 'empty: no session');
});

t.test('a bounded LRU of pins (max_pins 3 in the fixture)', async (t) => {
  const r = await routingStack(t);
  for (const s of ['a', 'b', 'c', 'd']) {
    await pinToGcp(t, r, s);
    // A success in between, so aws's failures are never 3 in a row (that would trip its breaker).
    t.same((await ask(r, null)).tried, ['multi-aws']);
  }
  t.equal(r.s.gw.ctx.pins.size, 3);
  for (const s of ['d', 'c', 'b']) t.same((await ask(r, s)).tried, ['multi-gcp'], `${s} kept`);
  t.same((await ask(r, 'a')).tried, ['multi-aws'], 'a, the least recently used, was evicted');
  t.equal(r.s.gw.ctx.pins.size, 3);
});

t.test('a pinned deployment that is down is not put first', async (t) => {
  const r = await routingStack(t);
  await pinToGcp(t, r, 'sess');
  // Trip gcp/multi: three failures in a row (consecutive_failures 3 in the fixture).
  for (let i = 0; i < 3; i++) await ask(r, null, { provider: { only: ['gcp'] }, sim: { status: 500 } });
  t.equal(r.s.gw.ctx.health.state('gcp/multi').state, 'open');
  t.same((await ask(r, 'sess')).tried, ['multi-aws'], 'down: the pin does not go first');
});

t.test('a request served by a fallback model does not pin the primary', async (t) => {
  const r = await routingStack(t);
  r.s.sim.script('multi-aws', { status: 500 }, 1);
  const a = await ask(r, 'sess', { models: ['acme/pricey'], provider: { only: ['aws'] } });
  t.same(a.tried, ['multi-aws', 'pricey-aws']);
  t.equal(r.s.gw.ctx.pins.size, 0);
  t.same((await ask(r, 'sess')).tried, ['multi-aws']);
});

t.test('a deployment becoming ineligible drops its pin', async (t) => {
  // A file database and a second connection for the credential changes: the gateway notices
  // commits by other connections (the CLI path) on its next request.
  const file = join(t.testdir({}), 'gateway.db');
  const masterKey = randomBytes(32).toString('base64');
  const clock = new ManualClock(DEFAULT_NOW);
  const store = openStore(file, { clock, masterKey, requestLog: { flushIntervalMs: 10 } });
  const cli = openStore(file, { clock, masterKey });
  t.teardown(() => {
    cli.close();
    store.close();
  });
  const r = await routingStack(t, { clock, store });
  await pinToGcp(t, r, 'sess');
  // gcp's credential is removed: gcp/multi leaves the candidate set.
  t.ok(cli.secrets.remove('gcp-1'));
  const a = await ask(r, 'sess', { provider: { only: ['aws', 'gcp'] }, sim: { status: 500 } });
  t.same(a.tried, ['multi-aws'], 'gcp is not a candidate');
  // The credential comes back; the pin should be gone, so weight decides again.
  cli.secrets.set('gcp-1', 'upstream-secret-gcp-1');
  t.same((await ask(r, 'sess')).tried, ['multi-aws'], 'the dropped pin does not come back');
});

t.test('planRoute hands pinnedFor the eligible deployments, so SessionPins.resolve can drop a stale pin', async (t) => {
  // The routing half of the rule above, without HTTP: what inference.ts needs to call.
  const index = new ConfigIndex(fixtureConfig('routing-http'));
  const clock = new ManualClock(DEFAULT_NOW);
  const pins = new SessionPins({ clock, maxPins: 10 });
  const model = index.modelById.get('acme/multi');
  const workspace = index.workspaceById.get('open');
  if (!model || !workspace) throw new Error('fixture model or workspace missing');
  const key = pinKey('open', 'k', model.id, 'sess');
  pins.set(key, 'gcp/multi');
  const plan = (sealed: (name: string) => boolean) =>
    planRoute({
      index,
      endpoint: 'chat_completions',
      models: [model],
      policy: mergePreferences(workspace.routing, null),
      creds: { has: sealed },
      health: declaredHealth,
      nowMs: clock.now(),
      random: () => 0.5,
      pinnedFor: (_id, eligible) => pins.resolve(key, eligible),
    });
  t.equal(plan(() => true).plans[0]?.deployments[0]?.id, 'gcp/multi', 'eligible: first');
  t.equal(plan((n) => n !== 'gcp-1').plans[0]?.deployments[0]?.id, 'aws/multi', 'ineligible: not routed');
  t.equal(pins.get(key), null, 'and the pin is dropped');
  t.equal(plan(() => true).plans[0]?.deployments[0]?.id, 'aws/multi', 'eligible again: weight decides');
  // Even when nothing at all is eligible (the plan then throws no_eligible_provider).
  pins.set(key, 'gcp/multi');
  t.throws(() => plan(() => false), { code: 'no_eligible_provider' });
  t.equal(pins.get(key), null, 'dropped as well');
});
