// The wallet-service contract (test/helpers/wallet-service-contract.ts) over every implementation
// the gateway runs with: the wallet book committing on its own connection, the book behind the
// writer thread (`serve`), a serving thread's coordinator client over the coordinator
// (`serve --workers N`), the PostgreSQL wallet service of a fleet node, and the escrow service
// (slices of the wallet admitted in memory) with and without its per-request fallback.
import t, { type Test } from 'tap';
import type { WalletService } from '../../src/admission/admission.ts';
import { FixedWindowRateLimiter } from '../../src/admission/rate-limit.ts';
import { EscrowWalletService } from '../../src/fleet/pg-escrow.ts';
import type { EscrowTuning } from '../../src/fleet/pg-escrow-slice.ts';
import { PgWalletService } from '../../src/fleet/pg-wallet-service.ts';
import { WalletBook } from '../../src/admission/wallet-book.ts';
import { ManualClock } from '../../src/clock.ts';
import { openStore, type Store } from '../../src/store/sqlite/store.ts';
import { ThreadWriter } from '../../src/store/sqlite/thread-writer.ts';
import { openPgStore, type PgStore } from '../../src/store/postgres/store.ts';
import { coordinatorClient, lentRoomRig, memoryBook, sharedAdmissionRig } from '../helpers/coordinator-rig.ts';
import { startPrivatePg, type PrivatePg } from '../helpers/pg.ts';
import { walletServiceContract, type WalletRig } from '../helpers/wallet-service-contract.ts';
import { masterKey, tempDbFile } from '../store/sqlite/fixtures/temp-db.ts';

const NOW = Date.UTC(2026, 0, 15, 12);

/** The ledger side every SQLite rig shares: credits through the store, reads once `flush` wrote. */
function sqliteSide(
  store: Store,
  book: WalletBook,
  clock: ManualClock,
  verifyOpts: { unservedHolds?: boolean } = {},
): Omit<WalletRig, 'service'> {
  return {
    credit: async (ws, nano) => {
      store.wallets.credit(ws, nano, 'contract');
      book.refresh();
    },
    ledger: async (ws) => {
      book.flush();
      const v = store.wallets.show(ws, clock.now());
      return { balance: v.balance, held: v.held };
    },
    verify: async () => store.wallets.verify(verifyOpts),
  };
}

t.test('wallet book, committing on its own connection', async (t) => {
  walletServiceContract(
    t,
    async (t) => {
      const clock = new ManualClock(NOW);
      const { store, book } = memoryBook(t, clock);
      return { service: book, ...sqliteSide(store, book, clock) };
    },
    { propertyRuns: 100 },
  );
});

t.test('wallet book behind the writer thread (serve)', async (t) => {
  walletServiceContract(
    t,
    async (t) => {
      const clock = new ManualClock(NOW);
      const file = tempDbFile(t);
      const store = openStore(file, { clock });
      const writer = await ThreadWriter.start(file);
      const book = new WalletBook(store, () => undefined, writer);
      t.teardown(async () => {
        book.close();
        await writer.close();
        store.close();
      });
      // The writer thread takes the holds under its own owner, which this thread's `verify` cannot
      // see alive (another process's `ledger verify` can, by its pid): open holds are left out here.
      return { service: book, ...sqliteSide(store, book, clock, { unservedHolds: false }) };
    },
    { propertyRuns: 8 },
  );
});

t.test('coordinator client of a serving thread (serve --workers N)', async (t) => {
  walletServiceContract(
    t,
    async (t) => {
      const clock = new ManualClock(NOW);
      const { store, book } = memoryBook(t, clock);
      const client = coordinatorClient(t, clock, { wallets: book, limiter: new FixedWindowRateLimiter(clock) });
      return { service: client, ...sqliteSide(store, book, clock) };
    },
    { propertyRuns: 50 },
  );
});

t.test('a serving thread’s holds in shared memory (serve --workers N on a database file)', async (t) => {
  walletServiceContract(
    t,
    async (t) => {
      const clock = new ManualClock(NOW);
      const { store, book } = memoryBook(t, clock);
      const { client, wallets } = sharedAdmissionRig(t, clock, book).worker(1);
      const side = sqliteSide(store, book, clock);
      return {
        service: wallets,
        ...side,
        // Holds are announced with the thread's next message: send what is queued first.
        ledger: (ws) => {
          client.close();
          return side.ledger(ws);
        },
      };
    },
    { propertyRuns: 50 },
  );
});

/** A fleet node's wallet service on a fresh PostgreSQL database; its `flush` (escrow's) writes what
 *  the service decided in memory before the books are read, so that held is what its open requests
 *  reserved, as the model has it. */
function postgresContract(
  name: string,
  make: (
    store: PgStore,
    clock: ManualClock,
    t: Test,
  ) => { service: WalletService; flush?: () => Promise<void>; close?: () => Promise<void> },
  propertyRuns: number,
): void {
  t.test(name, async (t) => {
    let server: PrivatePg | null = null;
    t.before(async () => {
      server = await startPrivatePg();
    });
    t.teardown(() => server?.destroy());
    walletServiceContract(
      t,
      async (t) => {
        const clock = new ManualClock(NOW);
        const url = await (server as PrivatePg).createDatabase();
        const m = await openPgStore(url, { clock, checkSchema: false, masterKey: masterKey(1) });
        await m.migrate();
        await m.close();
        const store = await openPgStore(url, { clock, masterKey: masterKey(1) });
        const { service, flush, close } = make(store, clock, t);
        t.teardown(async () => {
          await service.close();
          await close?.();
          await store.close();
        });
        return {
          service,
          credit: async (ws, nano) => {
            await store.wallets.credit(ws, nano, 'contract');
            await service.refresh();
          },
          ledger: async (ws) => {
            await flush?.();
            const v = await store.wallets.show(ws, clock.now());
            return { balance: v.balance, held: v.held };
          },
          verify: () => store.wallets.verify(),
        };
      },
      { propertyRuns },
    );
  });
}

postgresContract(
  'PostgreSQL wallet service (fleet node)',
  (store, clock) => ({ service: new PgWalletService(store, { clock, node: 'contract', timer: false }) }),
  12,
);

const escrowContract = (name: string, tuning: Partial<EscrowTuning>, propertyRuns: number) =>
  postgresContract(
    name,
    (store, clock) => {
      const service = new EscrowWalletService(store, { clock, node: 'contract', timer: false, tuning });
      return { service, flush: () => service.flush() };
    },
    propertyRuns,
  );

escrowContract('escrow service, slices only (no per-request threshold)', { fallbackHolds: 0, probeMs: 0 }, 12);
escrowContract('escrow service, default threshold (small wallets go per request)', {}, 6);

/** A fleet node's serving thread (`serve --workers N`): holds taken from room the escrow's slices
 *  lend to shared memory, the rest by message to the coordinator. */
const lentRoomContract = (name: string, tuning: Partial<EscrowTuning>, propertyRuns: number) =>
  postgresContract(
    name,
    (store, clock, t) => {
      const escrow = new EscrowWalletService(store, { clock, node: 'contract', timer: false, tuning });
      const { client, wallets } = lentRoomRig(t, clock, escrow).worker(1);
      return {
        service: wallets,
        // Holds are announced with the thread's next message: send what is queued first.
        flush: () => {
          client.close();
          return escrow.flush();
        },
        close: () => escrow.close(),
      };
    },
    propertyRuns,
  );

lentRoomContract(
  'a fleet node’s serving thread, holds from room its slices lend',
  { fallbackHolds: 0, probeMs: 0 },
  12,
);
lentRoomContract('a fleet node’s serving thread, default threshold', {}, 6);
