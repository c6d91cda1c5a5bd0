// The PostgreSQL store behind the operator console's interface (src/store/console-store.ts): the
// request log's search and spend, wallets, ledger rows, credits and keys — the same semantics and
// numbers as the embedded store, read from the database every node of a fleet writes.
import type { ConsoleStore } from '../store/console-store.ts';
import { ledgerOfTrace, ledgerPage } from './ledger-read.ts';
import type { PgStore } from './pg-store.ts';
import { pgSpendBy, pgSpendDetail } from './request-log-search.ts';

export function pgConsole(store: PgStore): ConsoleStore {
  const pool = store.pool;
  return {
    kind: 'postgres',
    requestLog: {
      search: (filter, limit) => store.requestLog.search(filter, limit),
      spend: async (group, filter) => {
        await store.requestLog.flush();
        return pgSpendBy(pool, group, filter);
      },
      spendDetail: async (filter) => {
        await store.requestLog.flush();
        return pgSpendDetail(pool, filter);
      },
    },
    wallets: {
      show: (ws, now) => store.wallets.show(ws, now),
      workspaces: () => store.wallets.workspaces(),
      ledger: (ws, opts) => ledgerPage(pool, ws, opts),
      ledgerOf: (traceId) => ledgerOfTrace(pool, traceId),
      credit: (ws, amount, note) => store.wallets.credit(ws, amount, note),
    },
    apiKeys: {
      create: (input) => store.apiKeys.create(input),
      get: (id) => store.apiKeys.get(id),
      list: (workspace) => store.apiKeys.list(workspace),
      revoke: (id) => store.apiKeys.revoke(id),
      setExpiry: (id, at) => store.apiKeys.setExpiry(id, at),
    },
  };
}
