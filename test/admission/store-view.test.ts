// The request path's view of the store: verified keys and unsealed credentials cached in memory,
// expiry re-judged on every request, and both caches dropped when another connection commits (a CLI
// `key revoke` or `secret set` takes effect on the next request).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { MAX_CACHED_KEYS, StoreView } from '../../src/admission/store-view.ts';
import { ManualClock } from '../../src/clock.ts';
import { openDatabase } from '../../src/store/sqlite/db.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { masterKey, tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';

/** Well formed, never issued. */
const UNKNOWN = `sk-pi-${'A'.repeat(43)}`;

/** StoreView asks the store once per event-loop turn: each sync below is a later request's. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

t.test('keys: definite answers cached, expiry re-judged, another connection seen after sync', async (t) => {
  const file = tempDbFile(t);
  const clock = new ManualClock();
  const gateway = openStore(file, { clock });
  const cli = openStore(file, { clock });
  t.teardown(() => {
    gateway.close();
    cli.close();
  });
  let externalChanges = 0;
  const view = new StoreView(gateway, undefined, () => externalChanges++);
  const k = cli.apiKeys.create({ workspace: 'acme', expiresAt: clock.now() + 1000 });
  let lookups = 0;
  const verify = gateway.apiKeys.verify.bind(gateway.apiKeys);
  gateway.apiKeys.verify = (presented, now) => {
    lookups++;
    return verify(presented, now);
  };

  t.match(view.verifyKey(k.key, clock.now()), { status: 'ok', key: { id: k.id } });
  t.match(view.verifyKey(k.key, clock.now()), { status: 'ok' });
  t.equal(lookups, 1, 'the second check is served from memory');
  t.same(
    view.verifyKey(k.key, clock.now() + 1000),
    { status: 'expired' },
    'expiry is judged against each request time',
  );
  t.same(view.verifyKey(UNKNOWN, clock.now()), { status: 'not_found' });
  t.same(view.verifyKey(UNKNOWN, clock.now()), { status: 'not_found' });
  t.same(view.verifyKey('nope', clock.now()), { status: 'invalid' });
  t.same(view.verifyKey('nope', clock.now()), { status: 'invalid' });
  t.equal(lookups, 4, 'not_found is cached; invalid costs nothing to decide again');

  cli.apiKeys.revoke(k.id);
  t.match(view.verifyKey(k.key, clock.now()), { status: 'ok' }, 'cached until the next sync');
  await nextTurn();
  view.sync();
  t.equal(externalChanges, 1, 'the commit of another connection was noticed');
  t.same(view.verifyKey(k.key, clock.now()), { status: 'revoked' });
  await nextTurn();
  view.sync();
  t.equal(externalChanges, 1, 'reported once');
});

t.test('credentials: unsealed once, refused ones reported, names refreshed on sync', async (t) => {
  const file = tempDbFile(t);
  const key = masterKey(7);
  const gateway = openStore(file, { masterKey: key });
  const cli = openStore(file, { masterKey: key });
  t.teardown(() => {
    gateway.close();
    cli.close();
  });
  cli.secrets.set('openai-main', 'sk-upstream-1');
  const refused: string[] = [];
  const view = new StoreView(gateway, (name) => refused.push(name));
  t.ok(view.has('openai-main'));
  t.notOk(view.has('later'));
  t.equal(view.reveal('openai-main'), 'sk-upstream-1');
  cli.secrets.set('openai-main', 'sk-upstream-2');
  cli.secrets.set('later', 'sk-later');
  t.equal(view.reveal('openai-main'), 'sk-upstream-1', 'cached until the next sync');
  await nextTurn();
  view.sync();
  t.equal(view.reveal('openai-main'), 'sk-upstream-2');
  t.ok(view.has('later'));

  const raw = openDatabase(file);
  raw.prepare("UPDATE secrets SET ciphertext = zeroblob(32) WHERE name = 'later'").run();
  raw.close();
  await nextTurn();
  view.sync();
  t.equal(view.reveal('later'), null, 'a tampered row is refused');
  t.equal(view.reveal('later'), null);
  t.same(refused, ['later'], 'and reported once');
});

t.test('credentials across a master-key rotation by another process: opened values are kept', async (t) => {
  const file = tempDbFile(t);
  const oldKey = masterKey(7);
  const newKey = masterKey(8);
  const cli = openStore(file, { masterKey: oldKey });
  cli.secrets.set('openai-main', 'sk-upstream-1');
  cli.secrets.set('azure-main', 'azure-1');
  cli.secrets.set('spare', 'spare-1');
  const gateway = openStore(file, { masterKey: oldKey });
  t.teardown(() => gateway.close());
  const events: [string, string, boolean][] = [];
  const view = new StoreView(gateway, (name, err, kept) =>
    events.push([name, (err as { code?: string }).code ?? '', kept]),
  );
  t.same(events, [], 'every credential opened at start, none refused');
  // Never revealed through the view before the rotation, yet kept: the view opened it at start.
  t.equal(view.reveal('openai-main'), 'sk-upstream-1');

  cli.secrets.rotateMaster(newKey);
  cli.close();
  const rotated = openStore(file, { masterKey: newKey });
  t.teardown(() => rotated.close());
  await nextTurn();
  view.sync();
  t.equal(view.reveal('openai-main'), 'sk-upstream-1', 'the running view keeps serving what it opened');
  t.equal(view.reveal('spare'), 'spare-1', 'a credential first used after the rotation too');
  t.same(events, [
    ['openai-main', 'wrong_master_key', true],
    ['spare', 'wrong_master_key', true],
  ]);

  events.length = 0;
  rotated.secrets.set('added', 'added-under-new-key');
  rotated.secrets.remove('azure-main');
  await nextTurn();
  view.sync();
  t.equal(view.reveal('added'), null, 'a value it never opened cannot be served until a restart with the new key');
  t.notOk(view.has('azure-main'), 'a removed credential is gone');
  t.equal(view.reveal('azure-main'), null);
  t.same(events, [['added', 'wrong_master_key', false]]);

  const raw = openDatabase(file);
  raw.prepare("UPDATE secrets SET ciphertext = zeroblob(16) WHERE name = 'spare'").run();
  raw.close();
  events.length = 0;
  await nextTurn();
  view.sync();
  t.equal(view.reveal('spare'), 'spare-1', 'the row is now under a key the view does not hold: the old value stays');
  const fresh = new StoreView(rotated, (name, err, kept) =>
    events.push([name, (err as { code?: string }).code ?? '', kept]),
  );
  t.equal(fresh.reveal('spare'), null, 'a server restarted with the new key refuses the tampered row');
  t.equal(fresh.reveal('openai-main'), 'sk-upstream-1');
  t.same(events.at(-1), ['spare', 'tampered', false]);
});

t.test('the store is asked once per event-loop turn, however many requests the turn carries', async (t) => {
  const file = tempDbFile(t);
  const gateway = openStore(file);
  t.teardown(() => gateway.close());
  let asked = 0;
  const view = new StoreView(gateway, undefined, undefined, () => {
    asked++;
    return false;
  });
  view.sync();
  view.sync();
  view.sync();
  t.equal(asked, 1, 'three requests of one turn: one read');
  await nextTurn();
  view.sync();
  t.equal(asked, 2, 'the next turn asks again');
});

t.test('a flood of made-up keys pushes out no verified key', async (t) => {
  const file = tempDbFile(t);
  const clock = new ManualClock();
  const gateway = openStore(file, { clock });
  t.teardown(() => gateway.close());
  const view = new StoreView(gateway);
  const issued = gateway.apiKeys.create({ workspace: 'acme' });
  let lookups = 0;
  const verify = gateway.apiKeys.verify.bind(gateway.apiKeys);
  gateway.apiKeys.verify = (presented, now) => {
    lookups++;
    return verify(presented, now);
  };
  t.match(view.verifyKey(issued.key, clock.now()), { status: 'ok' });
  t.equal(lookups, 1);

  // Another tenant (or anyone) presents as many well-formed keys nobody issued as the cache holds.
  for (let i = 0; i < MAX_CACHED_KEYS; i++) {
    const madeUp = `sk-pi-${randomBytes(32).toString('base64url')}`;
    if (view.verifyKey(madeUp, clock.now()).status !== 'not_found') t.fail(`${madeUp} verified`);
  }
  lookups = 0;
  t.match(view.verifyKey(issued.key, clock.now()), { status: 'ok' }, 'the issued key still verifies');
  t.equal(lookups, 0, 'from memory: the flood did not clear it');
});
