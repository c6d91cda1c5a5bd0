// The embedded SQLite store behind the CLI's asynchronous interface (src/store/admin-store-interface.ts):
// each call runs at once, synchronously, and a throw becomes a rejection, as PostgreSQL's would.
import type { AdminStore } from '../admin-store-interface.ts';
import { sqliteAudit, sqliteOperators } from './console-store.ts';
import type { Store } from './store.ts';
import { syncCall } from './sync-call.ts';

/** The embedded store behind the asynchronous interface (each call runs at once, synchronously). */
export function sqliteAdmin(store: Store): AdminStore {
  const run = syncCall;
  return {
    kind: 'sqlite',
    apiKeys: {
      create: (input) => run(() => store.apiKeys.create(input)),
      get: (id) => run(() => store.apiKeys.get(id)),
      list: (workspace) => run(() => store.apiKeys.list(workspace)),
      revoke: (id) => run(() => store.apiKeys.revoke(id)),
    },
    wallets: {
      credit: (ws, amount, note, key) => run(() => store.wallets.credit(ws, amount, note, key)),
      show: (ws, now) => run(() => store.wallets.show(ws, now)),
      usage: (ws, since, until) => run(() => store.wallets.usage(ws, since, until)),
      workspaces: () => run(() => store.wallets.workspaces()),
      verify: () => run(() => store.wallets.verify()),
    },
    secrets: {
      set: (name, value) => run(() => store.secrets.set(name, value)),
      list: () => run(() => store.secrets.list()),
      remove: (name) => run(() => store.secrets.remove(name)),
      assertUsable: () => run(() => store.secrets.assertUsable()),
      rotateMaster: (key) => run(() => store.secrets.rotateMaster(key)),
    },
    requestLog: { query: (q) => run(() => store.requestLog.query(q)) },
    operators: sqliteOperators(store),
    audit: sqliteAudit(store),
    close: () => run(() => store.close()),
  };
}
