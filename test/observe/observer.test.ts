// The observer seam without a server: combineObservers calls every observer in order, merges the
// attempt headers, contains a throwing observer; the W3C trace-id rule; the lifecycle's states and
// reload records.
import t from 'tap';
import { ManualClock } from '../../src/clock.ts';
import type { IncomingRequest } from '../../src/http/request.ts';
import { Lifecycle } from '../../src/observe/lifecycle.ts';
import {
  combineObservers,
  IGNORED_ATTEMPT,
  type AttemptEnd,
  type RequestObserver,
  type RequestSummary,
} from '../../src/observe/observer.ts';
import { requestTraceId, traceIdOfRequestId, traceIdOfTraceparent } from '../../src/observe/trace-context.ts';

const REQ: IncomingRequest = {
  method: 'POST',
  path: '/v1/chat/completions',
  query: '',
  headers: {},
  params: [],
  body: Buffer.alloc(0),
  bodyStream: null,
  startedAt: 0,
  remoteAddress: '127.0.0.1',
  bodyBytes: 0,
};
const END: AttemptEnd = {
  outcome: 'ok',
  status: 200,
  ms: 5,
  firstByteMs: 2,
  responseModel: null,
  inputTokens: 1,
  outputTokens: 2,
};
const SUMMARY = { row: {}, durationMs: 9, routedModel: null, upstreamModel: null } as unknown as RequestSummary;
const START = { index: 0, provider: 'alpha', model: 'acme/x', deployment: 'alpha/x', upstreamModel: 'x-v1' };

function recorder(name: string, calls: string[], headers: Record<string, string> | null = null): RequestObserver {
  return {
    begin(endpoint, traceId) {
      calls.push(`${name}.begin ${endpoint} ${traceId}`);
      return {
        read: (stream, model) => void calls.push(`${name}.read ${stream} ${model}`),
        attempt: (a) => {
          calls.push(`${name}.attempt ${a.index} ${a.provider}`);
          return headers === null
            ? IGNORED_ATTEMPT
            : { headers, finish: (e) => void calls.push(`${name}.finish ${e.outcome}`) };
        },
        end: (s) => void calls.push(`${name}.end ${s.durationMs}`),
      };
    },
  };
}

t.test('every observer hears every event, in order; attempt headers are merged', async (t) => {
  const calls: string[] = [];
  const errors: unknown[] = [];
  const o = combineObservers(
    [recorder('a', calls), recorder('b', calls, { traceparent: 'tp' }), recorder('c', calls, { 'x-other': '1' })],
    (e) => errors.push(e),
  );
  const w = o.begin('chat_completions', 'trace-1', REQ);
  w.read(true, 'acme/x');
  const a = w.attempt(START);
  t.same(a.headers, { traceparent: 'tp', 'x-other': '1' });
  a.finish(END);
  w.end(SUMMARY);
  t.same(calls, [
    'a.begin chat_completions trace-1',
    'b.begin chat_completions trace-1',
    'c.begin chat_completions trace-1',
    'a.read true acme/x',
    'b.read true acme/x',
    'c.read true acme/x',
    'a.attempt 0 alpha',
    'b.attempt 0 alpha',
    'c.attempt 0 alpha',
    'b.finish ok',
    'c.finish ok',
    'a.end 9',
    'b.end 9',
    'c.end 9',
  ]);
  t.same(errors, []);
});

t.test('observers with no attempt work cost no attempt watch', async (t) => {
  const o = combineObservers([recorder('a', []), recorder('b', [])], () => undefined);
  t.equal(o.begin('x', 'y', REQ).attempt(START), IGNORED_ATTEMPT);
});

t.test('a throwing observer is reported and skipped; the others go on', async (t) => {
  const calls: string[] = [];
  const errors: string[] = [];
  const boom: RequestObserver = {
    begin: () => ({
      read: () => {
        throw new Error('read');
      },
      attempt: () => {
        throw new Error('attempt');
      },
      end: () => {
        throw new Error('end');
      },
    }),
  };
  const failsToBegin: RequestObserver = {
    begin: () => {
      throw new Error('begin');
    },
  };
  const o = combineObservers([boom, failsToBegin, recorder('ok', calls, {})], (e) => errors.push((e as Error).message));
  const w = o.begin('e', 't', REQ);
  w.read(false, null);
  w.attempt(START).finish(END);
  w.end(SUMMARY);
  t.same(errors, ['begin', 'read', 'attempt', 'end']);
  t.same(calls, ['ok.begin e t', 'ok.read false null', 'ok.attempt 0 alpha', 'ok.finish ok', 'ok.end 9']);
});

t.test('the W3C trace id of a request', async (t) => {
  const id = '0190f0c2-8d8e-7c4b-9a7e-0123456789ab';
  t.equal(traceIdOfRequestId(id), '0190f0c28d8e7c4b9a7e0123456789ab');
  const client = '4bf92f3577b34da6a3ce929d0e0e4736';
  t.equal(traceIdOfTraceparent(`00-${client}-00f067aa0ba902b7-01`), client);
  t.equal(traceIdOfTraceparent(`01-${client}-00f067aa0ba902b7-01-future`), client, 'a later version with more fields');
  for (const bad of [
    undefined,
    '',
    `00-${client}-00f067aa0ba902b7-01-extra`,
    `ff-${client}-00f067aa0ba902b7-01`,
    `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
    `00-${client}-${'0'.repeat(16)}-01`,
    `00-${client.toUpperCase()}-00f067aa0ba902b7-01`,
    `00-${client}-00f067aa0ba902b7`,
  ]) {
    t.equal(traceIdOfTraceparent(bad), null, `invalid: ${JSON.stringify(bad)}`);
  }
  t.equal(requestTraceId(`00-${client}-00f067aa0ba902b7-01`, id), client);
  t.equal(requestTraceId('garbage', id), '0190f0c28d8e7c4b9a7e0123456789ab');
});

t.test('lifecycle: starting → ready → draining → stopped; reload records', async (t) => {
  const clock = new ManualClock('2026-03-01T00:00:00Z');
  const l = new Lifecycle(clock);
  t.equal(l.state, 'starting');
  t.notOk(l.draining);
  l.markReady();
  t.equal(l.state, 'ready');
  l.draining = true;
  t.same([l.state, l.draining], ['draining', true]);
  l.markReady();
  t.equal(l.state, 'draining', 'markReady does not end a drain');
  l.draining = false;
  t.equal(l.state, 'ready', 'a cancelled drain');
  l.markStopped();
  l.draining = false;
  t.same([l.state, l.draining], ['stopped', true], 'stopped stays stopped');

  const seen: unknown[] = [];
  l.onReload((r) => seen.push(r));
  t.equal(l.lastReload, null);
  const problems = ['models/a.yaml:1:1 /id: bad'];
  const r = l.recordReload({ ok: false, hash: 'h1', problems });
  problems.push('mutated later');
  t.same(r, {
    ok: false,
    hash: 'h1',
    problems: ['models/a.yaml:1:1 /id: bad'],
    restartNeeded: [],
    at: Date.parse('2026-03-01T00:00:00Z'),
  });
  t.same(l.lastReload, r);
  t.same(seen, [r]);
});
