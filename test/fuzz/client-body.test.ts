// Bounded `client-body` fuzz: mutated bodies on the five inference endpoints to a `serve` child over the
// simulator: the process never exits, every request is answered, no 5xx; then the graceful stop, `ledger
// verify` and no open hold.
import t from 'tap';
import { clientBody } from '../../fuzz/targets/client-body.ts';
import { boundedRun } from '../helpers/fuzz-bounded.ts';

t.test('client-body: 40 seeded cases break no oracle', async (t) => {
  await boundedRun(t, clientBody, 40, { concurrency: 4 });
});
