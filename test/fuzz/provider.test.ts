// Bounded `provider` fuzz: well-formed requests answered by a raw-socket provider that misbehaves (split,
// truncated, mis-typed usage, duplicate or escaped keys, compressed, interim 1xx, stalls, resets): the
// process never exits, every request ends, no settlement above its bound, no estimate above its hold,
// what the client gets is the answer or an error; then `ledger verify`, no open hold, every
// settlement with its log row.
import t from 'tap';
import { provider } from '../../fuzz/targets/provider.ts';
import { boundedRun } from '../helpers/fuzz-bounded.ts';

t.test('provider: 40 seeded cases break no oracle', async (t) => {
  await boundedRun(t, provider, 40);
});
