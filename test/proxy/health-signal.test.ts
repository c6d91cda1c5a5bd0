// The outcome -> health mapping, one row per outcome kind and failure reason: what each attempt tells
// the breaker about its deployment (no server involved).
import t from 'tap';
import type { AttemptOutcome, FailureReason } from '../../src/proxy/attempt.ts';
import { healthSignal } from '../../src/proxy/health-signal.ts';
import type { Outcome } from '../../src/routing/health.ts';

function committed(broken: FailureReason | null): AttemptOutcome {
  return {
    kind: 'committed',
    status: 200,
    stream: true,
    upstreamModel: null,
    usage: null,
    inputUsage: null,
    completed: broken === null,
    broken,
    clientAborted: broken === 'client_aborted',
    firstByteMs: 12,
    contentEvents: 1,
    contentBytes: 10,
  };
}

const providerError = (status: number): AttemptOutcome => ({
  kind: 'provider_error',
  status,
  headers: [],
  body: Buffer.alloc(0),
  firstByteMs: 5,
});
const failed = (reason: FailureReason): AttemptOutcome => ({
  kind: 'failed',
  reason,
  detail: reason,
  firstByteMs: null,
});

const OK: Outcome = { ok: true, firstByteMs: 12 };
const fail = (reason: Extract<Outcome, { ok: false }>['reason']): Outcome => ({ ok: false, reason });

const REASONS: FailureReason[] = [
  'connect',
  'reset',
  'timeout',
  'malformed',
  'inband_error',
  'empty',
  'too_large',
  'client_aborted',
  'write_stall',
  'drained',
  'credential',
  'not_sent',
];

t.test('a committed answer is a success unless its stream was cut by the provider', async (t) => {
  const expected: Record<FailureReason, Outcome> = {
    client_aborted: OK,
    write_stall: OK,
    drained: OK,
    timeout: fail('timeout'),
    malformed: fail('malformed'),
    inband_error: fail('inband_error'),
    connect: fail('reset'),
    reset: fail('reset'),
    empty: fail('reset'),
    too_large: fail('reset'),
    credential: fail('auth'),
    not_sent: OK,
  };
  t.same(healthSignal(committed(null)), OK, 'complete answer');
  for (const r of REASONS) t.same(healthSignal(committed(r)), expected[r], `cut: ${r}`);
});

t.test('a provider error counts for 5xx, 429 and a refused credential only', async (t) => {
  const rows: [number, Outcome | null][] = [
    [500, fail('status_5xx')],
    [503, fail('status_5xx')],
    [429, fail('status_429')],
    [401, fail('auth')],
    [403, fail('auth')],
    [400, null],
    [404, null],
    [408, null],
    [409, null],
    [422, null],
  ];
  for (const [status, signal] of rows) t.same(healthSignal(providerError(status)), signal, `status ${status}`);
});

t.test('a failed attempt names its reason; a client abort says nothing', async (t) => {
  const expected: Record<FailureReason, Outcome | null> = {
    client_aborted: null,
    write_stall: null,
    drained: null,
    connect: fail('connect'),
    timeout: fail('timeout'),
    reset: fail('reset'),
    malformed: fail('malformed'),
    inband_error: fail('inband_error'),
    empty: fail('malformed'),
    too_large: fail('malformed'),
    credential: fail('auth'),
    not_sent: null,
  };
  for (const r of REASONS) t.same(healthSignal(failed(r)), expected[r], `failed: ${r}`);
});
