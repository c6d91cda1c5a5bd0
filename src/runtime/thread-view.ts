// What a serving thread of `serve --workers N` reads itself: keys and sealed credentials, cached per
// thread and dropped when the store's change counter moves. On a database file, a read-only
// connection (the coordinator's writer thread writes); on PostgreSQL, a pool of two connections.
import type { KeysAndCredentials } from '../admission/store-view.ts';
import { PgStoreView } from '../fleet/pg-store-view.ts';
import { StoreView } from '../admission/store-view.ts';
import { isPostgresUrl } from '../store/admin-store-interface.ts';
import { openStore } from '../store/sqlite/store.ts';
import { openPgStore } from '../store/postgres/store.ts';

export interface ThreadView {
  view: KeysAndCredentials;
  credentialNames(): ReadonlySet<string>;
  close(): Promise<void>;
}

type Log = (event: string, fields?: Record<string, unknown>) => void;

/** `wallets.refresh()` is called when another process committed (a credit): the coordinator reloads. */
export async function openThreadView(db: string, wallets: { refresh(): unknown }, log: Log): Promise<ThreadView> {
  const onBadSecret = (name: string, _err: unknown, kept: boolean) =>
    log(kept ? 'sealed_secret_kept_after_rotation' : 'sealed_secret_refused', { name });
  if (isPostgresUrl(db)) {
    const store = await openPgStore(db, { poolMax: 2 });
    try {
      await store.secrets.assertUsable();
      const view = await PgStoreView.open(store, onBadSecret);
      return {
        view,
        credentialNames: () => {
          if (!view.storeAnswers) throw new Error('PostgreSQL does not answer');
          return view.names();
        },
        close: () => store.close(),
      };
    } catch (err) {
      await store.close();
      throw err;
    }
  }
  // Read-only: this thread never writes the database (the coordinator's writer thread does).
  const store = openStore(db, { readonly: true });
  try {
    store.secrets.assertUsable();
    const view = new StoreView(
      store,
      onBadSecret,
      () => void wallets.refresh(),
      // The writer thread commits all the time; only keys, secrets and credits move this counter.
      () => store.cachedDataChangedSinceLastCheck(),
    );
    return { view, credentialNames: () => store.secrets.names(), close: async () => store.close() };
  } catch (err) {
    store.close();
    throw err;
  }
}
