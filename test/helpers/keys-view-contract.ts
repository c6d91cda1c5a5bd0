// What every view of keys and credentials promises the request path, whichever way the gateway
// runs: the embedded store's view (`serve`), a serving thread's own view (`serve --workers N`, on a
// database file or on PostgreSQL) and a fleet node's view of PostgreSQL. One suite, run once per
// implementation (test/admission/keys-views.test.ts): a key is verified against the store on a miss,
// its expiry judged against each request's `now`; a change another process commits (a key revoked
// or given an expiry, a credential set, changed or removed) is what the view answers once it has
// caught up, which each implementation promises at its own pace (the next request's `sync()` on a
// database file, the change poll on PostgreSQL).
import type { Test } from 'tap';
import type { KeysAndCredentials } from '../../src/admission/store-view.ts';
import type { CreateKeyInput } from '../../src/store/key-format.ts';
import type { CreatedApiKey } from '../../src/store/types.ts';

/** Another process's writes to the store the view reads (the CLI, the console, another node). */
export interface KeysWriter {
  createKey(input: CreateKeyInput): Promise<CreatedApiKey>;
  revoke(id: string): Promise<void>;
  setExpiry(id: string, expiresAt: number | null): Promise<void>;
  setSecret(name: string, value: string): Promise<void>;
  removeSecret(name: string): Promise<void>;
}

/** One implementation over a migrated store holding the credential `openai-main` = `sk-upstream-1`
 *  (set before the view opened). */
export interface KeysViewRig {
  view: KeysAndCredentials;
  writer: KeysWriter;
  /** Resolves once the view has caught up with every commit so far, the way its gateway would
   *  (a later request's `sync()`; on PostgreSQL, its change poll). */
  catchUp(): Promise<void>;
  /** The store's clock time: keys are created at it. */
  now: number;
}

type Make = (t: Test) => Promise<KeysViewRig>;

/** Well formed, never issued. */
const UNKNOWN = `sk-pi-${'A'.repeat(43)}`;

const verify = async (r: KeysViewRig, key: string, now = r.now) => await r.view.verifyKey(key, now);

export function keysViewContract(t: Test, make: Make): void {
  t.test('a key made elsewhere is verified; unknown and malformed keys refused', async (t) => {
    const r = await make(t);
    const k = await r.writer.createKey({ workspace: 'acme', name: 'backend' });
    t.match(await verify(r, k.key), { status: 'ok', key: { id: k.id, workspace: 'acme', name: 'backend' } });
    t.match(await verify(r, k.key), { status: 'ok', key: { id: k.id } }, 'again (a cache may answer)');
    t.same(await verify(r, UNKNOWN), { status: 'not_found' });
    t.same(await verify(r, UNKNOWN), { status: 'not_found' }, 'again');
    t.same(await verify(r, 'nope'), { status: 'invalid' });
    const near = `${k.key.slice(0, -1)}${k.key.endsWith('A') ? 'B' : 'A'}`;
    t.same(await verify(r, near), { status: 'not_found' }, 'one character off is another key');
    t.same(await verify(r, `${k.key}x`), { status: 'invalid' }, 'one character more is not a key');
  });

  t.test('expiry is judged against each request’s time, cached or not', async (t) => {
    const r = await make(t);
    const k = await r.writer.createKey({ workspace: 'acme', expiresAt: r.now + 1000 });
    t.match(await verify(r, k.key, r.now + 999), { status: 'ok' }, 'a millisecond before');
    t.same(await verify(r, k.key, r.now + 1000), { status: 'expired' }, 'at the expiry');
    t.match(await verify(r, k.key, r.now), { status: 'ok' }, 'an earlier request is judged by its own time');
    const later = await r.writer.createKey({ workspace: 'acme', expiresAt: r.now + 1000 });
    t.same(await verify(r, later.key, r.now + 5000), { status: 'expired' }, 'expired on its first check');
  });

  t.test('a key revoked elsewhere is refused once the view caught up; its record stays readable', async (t) => {
    const r = await make(t);
    const k = await r.writer.createKey({ workspace: 'acme', name: 'leaked' });
    t.match(await verify(r, k.key), { status: 'ok' }, 'cached as good');
    await r.writer.revoke(k.id);
    await r.catchUp();
    t.same(await verify(r, k.key), { status: 'revoked' });
    t.same(await verify(r, k.key), { status: 'revoked' }, 'and stays refused');
    if (r.view.keyRecord)
      t.match(await r.view.keyRecord(k.key), { id: k.id, name: 'leaked' }, 'the refused key’s record, for the log');
    const fresh = await r.writer.createKey({ workspace: 'acme' });
    await r.writer.revoke(fresh.id);
    t.same(await verify(r, fresh.key), { status: 'revoked' }, 'revoked before the view ever saw it');
  });

  t.test('an expiry set or cleared elsewhere applies once the view caught up', async (t) => {
    const r = await make(t);
    const k = await r.writer.createKey({ workspace: 'acme' });
    t.match(await verify(r, k.key, r.now + 10_000), { status: 'ok' }, 'no expiry, cached');
    await r.writer.setExpiry(k.id, r.now + 5_000);
    await r.catchUp();
    t.same(await verify(r, k.key, r.now + 10_000), { status: 'expired' }, 'the new expiry');
    t.match(await verify(r, k.key, r.now + 4_999), { status: 'ok' }, 'before it');
    await r.writer.setExpiry(k.id, null);
    await r.catchUp();
    t.match(await verify(r, k.key, r.now + 10_000), { status: 'ok' }, 'cleared: good again');
  });

  t.test('credentials: opened from the store; set, changed and removed elsewhere once caught up', async (t) => {
    const r = await make(t);
    t.ok(r.view.has('openai-main'));
    t.equal(r.view.reveal('openai-main'), 'sk-upstream-1');
    t.notOk(r.view.has('later'));
    t.equal(r.view.reveal('later'), null, 'absent');
    await r.writer.setSecret('openai-main', 'sk-upstream-2');
    await r.writer.setSecret('later', 'sk-later');
    await r.catchUp();
    t.equal(r.view.reveal('openai-main'), 'sk-upstream-2', 'the changed value');
    t.ok(r.view.has('later'), 'a credential set after the view opened');
    t.equal(r.view.reveal('later'), 'sk-later');
    await r.writer.removeSecret('later');
    await r.catchUp();
    t.notOk(r.view.has('later'), 'removed');
    t.equal(r.view.reveal('later'), null);
    t.equal(r.view.reveal('openai-main'), 'sk-upstream-2', 'the others stay');
  });
}
