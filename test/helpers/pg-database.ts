// A fresh database of the gateway's schema on a private PostgreSQL (pg.ts), and the wallet row as
// PostgreSQL has it: what the fleet's wallet suites read beside the services they test.
import type { Clock } from '../../src/clock.ts';
import { openPgStore, type PgStore } from '../../src/store/postgres/store.ts';
import { masterKey } from '../store/sqlite/fixtures/temp-db.ts';
import type { PrivatePg } from './pg.ts';

/** A new database on `server`, migrated; its URL. */
export async function migratedDatabase(server: PrivatePg, clock: Clock): Promise<string> {
  const url = await server.createDatabase();
  const m = await openPgStore(url, { clock, checkSchema: false, masterKey: masterKey(1) });
  await m.migrate();
  await m.close();
  return url;
}

/** The workspace's balance and held amount, straight from its wallet row (zero when it has none). */
export async function walletRow(store: PgStore, ws: string): Promise<{ balance: bigint; held: bigint }> {
  const r = await store.pool.query<{ balance: bigint; held: bigint }>(
    'SELECT balance_nano AS balance, held_nano AS held FROM wallets WHERE workspace = $1',
    [ws],
  );
  return r.rows[0] ?? { balance: 0n, held: 0n };
}
