// How a request ended, from what its attempts reported: every failover final and every broken-stream
// reason maps to one documented value (src/observe/request-end.ts).
import t from 'tap';
import { requestEnd } from '../../src/api/request-record.ts';
import type { CommittedOutcome } from '../../src/proxy/attempt.ts';
import type { FailoverFinal, PlanItem } from '../../src/proxy/failover.ts';
import { GatewayError } from '../../src/errors.ts';

const item = {} as PlanItem; // requestEnd never reads the item
function committed(broken: CommittedOutcome['broken']): FailoverFinal {
  const outcome: CommittedOutcome = {
    kind: 'committed',
    status: 200,
    stream: true,
    upstreamModel: null,
    usage: null,
    inputUsage: null,
    completed: broken === null,
    broken,
    clientAborted: broken === 'client_aborted',
    firstByteMs: 1,
    contentEvents: 1,
    contentBytes: 1,
  };
  return { kind: 'committed', item, outcome };
}

t.test('committed answers', async (t) => {
  t.equal(requestEnd(committed(null)), 'completed');
  t.equal(requestEnd(committed('client_aborted')), 'client_abort');
  t.equal(requestEnd(committed('timeout')), 'idle_timeout');
  for (const r of ['reset', 'malformed', 'inband_error', 'empty', 'too_large', 'connect'] as const)
    t.equal(requestEnd(committed(r)), 'upstream_cut', r);
});

t.test('nothing committed', async (t) => {
  t.equal(requestEnd({ kind: 'client_aborted' }), 'client_abort');
  t.equal(requestEnd({ kind: 'provider_error', item, status: 400 }), 'failed');
  t.equal(requestEnd({ kind: 'gateway_error', error: new GatewayError('provider_unavailable', 'x') }), 'failed');
});
