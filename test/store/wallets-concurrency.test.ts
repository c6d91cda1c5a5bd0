// Admission under concurrency: 200 attempts against a wallet worth a few requests never overdraw,
// whether they come from one process over several connections or from several processes.
import t from 'tap';
import { openStore } from '../../src/store/store.ts';
import { spawnFixture, watch } from './fixtures/child.ts';
import { tempDbFile } from './fixtures/temp-db.ts';

const HOLD = 300n;
const BALANCE = 7n * HOLD + 123n; // worth 7 requests

t.test('200 concurrent admissions in one process, over 3 connections', async (t) => {
  const file = tempDbFile(t);
  const stores = [openStore(file), openStore(file), openStore(file)];
  stores[0]!.wallets.credit('acme', BALANCE, 'seed');
  const attempts = Array.from({ length: 200 }, (_, i) => async () => {
    await Promise.resolve();
    const s = stores[i % stores.length]!;
    // A mix: every tenth attempt is a request for another workspace, which must not interfere.
    if (i % 10 === 9) return s.wallets.hold('other', `o-${i}`, 1n).ok ? 'other' : 'refused';
    return s.wallets.hold('acme', `r-${i}`, HOLD).ok ? 'admitted' : 'refused';
  });
  const results = await Promise.all(attempts.map((f) => f()));
  t.equal(results.filter((r) => r === 'admitted').length, Number(BALANCE / HOLD));
  const v = stores[1]!.wallets.show('acme', 0);
  t.same([v.balance, v.held, v.available], [BALANCE, 7n * HOLD, 123n]);
  t.ok(v.available >= 0n);
  t.same(stores[2]!.wallets.verify(), { ok: true, problems: [] });
  for (const s of stores) s.close();
});

t.test('200 admissions from 4 processes sharing the file', async (t) => {
  const file = tempDbFile(t);
  const seed = openStore(file);
  seed.wallets.credit('acme', BALANCE, 'seed');
  const children = [0, 1, 2, 3].map((n) => spawnFixture('hold-worker.ts', [file, 'acme', String(HOLD), '50', `p${n}`]));
  let ready = 0;
  let go: () => void = () => {};
  const allReady = new Promise<void>((resolve) => (go = resolve));
  const outputs: { admitted: number; refused: number }[] = [];
  const exits = Promise.all(
    children.map((c) =>
      watch(c, (line) => {
        if (line === 'ready' && ++ready === children.length) go();
        else if (line.startsWith('{')) outputs.push(JSON.parse(line) as { admitted: number; refused: number });
      }),
    ),
  );
  await allReady;
  // Released together so their transactions contend for the write lock.
  for (const c of children) c.stdin.end('go\n');
  const ends = await exits;
  for (const e of ends) t.equal(e.code, 0, e.stderr);
  t.equal(outputs.length, 4);
  t.equal(outputs.reduce((a, o) => a + o.admitted, 0), Number(BALANCE / HOLD), 'admitted = floor(balance / hold)');
  t.equal(outputs.reduce((a, o) => a + o.refused, 0), 200 - Number(BALANCE / HOLD));
  const v = seed.wallets.show('acme', 0);
  t.same([v.balance, v.held, v.available, v.openHolds], [BALANCE, 7n * HOLD, 123n, 7]);
  t.same(seed.wallets.verify(), { ok: true, problems: [] });
  t.equal(seed.wallets.releaseOrphanedHolds(), 7, 'the workers exited, so their holds are orphans');
  t.equal(seed.wallets.show('acme', 0).available, BALANCE);
  seed.close();
});
