// The embedded SQLite store behind the operator console's asynchronous interface
// (src/store/console-store-interface.ts): each call runs at once, synchronously, and a throw becomes
// a rejection, as PostgreSQL's would (src/store/postgres/console-store.ts).
import type { AuditTrail, ConsoleStore, OperatorAccounts } from '../console-store-interface.ts';
import type { Store } from './store.ts';
import { syncCall } from './sync-call.ts';

/** The embedded store behind the console's interface (each call runs at once, synchronously). */
export function sqliteConsole(store: Store): ConsoleStore {
  const run = syncCall;
  return {
    kind: 'sqlite',
    requestLog: {
      search: (filter, limit) => run(() => store.requestLog.search(filter, limit)),
      spend: (group, filter) => run(() => store.requestLog.spend(group, filter)),
      spendDetail: (filter) => run(() => store.requestLog.spendDetail(filter)),
      series: (interval, by, filter) => run(() => store.requestLog.series(interval, by, filter)),
      lastUse: (workspace) => run(() => store.requestLog.lastUse(workspace)),
    },
    wallets: {
      show: (ws, now) => run(() => store.wallets.show(ws, now)),
      workspaces: () => run(() => store.wallets.workspaces()),
      ledger: (ws, opts) => run(() => store.wallets.ledger(ws, opts)),
      ledgerOf: (traceId) => run(() => store.wallets.ledgerOf(traceId)),
      credit: (ws, amount, note, key) => run(() => store.wallets.credit(ws, amount, note, key)),
    },
    apiKeys: {
      create: (input) => run(() => store.apiKeys.create(input)),
      get: (id) => run(() => store.apiKeys.get(id)),
      list: (workspace) => run(() => store.apiKeys.list(workspace)),
      revoke: (id) => run(() => store.apiKeys.revoke(id)),
      setExpiry: (id, at) => run(() => store.apiKeys.setExpiry(id, at)),
    },
    operators: sqliteOperators(store),
    audit: sqliteAudit(store),
  };
}

export function sqliteOperators(store: Store): OperatorAccounts {
  return {
    add: (name, role, hash) => syncCall(() => store.operators.add(name, role, hash)),
    get: (name) => syncCall(() => store.operators.get(name)),
    list: () => syncCall(() => store.operators.list()),
    remove: (name) => syncCall(() => store.operators.remove(name)),
  };
}

export function sqliteAudit(store: Store): AuditTrail {
  return {
    append: (entry) => syncCall(() => store.audit.append(entry)),
    list: (page) => syncCall(() => store.audit.list(page)),
  };
}
