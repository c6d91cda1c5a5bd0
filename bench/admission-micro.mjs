// Admission micro-benchmark (part (a) of bench/admission.mjs), in one process pinned to core 0: the per-request
// store path of the gateway, called as src/admission/admission.ts calls it for the inference
// handler, against a file-backed store in WAL mode (synchronous=NORMAL, as openStore configures it):
//   StoreView.sync (PRAGMA data_version) + StoreView.verifyKey (cached after the first call)
//   FixedWindowRateLimiter.take
//   WalletBook hold + settle, their ledger rows written by Wallets.apply: one commit per write
//   (what per-request transactions cost), or one per event-loop turn of 1 or 16 requests
//   RequestLog.append (queued; its batched flush is included: every batch ends with flush())
// Reports µs/request, median of several batches, for the whole path and for each part, plus two
// floors measured with better-sqlite3 directly on a WAL file: one IMMEDIATE transaction holding a
// single UPDATE, and PRAGMA data_version through db.pragma() vs a prepared statement.
// Prints one JSON line {"ready":true,"result":{...}} (read by bench/admission.mjs).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

const TREE = process.env.PI_BENCH_TREE || fileURLToPath(new URL('..', import.meta.url));
const dist = (p) => import(join(TREE, 'dist', 'src', p));
const { openStore } = await dist('store/sqlite/store.js');
const { WalletBook } = await dist('admission/wallet-book.js');
const { StoreView } = await dist('admission/store-view.js');
const { FixedWindowRateLimiter } = await dist('admission/rate-limit.js');
const { systemClock } = await dist('clock.js');

const quick = process.argv.includes('--quick');
const BATCHES = quick ? 5 : 9;
const N = quick ? 2000 : 3000;

const dir = mkdtempSync(join(tmpdir(), 'pi-bench-adm-'));
const cleanup = () => rmSync(dir, { recursive: true, force: true });
process.on('exit', cleanup);
// Stopped by the parent once it has the result line: exit through the 'exit' handler (cleanup).
process.on('SIGTERM', () => process.exit(0));

const store = openStore(join(dir, 'bench.db'), {
  masterKey: randomBytes(32).toString('base64'),
  requestLog: { flushIntervalMs: 200, maxBatch: 1000 },
});
const WS = 'acme';
const key = store.apiKeys.create({ workspace: WS, name: 'bench', rpm: 1_000_000_000 });
store.wallets.credit(WS, 1_000_000n * 1_000_000_000n, 'bench credit');
const view = new StoreView(store);
const limiter = new FixedWindowRateLimiter(systemClock);

const details = {
  model: 'openai/gpt-6-luna',
  provider: 'local',
  deployment: 'local-sim/gpt-6-luna',
  promptTokens: 20,
  completionTokens: 11,
  costAtto: '162500000000000',
};
function logRow(traceId, keyId, now) {
  return {
    trace_id: traceId,
    ts: now,
    workspace: WS,
    key_id: keyId,
    endpoint: 'chat_completions',
    model_requested: 'openai/gpt-6-luna',
    model_served: 'openai/gpt-6-luna',
    provider: 'local',
    deployment: 'local-sim/gpt-6-luna',
    attempts: 1,
    attempts_json: [
      {
        provider: 'local',
        model: 'openai/gpt-6-luna',
        deployment: 'local-sim/gpt-6-luna',
        outcome: 'ok',
        status: 200,
        ms: 1,
      },
    ],
    stream: false,
    status: 200,
    error_code: null,
    latency_ms: 1,
    ttfb_ms: 1,
    prompt_tokens: 20,
    completion_tokens: 11,
    reasoning_tokens: 0,
    cached_tokens: 0,
    cost_nano: 163n,
    app_title: null,
    app_origin: null,
    session_id: null,
  };
}

/** Runs `body(i)` N times per batch, BATCHES batches (+1 warm-up); median wall and CPU µs per call. */
function bench(name, body, { perBatch } = {}) {
  const per = [];
  const cpu = [];
  for (let b = 0; b <= BATCHES; b++) {
    const ctx = perBatch?.() ?? null;
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) body(i, ctx);
    ctx?.end?.();
    const us = Number(process.hrtime.bigint() - t0) / 1000 / N;
    const c = process.cpuUsage(c0);
    if (b > 0) {
      per.push(us); // batch 0 is warm-up
      cpu.push((c.user + c.system) / N);
    }
  }
  per.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return {
    name,
    medianUs: per[per.length >> 1],
    minUs: per[0],
    maxUs: per[per.length - 1],
    cpuUs: cpu[cpu.length >> 1],
    batches: per.length,
    perBatch: N,
  };
}

const results = [];
const presented = key.key;

// What the handler does before the wallet: sees new writes, checks the key, takes a rate token.
function admitKey(now) {
  view.sync();
  const check = view.verifyKey(presented, now);
  if (check.status !== 'ok') throw new Error('key check failed');
  if (!limiter.take(check.key.id, check.key.rpm ?? 600).ok) throw new Error('rate limited');
  return check;
}

// The wallet book the gateway admits with; its ledger rows go through Wallets.apply in Store.batch.
const book = new WalletBook(store);
const trace = (i) => `book-${process.hrtime.bigint()}-${i}`;

// The whole path for one successful request with a commit after each ledger write (the hold, then
// the settlement): what per-request transactions cost, the baseline the group commit is measured against.
results.push(
  bench(
    'full path: sync + verifyKey + take + hold + settle + append (+ flush), one commit per ledger write',
    (i) => {
      const now = Date.now();
      const check = admitKey(now);
      const traceId = trace(i);
      if (!book.hold(WS, traceId, 2_000_000n).ok) throw new Error('hold refused');
      book.flush();
      void book.settle(traceId, 163n, details);
      book.flush();
      store.requestLog.append(logRow(traceId, check.key.id, now));
    },
    { perBatch: () => ({ end: () => store.requestLog.flush() }) },
  ),
);

// The same path as the gateway runs it: admission in memory and the ledger written by group commit,
// one transaction per event-loop turn. How many requests share a turn depends on load: 1 (idle) and
// 16 (a busy gateway) bracket it.
for (const perTurn of [1, 16]) {
  results.push(
    bench(
      `gateway path: sync + verifyKey + take + book hold + book settle + append, ${perTurn} request${perTurn === 1 ? '' : 's'} per commit`,
      (i) => {
        const now = Date.now();
        const check = admitKey(now);
        const traceId = trace(i);
        if (!book.hold(WS, traceId, 2_000_000n).ok) throw new Error('hold refused');
        void book.settle(traceId, 163n, details);
        store.requestLog.append(logRow(traceId, check.key.id, now));
        if ((i + 1) % perTurn === 0) book.flush();
      },
      {
        perBatch: () => ({
          end: () => {
            book.flush();
            return store.requestLog.flush();
          },
        }),
      },
    ),
  );
}

// Parts.
results.push(bench('StoreView.sync (PRAGMA data_version)', () => view.sync()));
results.push(bench('StoreView.verifyKey (cached)', () => view.verifyKey(presented, Date.now())));
results.push(
  bench('ApiKeys.verify (uncached: sha256 + indexed query)', () => store.apiKeys.verify(presented, Date.now())),
);
results.push(bench('FixedWindowRateLimiter.take', () => limiter.take('key_bench', 1_000_000_000)));
results.push(
  bench('hold, one commit each (WalletBook.hold + flush)', (i) => {
    book.hold(WS, trace(i), 2_000_000n);
    book.flush();
  }),
);
// Settles holds taken outside the timed loop (N fresh ones per batch, written in one commit).
results.push(
  bench(
    'settle, one commit each (WalletBook.settle + flush)',
    (i, ctx) => {
      void book.settle(ctx.ids[i], 163n, details);
      book.flush();
    },
    {
      perBatch: () => {
        const ids = [];
        for (let i = 0; i < N; i++) {
          const id = randomUUID();
          book.hold(WS, id, 2_000_000n);
          ids.push(id);
        }
        book.flush();
        return { ids };
      },
    },
  ),
);
results.push(
  bench(
    'RequestLog.append (+ flush at batch end)',
    () => store.requestLog.append(logRow(randomUUID(), 'key_bench', Date.now())),
    {
      perBatch: () => ({ end: () => store.requestLog.flush() }),
    },
  ),
);
results.push(bench('crypto.randomUUID (trace id)', () => randomUUID()));

// Floors, with better-sqlite3 directly on another WAL file with the store's pragmas.
const raw = new Database(join(dir, 'floor.db'));
raw.pragma('journal_mode = WAL');
raw.pragma('synchronous = NORMAL');
raw.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL); INSERT INTO t VALUES (1, 0);');
const upd = raw.prepare('UPDATE t SET v = v + 1 WHERE id = 1');
const tx = raw.transaction(() => upd.run());
results.push(bench('floor: IMMEDIATE transaction with one UPDATE (WAL, synchronous=NORMAL)', () => tx.immediate()));
results.push(bench('floor: the same UPDATE in autocommit', () => upd.run()));
results.push(
  bench("floor: db.pragma('data_version', {simple:true}) (prepares every call)", () =>
    raw.pragma('data_version', { simple: true }),
  ),
);
const dv = raw.prepare('PRAGMA data_version').pluck();
results.push(bench('floor: prepared PRAGMA data_version (.pluck().get())', () => dv.get()));
raw.close();

// What-if variants of the wallet transactions, with the real Wallets code (`apply`, the writes the
// wallet book hands it) on a modified schema (same pragmas via openDatabase): where the hold/settle
// time goes, and what a change would buy.
const { openDatabase } = await dist('store/sqlite/db.js');
const { MIGRATIONS } = await dist('store/sqlite/migrations.js');
const { Wallets } = await dist('store/sqlite/wallets.js');
function variant(label, edit, { group = 1 } = {}) {
  const migrations = MIGRATIONS.map((m) => ({ ...m, sql: edit(m.sql) }));
  const db = openDatabase(join(dir, `variant-${results.length}.db`), { migrations });
  const w = new Wallets(db, systemClock);
  w.credit(WS, 1_000_000n * 1_000_000_000n, 'bench credit');
  // One request: its hold and its settlement, each in its own transaction (a savepoint when nested).
  const write = db.transaction((op) => w.apply([op]));
  const pair = () => {
    const id = randomUUID();
    write.immediate({ kind: 'hold', workspace: WS, traceId: id, amount: 2_000_000n });
    write.immediate({ kind: 'settle', workspace: WS, traceId: id, amount: 2_000_000n, cost: 163n, details });
  };
  // group > 1: that many requests' hold + settle inside one outer transaction (group commit).
  const outer = db.transaction((k) => {
    for (let j = 0; j < k; j++) pair();
  });
  const r = bench(`variant: ${label}`, (i) => {
    if (group === 1) pair();
    else if (i % group === 0) outer.immediate(group);
  });
  results.push(r);
  w.close();
  db.close();
}
const same = (sql) => sql;
const noAutoinc = (sql) => sql.replace(/INTEGER PRIMARY KEY AUTOINCREMENT/g, 'INTEGER PRIMARY KEY');
const holdsWithoutRowid = (sql) =>
  sql.replace(/(CREATE TABLE holds \([\s\S]*?\n\)) STRICT;/, '$1 STRICT, WITHOUT ROWID;');
variant('hold + settle, schema as shipped', same);
variant('hold + settle, ledger/request_log without AUTOINCREMENT', noAutoinc);
variant('hold + settle, without AUTOINCREMENT + holds WITHOUT ROWID', (sql) => holdsWithoutRowid(noAutoinc(sql)));
variant('hold + settle, schema as shipped, 16 requests per transaction (group commit; per request)', same, {
  group: 16,
});

const stats = store.requestLog.stats();
store.close();
process.stdout.write(
  JSON.stringify({ ready: true, result: { batches: BATCHES, perBatch: N, results, requestLog: stats } }) + '\n',
);
