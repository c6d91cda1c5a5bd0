// Session pins with a manual clock: 1 h after the last touch, touch restarts it, LRU eviction at
// capacity, pins dropped once their deployment is no longer eligible, and the pin in planRoute.
import t from 'tap';
import { ManualClock } from '../../src/clock.ts';
import { planRoute } from '../../src/routing/plan.ts';
import { mergePreferences } from '../../src/routing/preferences.ts';
import { sessionIdFrom } from '../../src/http/header-text.ts';
import { SessionPins, pinKey } from '../../src/routing/session-pins.ts';
import { type HealthView, declaredHealth } from '../../src/availability/serving.ts';
import { NOW, routing, seeded, standardWorld } from './fixtures.ts';

const HOUR = 3_600_000;

t.test('a pin expires exactly 1 h after it was set', async (t) => {
  const clock = new ManualClock(NOW);
  const pins = new SessionPins({ clock, maxPins: 10 });
  pins.set('k', 'd1');
  clock.advance(HOUR - 1);
  t.equal(pins.get('k'), 'd1', 'alive 1 ms before the hour');
  clock.advance(1);
  t.equal(pins.get('k'), null, 'gone at exactly 1 h');
  t.equal(pins.size, 0, 'the expired entry was dropped');
});

t.test('touch restarts the hour; get does not', async (t) => {
  const clock = new ManualClock(NOW);
  const pins = new SessionPins({ clock, maxPins: 10 });
  pins.set('k', 'd1');
  clock.advance(40 * 60_000);
  t.equal(pins.get('k'), 'd1');
  clock.advance(10 * 60_000);
  pins.touch('k'); // admitted at +50 min
  clock.advance(HOUR - 1);
  t.equal(pins.get('k'), 'd1', 'alive 1 ms before an hour after the last touch');
  clock.advance(1);
  t.equal(pins.get('k'), null, 'expired exactly an hour after the last touch');
  pins.touch('k');
  t.equal(pins.get('k'), null, 'touching an expired pin does not revive it');
  pins.touch('never-set');
  t.equal(pins.size, 0, 'touching an absent key creates nothing');
});

t.test('set re-pins and restarts the hour; drop removes', async (t) => {
  const clock = new ManualClock(NOW);
  const pins = new SessionPins({ clock, maxPins: 10, ttlMs: 1000 });
  pins.set('k', 'd1');
  clock.advance(900);
  pins.set('k', 'd2');
  clock.advance(900);
  t.equal(pins.get('k'), 'd2');
  pins.drop('k');
  t.equal(pins.get('k'), null);
  t.equal(pins.size, 0);
});

t.test('least recently used pin is evicted at capacity', async (t) => {
  const clock = new ManualClock(NOW);
  const pins = new SessionPins({ clock, maxPins: 3 });
  pins.set('a', 'd');
  clock.advance(1);
  pins.set('b', 'd');
  clock.advance(1);
  pins.set('c', 'd');
  clock.advance(1);
  pins.touch('a'); // a is now the most recently used
  pins.set('d', 'd');
  t.equal(pins.size, 3);
  t.equal(pins.get('b'), null, 'b was least recently used');
  t.equal(pins.get('a'), 'd');
  t.equal(pins.get('c'), 'd');
  t.equal(pins.get('d'), 'd');
  pins.set('c', 'd2'); // re-pinning refreshes c
  pins.set('e', 'd');
  t.equal(pins.get('a'), null, 'a is evicted next');
  t.same([pins.get('c'), pins.get('d'), pins.get('e')], ['d2', 'd', 'd']);
});

t.test('a full store makes room from the workspace holding the most pins', async (t) => {
  const clock = new ManualClock(NOW);
  const pins = new SessionPins({ clock, maxPins: 10 });
  const key = (ws: string, i: number) => pinKey(ws, `${ws}-key`, 'acme/chat', `s${i}`);
  // Two quiet tenants pin a few sessions each, long ago.
  for (let i = 0; i < 3; i++) pins.set(key('quiet-a', i), 'd1');
  for (let i = 0; i < 2; i++) pins.set(key('quiet-b', i), 'd1');
  clock.advance(10 * 60_000);
  // A third sends a new session id with every request.
  for (let i = 0; i < 1000; i++) {
    pins.set(key('noisy', i), 'd2');
    clock.advance(1);
  }
  t.equal(pins.size, 10);
  t.same(
    [pins.heldBy('quiet-a'), pins.heldBy('quiet-b'), pins.heldBy('noisy')],
    [3, 2, 5],
    "the flood pushed out only the flooder's own pins",
  );
  for (let i = 0; i < 3; i++) t.equal(pins.get(key('quiet-a', i)), 'd1');
  for (let i = 995; i < 1000; i++) t.equal(pins.get(key('noisy', i)), 'd2', 'its most recent pins stay');
  t.equal(pins.get(key('noisy', 994)), null);

  // A quiet tenant's new session: the largest holder gives up its least recently used pin.
  pins.set(key('quiet-b', 9), 'd1');
  t.same([pins.heldBy('quiet-a'), pins.heldBy('quiet-b'), pins.heldBy('noisy')], [3, 3, 4]);
  t.equal(pins.get(key('noisy', 995)), null, 'the oldest of the largest holder');
  // As large as the largest: each new pin of that tenant then comes out of its own (a tie goes
  // against the workspace pinning now).
  for (let i = 10; i < 20; i++) pins.set(key('quiet-b', i), 'd1');
  t.same([pins.heldBy('quiet-a'), pins.heldBy('quiet-b'), pins.heldBy('noisy')], [3, 3, 4]);
  t.equal(pins.get(key('quiet-b', 19)), 'd1', 'its newest pin stays');
  t.equal(pins.get(key('quiet-b', 0)), null, 'its oldest went');
  t.equal(pins.size, 10);

  // Expiry, drop and a reload's smaller bound keep the counts right.
  pins.drop(key('quiet-a', 0));
  t.equal(pins.heldBy('quiet-a'), 2);
  pins.resize(4);
  t.equal(pins.size, 4);
  t.equal(pins.heldBy('quiet-a') + pins.heldBy('quiet-b') + pins.heldBy('noisy'), 4);
  t.ok(Math.max(pins.heldBy('quiet-a'), pins.heldBy('quiet-b'), pins.heldBy('noisy')) <= 2, 'shrunk evenly');
  clock.advance(HOUR);
  t.equal(pins.size, 0);
  t.same([pins.heldBy('quiet-a'), pins.heldBy('quiet-b'), pins.heldBy('noisy')], [0, 0, 0], 'expired: none held');
});

t.test('in a store full of one-pin workspaces, a new workspace pins (the least recently used goes)', async (t) => {
  const clock = new ManualClock(NOW);
  const pins = new SessionPins({ clock, maxPins: 3 });
  for (const ws of ['a', 'b', 'c']) {
    pins.set(pinKey(ws, 'k', 'm', 's'), 'd1');
    clock.advance(1);
  }
  pins.set(pinKey('d', 'k', 'm', 's'), 'd1');
  t.equal(pins.get(pinKey('d', 'k', 'm', 's')), 'd1', "the new workspace's pin stays");
  t.equal(pins.get(pinKey('a', 'k', 'm', 's')), null, 'the oldest one-pin workspace gave up its pin');
  t.same([pins.heldBy('b'), pins.heldBy('c'), pins.heldBy('d')], [1, 1, 1]);
});

t.test('a smaller bound drops expired pins before evicting a live one', async (t) => {
  const clock = new ManualClock(NOW);
  const pins = new SessionPins({ clock, maxPins: 10 });
  pins.set(pinKey('x', 'k', 'm', 'old'), 'd1');
  clock.advance(HOUR / 2);
  for (let i = 0; i < 3; i++) pins.set(pinKey('y', 'k', 'm', `s${i}`), 'd1');
  clock.advance(HOUR / 2); // x's pin has expired, not yet swept
  pins.resize(3);
  t.equal(pins.heldBy('y'), 3, "y's live pins all stay");
  t.equal(pins.heldBy('x'), 0);
});

t.test('size counts live pins only', async (t) => {
  const clock = new ManualClock(NOW);
  const pins = new SessionPins({ clock, maxPins: 10 });
  pins.set('a', 'd');
  clock.advance(HOUR / 2);
  pins.set('b', 'd');
  t.equal(pins.size, 2);
  clock.advance(HOUR / 2);
  t.equal(pins.size, 1);
  clock.advance(HOUR / 2);
  t.equal(pins.size, 0);
});

t.test('pinKey separates every part; session id header rules', async (t) => {
  t.not(pinKey('w', 'k', 'a/b', 's'), pinKey('w', 'k', 'a/b', 't'));
  t.not(pinKey('w', 'k1', 'a/b', 's'), pinKey('w', 'k', '1a/b', 's'));
  t.not(pinKey('w', 'k', 'a/b', 's'), pinKey('w2', 'k', 'a/b', 's'));
  t.not(pinKey('w', 'k', 'a/b', 's'), pinKey('w', 'k', 'a/c', 's'));
  t.equal(pinKey('w', 'k', 'a/b', 's"x'), pinKey('w', 'k', 'a/b', 's"x'));
  t.equal(sessionIdFrom('abc'), 'abc');
  t.equal(sessionIdFrom('x'.repeat(256)), 'x'.repeat(256));
  t.equal(sessionIdFrom('x'.repeat(257)), null, 'longer than 256 counts as absent');
  t.equal(sessionIdFrom('é'.repeat(256)), 'é'.repeat(256), 'characters, not bytes');
  t.equal(sessionIdFrom('😀'.repeat(256)), '😀'.repeat(256), 'characters, not UTF-16 units');
  t.equal(sessionIdFrom(''), null);
  t.equal(sessionIdFrom(undefined), null);
});

t.test('resolve keeps a pin only while its deployment is eligible', async (t) => {
  const clock = new ManualClock(NOW);
  const pins = new SessionPins({ clock, maxPins: 10 });
  pins.set('k', 'd2');
  t.equal(pins.resolve('k', [{ id: 'd1' }, { id: 'd2' }]), 'd2');
  t.equal(pins.resolve('k', [{ id: 'd1' }]), null);
  t.equal(pins.get('k'), null, 'dropped once no longer eligible');
  t.equal(pins.resolve('absent', [{ id: 'd1' }]), null);
});

t.test('planRoute: the pinned deployment goes first only while eligible and not down', async (t) => {
  const { index, creds, chat } = standardWorld();
  const clock = new ManualClock(NOW);
  const pins = new SessionPins({ clock, maxPins: 10 });
  const key = pinKey('ws', 'key1', chat.id, 'session-1');
  pins.set(key, 'd-aws');
  const plan = (over: { ignore?: string[]; health?: HealthView } = {}) =>
    planRoute({
      index,
      endpoint: 'chat',
      models: [chat],
      policy: mergePreferences(routing(), over.ignore ? { ignore: over.ignore } : null),
      creds,
      health: over.health ?? declaredHealth,
      nowMs: clock.now(),
      random: seeded(7),
      pinnedFor: (modelId) => pins.get(pinKey('ws', 'key1', modelId, 'session-1')),
    }).plans[0]?.deployments.map((d) => d.id);
  for (let i = 0; i < 5; i++) t.equal(plan()?.[0], 'd-aws', 'pinned first');
  t.not(plan({ health: { isDown: (d) => d.id === 'd-aws' } })?.[0], 'd-aws', 'not first while down');
  t.notOk(plan({ ignore: ['aws'] })?.includes('d-aws'), 'no longer eligible: not routed at all');
  clock.advance(HOUR);
  const firsts = new Set<string | undefined>();
  for (let seed = 0; seed < 20; seed++) {
    firsts.add(
      planRoute({
        index,
        endpoint: 'chat',
        models: [chat],
        policy: mergePreferences(routing(), null),
        creds,
        health: declaredHealth,
        nowMs: clock.now(),
        random: seeded(seed),
        pinnedFor: (modelId) => pins.get(pinKey('ws', 'key1', modelId, 'session-1')),
      }).plans[0]?.deployments[0]?.id,
    );
  }
  t.ok(firsts.size > 1, 'after the pin expired, weight decides again');
});
