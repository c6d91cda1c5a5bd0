// How a request ended, from what its attempts reported: every failover final and every broken-stream
// reason maps to one documented value (src/observe/request-end.ts); and what its log row carries.
import t from 'tap';
import { newRequestRecord, requestEnd, requestLogRow, settledRow } from '../../src/api/request-record.ts';
import type { IncomingRequest } from '../../src/http/request.ts';
import type { RoutingFields } from '../../src/protocols/types.ts';
import { LOG_TEXT_BOUNDS } from '../../src/store/log-bounds.ts';
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

t.test("the log row carries the client's model within the request log's bound", async (t) => {
  // A 4 MiB body (or a few KB of it compressed) can name a model of millions of characters; the row
  // is what crosses from a serving thread to the coordinator every thread of `serve --workers N`
  // shares, so it must not carry more of it than the request log keeps.
  const s = newRequestRecord('/v1/chat/completions', 'trace-1');
  s.fields = { model: `huge/${'m'.repeat(1_000_000)}` } as RoutingFields;
  const req = { headers: {}, startedAt: performance.now() } as unknown as IncomingRequest;
  const row = requestLogRow(req, s, 0);
  const bound = LOG_TEXT_BOUNDS.model_requested;
  t.equal(Array.from(row.model_requested ?? '').length, bound, `cut to ${bound} characters`);
  t.ok(row.model_requested?.startsWith('huge/mmm') && row.model_requested.endsWith('…'), 'marked as cut');
  t.equal(
    settledRow(req, s, { model: 'm', platform: 'p', deployment: 'd' }, 200, 1, 0).model_requested,
    row.model_requested,
  );

  s.fields = { model: 'acme/chat-small' } as RoutingFields;
  t.equal(requestLogRow(req, s, 0).model_requested, 'acme/chat-small', 'a model within it is kept as sent');
});
