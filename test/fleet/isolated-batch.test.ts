// The rule of the fleet's batched writes: a batch refused for something in it, that met another
// node's batch, or that ran out of time waiting for one item's row is re-run one item per statement
// (the others are not held up by that one); a batch PostgreSQL did not answer is answered at once for
// every item.
import t from 'tap';
import { type Pending, writeIsolated } from '../../src/fleet/isolated-batch.ts';

type Item = { traceId: string };

function batch(...ids: string[]): { pending: Pending<Item>[]; outcomes: Promise<string[]> } {
  const results: Promise<string>[] = [];
  const pending = ids.map((traceId) => {
    let p!: Pending<Item>;
    results.push(
      new Promise<boolean>((resolve, reject) => {
        p = { item: { traceId }, resolve, reject };
      }).then(
        (written) => `${traceId}:${written}`,
        (err: { code?: string }) => `${traceId}:${err.code}`,
      ),
    );
    return p;
  });
  return { pending, outcomes: Promise.all(results) };
}

const failing = (code: string, when: (items: Item[]) => boolean) => {
  const calls: string[][] = [];
  const many = async (items: Item[]): Promise<Set<string>> => {
    calls.push(items.map((i) => i.traceId));
    if (when(items)) throw Object.assign(new Error(`failed with ${code}`), { code });
    return new Set(items.map((i) => i.traceId));
  };
  return { calls, many };
};

t.test('a statement timeout waiting on one item re-runs the batch per item: the others go through', async (t) => {
  // One wallet's row is locked elsewhere: any statement carrying trace b runs out of time.
  const { calls, many } = failing('57014', (items) => items.some((i) => i.traceId === 'b'));
  const b = batch('a', 'b', 'c');
  await writeIsolated(b.pending, many);
  t.same(await b.outcomes, ['a:true', 'b:57014', 'c:true'], 'only the blocked item fails, for its caller to retry');
  t.same(calls, [['a', 'b', 'c'], ['a'], ['b'], ['c']]);
});

t.test('a batch PostgreSQL did not answer fails at once for every item', async (t) => {
  const { calls, many } = failing('ECONNRESET', () => true);
  const b = batch('a', 'b', 'c');
  t.equal(await writeIsolated(b.pending, many), 3);
  t.same(await b.outcomes, ['a:ECONNRESET', 'b:ECONNRESET', 'c:ECONNRESET']);
  t.same(calls, [['a', 'b', 'c']], 'one statement');
});

t.test('a deadlock or a refused value re-runs the batch one item per statement', async (t) => {
  const deadlock = failing('40P01', (items) => items.length > 1);
  const d = batch('a', 'b');
  await writeIsolated(d.pending, deadlock.many);
  t.same(await d.outcomes, ['a:true', 'b:true'], 'each item alone passes');
  t.same(deadlock.calls, [['a', 'b'], ['a'], ['b']]);

  const refused = failing('22003', (items) => items.some((i) => i.traceId === 'big'));
  const r = batch('a', 'big', 'c', 'a');
  await writeIsolated(r.pending, refused.many);
  t.same(await r.outcomes, ['a:true', 'big:22003', 'c:true', 'a:false'], 'only the refused item fails');
  t.same(refused.calls, [['a', 'big', 'c'], ['a'], ['big'], ['c']]);
});
