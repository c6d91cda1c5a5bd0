// Wallets and ledger: credits, the ledger writes the wallet book hands to `apply`, append-only
// enforcement, verify, and the startup release of orphaned holds. Admission (what may be held) and
// the model-based property test are the wallet book's: test/admission/wallet-book*.test.ts.
import t from 'tap';
import { ManualClock } from '../../../src/clock.ts';
import { openDatabase } from '../../../src/store/sqlite/db.ts';
import { MIGRATIONS } from '../../../src/store/sqlite/migrations.ts';
import { openStore } from '../../../src/store/sqlite/store.ts';
import { hold, release, settle, write } from './fixtures/ledger.ts';
import { tempDbFile } from './fixtures/temp-db.ts';

t.test('credit, and holds, settlements and releases written by apply', async (t) => {
  const clock = new ManualClock('2026-01-15T23:59:00Z');
  const s = openStore(':memory:', { clock });
  const w = s.wallets;
  const show = () => w.show('acme', clock.now());
  t.same(show(), { workspace: 'acme', balance: 0n, held: 0n, available: 0n, spendToday: 0n, openHolds: 0 });
  write(s, hold('acme', 'r0b', 0n));
  t.same(
    show(),
    { workspace: 'acme', balance: 0n, held: 0n, available: 0n, spendToday: 0n, openHolds: 1 },
    'a hold creates the wallet',
  );

  const c = w.credit('acme', 1_000n, 'top-up');
  t.match(c.traceId, /^credit_[0-9a-f-]{36}$/);
  t.equal(c.balance, 1_000n);
  write(s, hold('acme', 'r1', 600n), hold('acme', 'r2', 400n));
  t.same(show(), { workspace: 'acme', balance: 1_000n, held: 1_000n, available: 0n, spendToday: 0n, openHolds: 3 });
  t.throws(
    () => write(s, hold('acme', 'fresh', 1n), hold('acme', 'r1', 1n)),
    /UNIQUE|PRIMARY KEY/,
    'a trace holds once',
  );
  t.same(show().openHolds, 3, 'the whole batch rolled back');

  write(
    s,
    settle('acme', 'r1', 600n, 550n, {
      model: 'openai/gpt-4o',
      provider: 'openai',
      deployment: 'openai/gpt-4o',
      promptTokens: 10,
    }),
  );
  const refused = { name: 'WalletError', code: 'unknown_trace' };
  t.throws(() => write(s, settle('acme', 'r1', 600n, 550n)), refused, 'a second settle is refused');
  t.throws(() => write(s, release('acme', 'r1', 600n)), refused, 'release after settle is refused');
  write(s, release('acme', 'r2', 400n));
  t.throws(() => write(s, release('acme', 'r2', 400n)), refused);
  t.throws(() => write(s, settle('acme', 'r2', 400n, 5n)), refused, 'settle after release is refused');
  t.throws(() => write(s, release('acme', 'never-held', 0n)), refused);
  t.throws(() => write(s, hold('acme', 'ok-but-rolled-back', 1n), settle('acme', 'never-held', 0n, 5n)), refused);
  t.same([show().balance, show().held, show().openHolds], [450n, 0n, 1], 'refused batches changed nothing');
  write(s, settle('acme', 'r0b', 0n, 0n, { model: 'a/free', provider: 'p' }));

  clock.advance(60_000); // next UTC day
  write(s, hold('acme', 'r3', 100n), settle('acme', 'r3', 100n, 200n, { model: 'openai/gpt-4o', provider: 'azure' }));
  t.same(
    show(),
    { workspace: 'acme', balance: 250n, held: 0n, available: 250n, spendToday: 200n, openHolds: 0 },
    'cost above the hold',
  );
  t.equal(w.show('acme', clock.now() - 60_000).spendToday, 550n, 'spend is per UTC day');

  t.same(w.usage('acme'), [
    { model: 'openai/gpt-4o', provider: 'openai', requests: 1, costNano: 550n },
    { model: 'openai/gpt-4o', provider: 'azure', requests: 1, costNano: 200n },
    { model: 'a/free', provider: 'p', requests: 1, costNano: 0n },
  ]);
  t.same(w.usage('acme', clock.now()), [{ model: 'openai/gpt-4o', provider: 'azure', requests: 1, costNano: 200n }]);
  t.same(w.usage('other'), []);
  t.same(w.verify(), { ok: true, problems: [] });

  t.throws(() => w.credit('acme', 0n, 'x'), RangeError);
  t.throws(() => w.credit('acme', -1n, 'x'), RangeError);
  t.throws(() => w.credit('acme', 1 as unknown as bigint, 'x'), RangeError, 'numbers are refused');
  t.throws(
    () => write(s, hold('acme', 'r9', -1n)),
    { name: 'WalletError', code: 'amount_out_of_range' },
    'negative amounts are refused before the write',
  );
  t.throws(
    () => write(s, hold('acme', 'r9', 2n ** 63n)),
    { name: 'WalletError', code: 'amount_out_of_range' },
    'so are amounts above what the column holds',
  );
  t.throws(() => w.apply([hold('acme', 'r9', 1n)]), /inside a transaction/, 'apply runs only inside a batch');
  t.same(w.workspaces(), ['acme']);
  s.close();
});

t.test('the holds table keeps open holds only: a hold closed in its own batch writes no holds row', async (t) => {
  const file = tempDbFile(t);
  const s = openStore(file);
  s.wallets.credit('w', 10_000n, 'seed');
  const raw = openDatabase(file);
  const holdRows = () => raw.prepare('SELECT trace_id FROM holds ORDER BY trace_id').pluck().all();
  const ledgerOf = (trace: string) => s.wallets.ledgerOf(trace).map((e) => `${e.kind} ${e.amount}`);
  write(
    s,
    hold('w', 'paired', 300n),
    hold('w', 'left-open', 200n),
    settle('w', 'paired', 300n, 250n),
    hold('w', 'released-here', 100n),
    release('w', 'released-here', 100n),
  );
  t.same(holdRows(), ['left-open'], 'only the hold still open has a row');
  t.same(ledgerOf('paired'), ['hold 300', 'settle 250'], 'the ledger keeps both rows of the pair');
  t.same(ledgerOf('released-here'), ['hold 100', 'release 100']);
  t.same(s.wallets.show('w', 0), {
    workspace: 'w',
    balance: 9_750n,
    held: 200n,
    available: 9_550n,
    spendToday: 0n,
    openHolds: 1,
  });
  t.same(s.wallets.verify(), { ok: true, problems: [] });

  write(s, settle('w', 'left-open', 200n, 200n));
  t.same(holdRows(), [], 'closing a hold deletes its row');
  t.same(s.wallets.verify(), { ok: true, problems: [] });

  const refused = { name: 'WalletError', code: 'unknown_trace' };
  t.throws(
    () => write(s, hold('w', 'twice', 1n), settle('w', 'twice', 1n, 1n), release('w', 'twice', 1n)),
    refused,
    'a hold closed twice in its batch is refused',
  );
  t.throws(
    () => write(s, hold('w', 'paired', 1n), settle('w', 'paired', 1n, 1n)),
    /UNIQUE/,
    'a closed trace is not held again, even with its close in the same batch',
  );
  t.throws(
    () => write(s, settle('w', 'late-hold', 1n, 1n), hold('w', 'late-hold', 1n)),
    refused,
    'a close before its hold is refused',
  );
  t.same(holdRows(), [], 'the refused batches wrote nothing');
  t.same(s.wallets.ledgerOf('twice'), []);
  t.same(s.wallets.verify(), { ok: true, problems: [] });

  // What verify names when the holds table and the ledger part.
  write(s, hold('w', 'open-1', 10n));
  raw.prepare("DELETE FROM holds WHERE trace_id = 'open-1'").run();
  raw
    .prepare(
      "INSERT INTO holds (trace_id, workspace, amount_nano, state, owner, owner_pid, owner_host, created_at) VALUES ('paired', 'w', 300, 'open', 'x', 1, '', 0)",
    )
    .run();
  const v = s.wallets.verify();
  t.equal(v.ok, false);
  t.match(v.problems.join('\n'), /ledger hold open-1 has no holds row/);
  t.match(v.problems.join('\n'), /hold paired is open but the ledger says settled/);
  t.notMatch(v.problems.join('\n'), /left-open|released-here/, 'closed holds need no row');
  raw.close();
  s.close();
});

t.test('a database from before keeps its open holds and sheds its closed ones on migration', async (t) => {
  const file = tempDbFile(t);
  const old = openDatabase(file, { migrations: MIGRATIONS.filter((m) => m.version <= 4) });
  const now = Date.now();
  old.exec(`
    INSERT INTO wallets (workspace, balance_nano, held_nano, updated_at) VALUES ('w', 750, 200, ${now});
    INSERT INTO ledger (workspace, kind, amount_nano, trace_id, created_at) VALUES
      ('w', 'credit', 1000, 'credit_1', ${now}), ('w', 'hold', 300, 'a', ${now}), ('w', 'hold', 200, 'b', ${now}),
      ('w', 'settle', 250, 'a', ${now});
    INSERT INTO holds (trace_id, workspace, amount_nano, state, cost_nano, owner, owner_pid, owner_host, created_at, closed_at) VALUES
      ('a', 'w', 300, 'settled', 250, 'gone', 1, '', ${now}, ${now}),
      ('b', 'w', 200, 'open', NULL, 'gone', 2147483646, '', ${now}, NULL);
  `);
  old.close();
  const s = openStore(file);
  const raw = openDatabase(file);
  t.same(raw.prepare('SELECT trace_id, state FROM holds').all(), [{ trace_id: 'b', state: 'open' }]);
  t.same(
    s.wallets.verify().problems.map((p) => p.replace(/: the process.*/, '')),
    ['hold b of workspace w is open but nothing serves it'],
    'the books agree; only the orphan is named',
  );
  t.equal(s.wallets.releaseOrphanedHolds(), 1);
  t.same(s.wallets.verify(), { ok: true, problems: [] });
  t.throws(
    () =>
      raw
        .prepare(
          "INSERT INTO ledger (workspace, kind, amount_nano, trace_id, created_at) VALUES ('w', 'release', 1, 'a', 0)",
        )
        .run(),
    /UNIQUE/,
    'a trace is still closed once',
  );
  t.throws(
    () =>
      raw
        .prepare(
          "INSERT INTO ledger (workspace, kind, amount_nano, trace_id, created_at) VALUES ('w', 'credit', 1, 'credit_1', 0)",
        )
        .run(),
    /UNIQUE/,
    'and credited once',
  );
  raw.close();
  s.close();
});

// `ledger verify` (append-only, drift, unserved holds, answered requests without their settlement)
// is checked on both stores by test/store/ledger-verify-stores.test.ts.

t.test('orphaned holds are released at startup, live ones are kept', async (t) => {
  const file = tempDbFile(t);
  const clock = new ManualClock();
  const a = openStore(file, { clock });
  a.wallets.credit('w', 1_000n, '');
  write(a, hold('w', 'live', 100n));
  const b = openStore(file, { clock });
  t.equal(b.wallets.releaseOrphanedHolds(), 0, 'the owner is still open');
  write(b, hold('w', 'b-hold', 100n));
  b.close();
  t.equal(a.wallets.releaseOrphanedHolds(), 1, 'a closed owner in this process is gone');
  clock.advance(6 * 3_600_000 + 1);
  t.equal(a.wallets.releaseOrphanedHolds(), 1, 'a stale hold is released even with a live owner');
  t.throws(() => write(a, settle('w', 'live', 100n, 100n)), { code: 'unknown_trace' }, 'a late settle charges nothing');
  const v = a.wallets.show('w', clock.now());
  t.same([v.balance, v.held, v.openHolds], [1_000n, 0n, 0]);
  t.same(a.wallets.verify(), { ok: true, problems: [] });
  const raw = openDatabase(file);
  t.same(
    raw.prepare("SELECT trace_id, note FROM ledger WHERE kind = 'release' ORDER BY id").all(),
    [
      { trace_id: 'b-hold', note: 'orphaned hold released at startup' },
      { trace_id: 'live', note: 'stale hold released at startup' },
    ],
    'each startup release says why',
  );
  raw.close();
  a.close();
});

t.test('holds taken on another host are released only when stale', async (t) => {
  const file = tempDbFile(t);
  const clock = new ManualClock();
  const a = openStore(file, { clock });
  a.wallets.credit('w', 1_000n, '');
  write(a, hold('w', 'elsewhere', 100n));
  a.close();
  const raw = openDatabase(file);
  // As if a gateway in another container (its own pid 1) took it.
  raw.prepare("UPDATE holds SET owner_host = 'some-other-container', owner_pid = 1").run();
  raw.close();
  const b = openStore(file, { clock });
  t.equal(b.wallets.releaseOrphanedHolds(), 0, 'its pids cannot be checked from here');
  clock.advance(6 * 3_600_000 + 1);
  t.equal(b.wallets.releaseOrphanedHolds(), 1, 'stale');
  b.close();
});
