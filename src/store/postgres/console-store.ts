// The PostgreSQL store behind the operator console's interface (src/store/console-store-interface.ts): the
// request log's search and spend, wallets, ledger rows, credits and keys — the same semantics and
// numbers as the embedded store, read from the database every node of a fleet writes. A server that
// does not answer is a StoreUnavailableError (the console answers 503 store_unavailable).
import type { ConsoleStore } from '../console-store-interface.ts';
import { unavailable } from './db.ts';
import { ledgerOfTrace, ledgerPage } from './ledger-read.ts';
import type { PgStore } from './store.ts';
import { pgLastUse, pgSpendBy, pgSpendDetail, pgSpendSeries } from './request-log-search.ts';

export function pgConsole(store: PgStore): ConsoleStore {
  const pool = store.pool;
  const ask = async <T>(doing: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw unavailable(err, doing);
    }
  };
  return {
    kind: 'postgres',
    requestLog: {
      search: (filter, limit) => ask('reading the request log', () => store.requestLog.search(filter, limit)),
      spend: (group, filter) =>
        ask('reading spend', async () => {
          await store.requestLog.flush();
          return pgSpendBy(pool, group, filter);
        }),
      spendDetail: (filter) =>
        ask('reading spend', async () => {
          await store.requestLog.flush();
          return pgSpendDetail(pool, filter);
        }),
      series: (interval, by, filter) =>
        ask('reading spend', async () => {
          await store.requestLog.flush();
          return pgSpendSeries(pool, interval, by, filter);
        }),
      lastUse: (workspace) =>
        ask('reading the request log', async () => {
          await store.requestLog.flush();
          return pgLastUse(pool, workspace);
        }),
    },
    wallets: {
      show: (ws, now) => ask('reading a wallet', () => store.wallets.show(ws, now)),
      workspaces: () => ask('listing wallets', () => store.wallets.workspaces()),
      ledger: (ws, opts) => ask('reading the ledger', () => ledgerPage(pool, ws, opts)),
      ledgerOf: (traceId) => ask('reading the ledger', () => ledgerOfTrace(pool, traceId)),
      credit: (ws, amount, note, key) => ask('crediting a wallet', () => store.wallets.credit(ws, amount, note, key)),
    },
    apiKeys: {
      create: (input) => ask('creating a key', () => store.apiKeys.create(input)),
      get: (id) => ask('reading a key', () => store.apiKeys.get(id)),
      list: (workspace) => ask('listing keys', () => store.apiKeys.list(workspace)),
      revoke: (id) => ask('revoking a key', () => store.apiKeys.revoke(id)),
      setExpiry: (id, at) => ask('setting a key expiry', () => store.apiKeys.setExpiry(id, at)),
    },
    operators: {
      add: (name, role, hash) => ask('adding an operator', () => store.operators.add(name, role, hash)),
      get: (name) => ask('reading an operator', () => store.operators.get(name)),
      list: () => ask('listing operators', () => store.operators.list()),
      remove: (name) => ask('removing an operator', () => store.operators.remove(name)),
    },
    audit: {
      append: (entry) => ask('writing the audit trail', () => store.audit.append(entry)),
      list: (page) => ask('reading the audit trail', () => store.audit.list(page)),
    },
  };
}
