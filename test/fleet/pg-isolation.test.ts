// A fleet node's sessions run at READ COMMITTED whatever the server's or the database's default: the
// writes are written for it (a row locked FOR UPDATE, then a fresh snapshot per statement). Here the
// database defaults to SERIALIZABLE; credits sent at once with one idempotency key still make one
// credit and five repeats, and credits with different keys all land, none refused for serialization.
import t from 'tap';
import { ManualClock } from '../../src/clock.ts';
import { openPgStore } from '../../src/store/postgres/store.ts';
import { type PrivatePg, startPrivatePg } from '../helpers/pg.ts';
import { migratedDatabase, walletRow } from '../helpers/pg-database.ts';
import { masterKey } from '../store/sqlite/fixtures/temp-db.ts';

let server: PrivatePg;
t.before(async () => {
  server = await startPrivatePg();
});
t.teardown(() => server.destroy());

t.test('a database whose default is SERIALIZABLE: sessions run at READ COMMITTED', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const url = await migratedDatabase(server, clock);
  const name = new URL(url).pathname.slice(1);
  const admin = await openPgStore(url, { clock, masterKey: masterKey(1) });
  await admin.pool.query(`ALTER DATABASE "${name}" SET default_transaction_isolation TO 'serializable'`);
  await admin.close();

  const store = await openPgStore(url, { clock, masterKey: masterKey(1) });
  t.teardown(() => store.close());
  const level = await store.pool.query<{ transaction_isolation: string }>('SHOW transaction_isolation');
  t.equal(level.rows[0]?.transaction_isolation, 'read committed', "the session's own level");

  const same = await Promise.all(
    Array.from({ length: 6 }, () => store.wallets.credit('acme', 1_000_000_000n, 'invoice 1', 'inv-1')),
  );
  t.equal(same.filter((r) => !r.replayed).length, 1, 'one credit, five repeats');
  const apart = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      store.wallets.credit('acme', 1_000_000_000n, `invoice ${i + 2}`, `inv-${i + 2}`),
    ),
  );
  t.equal(apart.filter((r) => !r.replayed).length, 6, 'six keys, six credits');
  t.equal((await walletRow(store, 'acme')).balance, 7_000_000_000n);
  t.ok((await store.wallets.verify()).ok, 'ledger verify');
});
