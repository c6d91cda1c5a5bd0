// Bounded `client-http` fuzz: broken request lines, header bytes and framing over raw sockets to a `serve`
// child: the process never exits, every connection is answered or closed, no 5xx, and a well-formed
// request after each case is answered (the liveness probe).
import t from 'tap';
import { clientHttp } from '../../fuzz/targets/client-http.ts';
import { boundedRun } from '../helpers/fuzz-bounded.ts';

t.test('client-http: 32 seeded cases break no oracle', async (t) => {
  await boundedRun(t, clientHttp, 32, { concurrency: 16 });
});
