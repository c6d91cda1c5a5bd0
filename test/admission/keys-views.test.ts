// The keys-and-credentials contract (test/helpers/keys-view-contract.ts) over every view the
// gateway reads keys and credentials through: the embedded store's (`serve`), a serving thread's own
// on a database file and on PostgreSQL (`serve --workers N`), and a fleet node's view of PostgreSQL.
// The writer is another connection, as the CLI, the console or another node would be.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { MAX_UNSEEN_LOOKUPS, PgStoreView } from '../../src/fleet/pg-store-view.ts';
import type { KeysAndCredentials } from '../../src/admission/store-view.ts';
import { StoreView } from '../../src/admission/store-view.ts';
import { openThreadView } from '../../src/runtime/thread-view.ts';
import { ManualClock } from '../../src/clock.ts';
import { openStore } from '../../src/store/sqlite/store.ts';
import { openPgStore, type PgStore } from '../../src/store/postgres/store.ts';
import type { CoordinatorClient } from '../../src/workers/coordinator-client.ts';
import { keysViewContract, type KeysWriter } from '../helpers/keys-view-contract.ts';
import { startPrivatePg, type PrivatePg } from '../helpers/pg.ts';
import { masterKey, tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';

const NOW = Date.UTC(2026, 0, 15, 12);
const KEY = masterKey(3);

/** The view asks the store once per event-loop turn: a later request's sync is a later turn's. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A database file with the credential every rig starts with, and a writer on its own connection. */
function sqliteFile(t: Test, clock: ManualClock): { file: string; writer: KeysWriter } {
  const file = tempDbFile(t);
  const cli = openStore(file, { clock, masterKey: KEY });
  t.teardown(() => cli.close());
  cli.secrets.set('openai-main', 'sk-upstream-1');
  return {
    file,
    writer: {
      createKey: async (input) => cli.apiKeys.create(input),
      revoke: async (id) => void cli.apiKeys.revoke(id),
      setExpiry: async (id, at) => void cli.apiKeys.setExpiry(id, at),
      setSecret: async (name, value) => cli.secrets.set(name, value),
      removeSecret: async (name) => void cli.secrets.remove(name),
    },
  };
}

/** A serving thread's view, opened as `serve --workers N` opens it (the master key from the environment). */
async function threadView(t: Test, db: string): Promise<KeysAndCredentials> {
  const saved = process.env.PI_MASTER_KEY;
  process.env.PI_MASTER_KEY = KEY;
  // The coordinator is told of credits this thread's view notices; nothing here holds wallets.
  const client = { refresh: () => undefined } as unknown as CoordinatorClient;
  try {
    const tv = await openThreadView(db, client, () => undefined);
    t.teardown(() => tv.close());
    return tv.view;
  } finally {
    if (saved === undefined) delete process.env.PI_MASTER_KEY;
    else process.env.PI_MASTER_KEY = saved;
  }
}

t.test('the embedded store’s view (serve)', async (t) => {
  keysViewContract(t, async (t) => {
    const clock = new ManualClock(NOW);
    const { file, writer } = sqliteFile(t, clock);
    const gateway = openStore(file, { clock, masterKey: KEY });
    t.teardown(() => gateway.close());
    const view = new StoreView(gateway);
    return {
      view,
      writer,
      catchUp: async () => {
        await nextTurn();
        await view.sync();
      },
      now: clock.now(),
    };
  });
});

t.test('a serving thread’s view of a database file (serve --workers N)', async (t) => {
  keysViewContract(t, async (t) => {
    const clock = new ManualClock(NOW);
    const { file, writer } = sqliteFile(t, clock);
    const view = await threadView(t, file);
    return {
      view,
      writer,
      catchUp: async () => {
        await nextTurn();
        await view.sync();
      },
      now: clock.now(),
    };
  });
});

t.test('PostgreSQL', async (t) => {
  let server: PrivatePg | null = null;
  t.before(async () => {
    server = await startPrivatePg();
  });
  t.teardown(() => server?.destroy());

  /** A fresh migrated database with the starting credential, and a writer on its own pool. */
  const database = async (t: Test, clock: ManualClock): Promise<{ url: string; cli: PgStore; writer: KeysWriter }> => {
    const url = await (server as PrivatePg).createDatabase();
    const m = await openPgStore(url, { clock, checkSchema: false, masterKey: KEY });
    await m.migrate();
    await m.close();
    const cli = await openPgStore(url, { clock, masterKey: KEY });
    t.teardown(() => cli.close());
    await cli.secrets.set('openai-main', 'sk-upstream-1');
    return {
      url,
      cli,
      writer: {
        createKey: (input) => cli.apiKeys.create(input),
        revoke: async (id) => void (await cli.apiKeys.revoke(id)),
        setExpiry: async (id, at) => void (await cli.apiKeys.setExpiry(id, at)),
        setSecret: (name, value) => cli.secrets.set(name, value),
        removeSecret: async (name) => void (await cli.secrets.remove(name)),
      },
    };
  };

  t.test('a fleet node’s view', async (t) => {
    keysViewContract(t, async (t) => {
      const clock = new ManualClock(NOW);
      const { url, writer } = await database(t, clock);
      const store = await openPgStore(url, { clock, masterKey: KEY });
      t.teardown(() => store.close());
      // Polls on every sync (the node's is at most once a second): a request's sync starts the poll.
      const view = await PgStoreView.open(store, undefined, 0);
      return {
        view,
        writer,
        catchUp: async () => {
          view.sync();
          await view.pollNow();
        },
        now: clock.now(),
      };
    });
  });

  t.test('made-up keys cost a bounded number of queries and push out no verified key', async (t) => {
    const clock = new ManualClock(NOW);
    const { url, cli } = await database(t, clock);
    const issued = await cli.apiKeys.create({ workspace: 'open' });
    const store = await openPgStore(url, { clock, masterKey: KEY });
    t.teardown(() => store.close());
    const view = await PgStoreView.open(store, undefined, 60_000);
    let queries = 0;
    const find = store.apiKeys.find.bind(store.apiKeys);
    store.apiKeys.find = (presented) => {
      queries++;
      return find(presented);
    };
    t.match(await view.verifyKey(issued.key, NOW), { status: 'ok' }, 'an issued key verifies');
    t.equal(queries, 1);

    // A flood of well-formed keys nobody issued, all at once: random ones, and an issued key's
    // visible prefix with a guessed rest.
    const madeUp = (i: number) =>
      i % 2 === 0
        ? `sk-pi-${randomBytes(32).toString('base64url')}`
        : `${issued.key.slice(0, 14)}${randomBytes(32)
            .toString('base64url')
            .slice(0, issued.key.length - 14)}`;
    const flood = await Promise.all(Array.from({ length: 500 }, (_, i) => view.verifyKey(madeUp(i), NOW)));
    t.ok(
      flood.every((r) => r.status === 'not_found'),
      'every one refused as unknown',
    );
    t.equal(queries - 1, MAX_UNSEEN_LOOKUPS, `at most ${MAX_UNSEEN_LOOKUPS} of them were asked of PostgreSQL`);
    t.match(await view.verifyKey(issued.key, NOW), { status: 'ok' }, 'the verified key is still cached');
    t.equal(queries - 1, MAX_UNSEEN_LOOKUPS, 'without a query');

    // A key issued after this view last polled (another node, the CLI) verifies at once when no
    // flood holds the lookups; a wrong key with an issued key's prefix is asked too, and refused.
    const fresh = await cli.apiKeys.create({ workspace: 'open' });
    t.match(await view.verifyKey(fresh.key, NOW), { status: 'ok' }, 'a key issued since the last poll verifies');
    const wrong = `${issued.key.slice(0, 20)}${'A'.repeat(issued.key.length - 20)}`;
    t.match(await view.verifyKey(wrong, NOW), { status: 'not_found' });
    t.match(await view.verifyKey('sk-pi-short', NOW), { status: 'invalid' }, 'a malformed key: no query');
    t.equal(queries, 2 + MAX_UNSEEN_LOOKUPS + 1);

    // A key refused as revoked or expired, sent again and again (a forgotten deployment): its
    // verification and its record for the request log are asked once.
    const revoked = await cli.apiKeys.create({ workspace: 'open' });
    const expiring = await cli.apiKeys.create({ workspace: 'open', expiresAt: NOW + 1_000 });
    await cli.apiKeys.revoke(revoked.id);
    const before = queries;
    for (let i = 0; i < 5; i++) {
      t.match(await view.verifyKey(revoked.key, NOW), { status: 'revoked' });
      t.match(await view.keyRecord(revoked.key), { id: revoked.id });
      t.match(await view.verifyKey(expiring.key, NOW + 2_000), { status: 'expired' });
      t.match(await view.keyRecord(expiring.key), { id: expiring.id });
    }
    t.equal(queries - before, 2, 'one question per refused key');
    t.match(await view.verifyKey(expiring.key, NOW), { status: 'ok' }, 'expiry judged at each request’s time');
  });

  t.test('a node applies what changed and keeps the rest; one further behind than the log reloads', async (t) => {
    const clock = new ManualClock(NOW);
    const { url, cli } = await database(t, clock);
    await cli.secrets.set('anthropic-main', 'sk-ant-1');
    const a = await cli.apiKeys.create({ workspace: 'open' });
    const b = await cli.apiKeys.create({ workspace: 'open' });
    const store = await openPgStore(url, { clock, masterKey: KEY });
    t.teardown(() => store.close());
    const view = await PgStoreView.open(store, undefined, 60_000);
    // What the view asks of PostgreSQL from here on.
    const asked = { find: 0, whole: 0, opened: [] as string[][] };
    const find = store.apiKeys.find.bind(store.apiKeys);
    store.apiKeys.find = (presented) => {
      asked.find++;
      return find(presented);
    };
    const digests = store.apiKeys.digests.bind(store.apiKeys);
    store.apiKeys.digests = () => {
      asked.whole++;
      return digests();
    };
    const reveal = store.secrets.reveal.bind(store.secrets);
    store.secrets.reveal = (names) => {
      asked.opened.push([...names]);
      return reveal(names);
    };

    t.match(await view.verifyKey(a.key, NOW), { status: 'ok' });
    t.match(await view.verifyKey(b.key, NOW), { status: 'ok' });
    t.equal(asked.find, 2, 'both verified once');

    // Another node or the CLI: a key issued, one revoked, one credential set again.
    const c = await cli.apiKeys.create({ workspace: 'open' });
    await cli.apiKeys.revoke(a.id);
    await cli.secrets.set('openai-main', 'sk-upstream-2');
    await view.pollNow();
    t.equal(asked.whole, 0, 'nothing reloaded whole');
    t.same(asked.opened, [['openai-main']], 'only the changed credential opened again');
    t.equal(view.reveal('openai-main'), 'sk-upstream-2');
    t.equal(view.reveal('anthropic-main'), 'sk-ant-1');
    t.match(await view.verifyKey(b.key, NOW), { status: 'ok' }, 'the key nobody changed');
    t.equal(asked.find, 2, 'is still cached');
    t.match(await view.verifyKey(a.key, NOW), { status: 'revoked' }, 'the revoked key is refused');
    t.match(await view.verifyKey(c.key, NOW), { status: 'ok' }, 'the issued key verifies');
    t.equal(asked.find, 4, 'each asked once');

    await cli.secrets.remove('anthropic-main');
    await view.pollNow();
    t.equal(view.has('anthropic-main'), false, 'a removed credential is gone');
    t.equal(asked.whole, 0);

    // Changes the log no longer holds (a node offline past the last 10,000, here cut by hand).
    await cli.apiKeys.revoke(b.id);
    const owner = new pg.Client({ connectionString: url });
    await owner.connect();
    await owner.query('DELETE FROM store_change_log');
    await owner.end();
    await view.pollNow();
    t.equal(asked.whole, 1, 'everything reloaded');
    t.match(await view.verifyKey(b.key, NOW), { status: 'revoked' }, 'and the change is seen');
    t.match(await view.verifyKey(c.key, NOW), { status: 'ok' });
  });

  t.test('a lookup that read a key before a change applied while it ran is answered, not cached', async (t) => {
    const clock = new ManualClock(NOW);
    const { url, cli } = await database(t, clock);
    const k = await cli.apiKeys.create({ workspace: 'open' });
    const store = await openPgStore(url, { clock, masterKey: KEY });
    t.teardown(() => store.close());
    const view = await PgStoreView.open(store, undefined, 60_000);
    // The first lookup reads the key, then its answer is held back until the revoke was applied.
    const find = store.apiKeys.find.bind(store.apiKeys);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let read: () => void = () => undefined;
    const firstRead = new Promise<void>((resolve) => {
      read = resolve;
    });
    let lookups = 0;
    store.apiKeys.find = async (presented) => {
      const record = await find(presented);
      if (++lookups === 1) {
        read();
        await held;
      }
      return record;
    };
    const racing = view.verifyKey(k.key, NOW);
    await firstRead;
    await cli.apiKeys.revoke(k.id);
    await view.pollNow();
    release();
    t.match(await racing, { status: 'ok' }, 'the lookup that raced the revoke answers what it read');
    t.match(await view.verifyKey(k.key, NOW), { status: 'revoked' }, 'the next request asks again');
    t.equal(lookups, 2);
  });

  t.test('a key lookup that ran out of time is a 503 to retry, not an error of the request', async (t) => {
    const clock = new ManualClock(NOW);
    const { url, cli } = await database(t, clock);
    const issued = await cli.apiKeys.create({ workspace: 'open' });
    const store = await openPgStore(url, { clock, masterKey: KEY });
    t.teardown(() => store.close());
    const view = await PgStoreView.open(store, undefined, 60_000);
    const find = store.apiKeys.find.bind(store.apiKeys);
    let failures = 1;
    store.apiKeys.find = (presented) =>
      failures-- > 0
        ? Promise.reject(Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }))
        : find(presented);
    await t.rejects(view.verifyKey(issued.key, NOW), { code: 'store_unavailable', status: 503 });
    t.match(await view.verifyKey(issued.key, NOW), { status: 'ok' }, 'asked again, it verifies');
  });

  t.test('a serving thread’s view (serve --workers N on PostgreSQL)', async (t) => {
    keysViewContract(t, async (t) => {
      const clock = new ManualClock(NOW);
      const { url, writer } = await database(t, clock);
      const view = await threadView(t, url);
      return {
        view,
        writer,
        // Its change poll runs at most once a second; the test asks for it at once.
        catchUp: () => (view as PgStoreView).pollNow(),
        now: clock.now(),
      };
    });
  });
});
