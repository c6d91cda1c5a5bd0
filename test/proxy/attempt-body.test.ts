// The whole-body phases without a server: a 2xx JSON answer is size-capped, decoded, checked, then
// committed with beforeComplete running before the body goes out; a non-2xx error body is kept up to
// its cap and becomes a provider_error outcome, never written by the attempt itself.
import t from 'tap';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { BodyBuffer, ErrorReader, JsonReader, MAX_ERROR_BODY } from '../../src/proxy/attempt-body.ts';
import type { AttemptInput, AttemptOutcome } from '../../src/proxy/attempt-types.ts';
import { answerHead, coreHarness, fakeProtocol, IDENTITY, SLUG } from './attempt-fakes.ts';

function json(
  headers: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': 'req-7' },
  beforeComplete?: AttemptInput['beforeComplete'],
) {
  const h = coreHarness(undefined, beforeComplete);
  const unit = new JsonReader(h.core, fakeProtocol, SLUG, answerHead(200, headers));
  h.reply.onAborted(() => {
    if (!h.core.done) unit.onClientAborted();
  });
  return { ...h, unit };
}

const ANSWER = '{"id":"a","model":"small-v1","text":"hello"}';
const REWRITTEN = '{"id":"a","model":"acme/slug","text":"hello"}';

t.test('a JSON answer: beforeComplete sees the committed outcome before the body is sent', async (t) => {
  const hook: { outcome: AttemptOutcome; wire: number }[] = [];
  const r = json(undefined, (o) => {
    hook.push({ outcome: o, wire: r.reply.wire.length });
  });
  r.timers.advance(25);
  r.unit.onData(Buffer.from(ANSWER.slice(0, 10)));
  r.timers.advance(5);
  r.unit.onData(Buffer.from(ANSWER.slice(10)));
  t.same(r.reply.wire, [], 'nothing goes out while the body is read');
  r.unit.onEnd();
  const expected = {
    kind: 'committed',
    status: 200,
    stream: false,
    upstreamModel: 'small-v1',
    usage: { promptTokens: 3, completionTokens: 4 },
    inputUsage: null,
    completed: true,
    broken: null,
    clientAborted: false,
    firstByteMs: 25,
    contentEvents: 0,
    contentBytes: REWRITTEN.length,
  };
  t.same(hook, [{ outcome: expected, wire: 0 }], 'the hook ran before anything was sent');
  t.same(r.reply.wire, [`send 200 ${REWRITTEN}`]);
  t.same(r.reply.headers, [
    ...IDENTITY,
    ['X-Pi-Upstream-Model', 'small-v1'],
    ['X-Pi-Upstream-Request-Id', 'req-7'],
    ['Content-Type', 'application/json'],
  ]);
  t.same(r.seen.outcome, expected);
  t.same(r.ctrl.aborts, []);
  t.equal(r.timers.armed, 0);
});

t.test('a JSON answer: a promise from beforeComplete delays the body until it settles', async (t) => {
  let release: () => void = () => undefined;
  const r = json(undefined, () => new Promise<void>((resolve) => (release = resolve)));
  r.unit.onData(Buffer.from(ANSWER));
  r.unit.onEnd();
  r.timers.advance(60_000);
  t.same(r.reply.wire, [], 'held while the hook runs; no timer fires meanwhile');
  t.equal(r.seen.outcome, null);
  release();
  await new Promise((resolve) => setImmediate(resolve));
  t.same(r.reply.wire, [`send 200 ${REWRITTEN}`]);
  t.equal(r.seen.outcome?.kind, 'committed');
});

t.test('a JSON answer: a throwing hook still delivers', async (t) => {
  const r = json(undefined, () => {
    throw new Error('hook failed');
  });
  r.unit.onData(Buffer.from(ANSWER));
  r.unit.onEnd();
  t.same(r.reply.wire, [`send 200 ${REWRITTEN}`]);
});

t.test('a JSON answer is decoded from its content encoding as it arrives; the encoding is not forwarded', async (t) => {
  const r = json({ 'content-type': 'application/json', 'content-encoding': 'gzip' });
  const zipped = gzipSync(ANSWER);
  r.unit.onData(zipped.subarray(0, 7));
  r.unit.onData(zipped.subarray(7));
  r.unit.onEnd();
  await r.promise;
  t.same(r.reply.wire, [`send 200 ${REWRITTEN}`]);
  t.notOk(r.reply.headers.some(([k]) => k === 'Content-Encoding'));
});

t.test('a JSON answer that is not usable fails as malformed', async (t) => {
  for (const [name, body, headers, detail] of [
    ['not JSON', 'oops', undefined, 'the provider answer was not a usable JSON body'],
    ['an in-band error', '{"error":{"message":"busy"}}', undefined, 'the provider answer was not a usable JSON body'],
    ['empty', '', undefined, 'the provider answer was not a usable JSON body'],
    ['undecodable', 'plain', { 'content-encoding': 'gzip' }, 'the provider answer did not decompress'],
    [
      'cut inside its compressed stream',
      gzipSync(ANSWER).subarray(0, 20).toString('latin1'),
      { 'content-encoding': 'gzip' },
      'the provider answer did not decompress',
    ],
    [
      'unknown coding',
      ANSWER,
      { 'content-encoding': 'zstd' },
      "the provider answer's content encoding (zstd) cannot be decoded",
    ],
  ] as const) {
    const r = json(headers);
    if (body) r.unit.onData(Buffer.from(body, 'latin1'));
    r.unit.onEnd();
    t.same(await r.promise, { kind: 'failed', reason: 'malformed', detail, firstByteMs: body ? 0 : null }, name);
    t.same(r.ctrl.aborts, [detail]);
    t.same(r.reply.wire, [], `${name}: nothing sent`);
  }
});

t.test(
  'a compressed answer that inflates past maxUpstreamBodyBytes fails as too_large, without inflating the rest',
  async (t) => {
    for (const [coding, zip] of [
      ['gzip', gzipSync],
      ['deflate', deflateSync],
      ['br', brotliCompressSync],
    ] as const) {
      const r = json({ 'content-type': 'application/json', 'content-encoding': coding });
      const bomb = zip(Buffer.alloc(64 * 1024 * 1024, 0x20));
      t.ok(bomb.length <= 256 * 1024, `${coding}: ${bomb.length} compressed bytes`);
      // The compressed bytes alone stay under the 256-byte limit only in pieces: send the head of it.
      r.unit.onData(bomb.subarray(0, 200));
      t.same(
        await r.promise,
        { kind: 'failed', reason: 'too_large', detail: 'the provider answer inflated past 256 bytes', firstByteMs: 0 },
        coding,
      );
      t.same(r.reply.wire, []);
    }
    const r = json({ 'content-type': 'application/json', 'content-encoding': 'gzip' });
    r.unit.onData(Buffer.alloc(257));
    t.same(
      await r.promise,
      { kind: 'failed', reason: 'too_large', detail: 'the provider answer exceeded 256 bytes', firstByteMs: 0 },
      'the compressed bytes count too',
    );
  },
);

t.test('a JSON answer over maxUpstreamBodyBytes fails as too_large at once', async (t) => {
  const r = json();
  r.unit.onData(Buffer.alloc(200, 0x20));
  r.unit.onData(Buffer.alloc(56, 0x20));
  t.equal(r.seen.outcome, null, 'exactly the limit is fine');
  r.unit.onData(Buffer.alloc(1, 0x20));
  t.same(r.seen.outcome, {
    kind: 'failed',
    reason: 'too_large',
    detail: 'the provider answer exceeded 256 bytes',
    firstByteMs: 0,
  });
  t.same(r.ctrl.aborts, ['the provider answer exceeded 256 bytes']);
  t.same(r.reply.wire, []);
});

t.test('a JSON answer: first-byte limit until the first chunk, then the idle limit', async (t) => {
  const r = json();
  r.timers.advance(3000);
  r.unit.onData(Buffer.from('{'));
  t.equal(r.core.firstByteMs, 3000);
  r.timers.advance(999);
  t.equal(r.seen.outcome, null);
  r.timers.advance(5000);
  t.same(
    r.seen.outcome,
    {
      kind: 'failed',
      reason: 'timeout',
      detail: 'provider went silent for 1000 ms before answering',
      firstByteMs: 3000,
    },
    'idle, not first byte',
  );
  t.equal(r.timers.armed, 0);
  const r2 = json();
  r2.timers.advance(5000);
  t.same(r2.seen.outcome, {
    kind: 'failed',
    reason: 'timeout',
    detail: 'provider did not start answering within 5000 ms',
    firstByteMs: null,
  });
});

t.test('a JSON answer: client abort and upstream errors while reading', async (t) => {
  const r = json();
  r.unit.onData(Buffer.from('{'));
  r.reply.abort();
  t.same(r.seen.outcome, { kind: 'failed', reason: 'client_aborted', detail: 'client went away', firstByteMs: 0 });
  t.same(r.ctrl.aborts, ['client went away']);
  const r2 = json();
  r2.unit.onData(Buffer.from('{'));
  r2.unit.onError(new Error('other side closed'));
  t.same(r2.seen.outcome, { kind: 'failed', reason: 'reset', detail: 'other side closed', firstByteMs: 0 });
  t.same(r2.ctrl.aborts, []);
});

t.test('a JSON answer: a client gone while beforeComplete pends gets nothing sent', async (t) => {
  let release: () => void = () => undefined;
  const r = json(undefined, () => new Promise<void>((resolve) => (release = resolve)));
  r.unit.onData(Buffer.from(ANSWER));
  r.unit.onEnd();
  r.reply.abort();
  t.equal(r.seen.outcome?.kind, 'committed');
  t.equal(r.seen.outcome?.kind === 'committed' && r.seen.outcome.broken, 'client_aborted');
  release();
  await new Promise((resolve) => setImmediate(resolve));
  t.same(r.reply.wire, []);
  t.equal(r.seen.count, 1);
});

function error(status: number, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  const h = coreHarness();
  h.timers.advance(40);
  const unit = new ErrorReader(h.core, answerHead(status, headers));
  return { ...h, unit };
}

t.test('an error body becomes a provider_error outcome with the provider headers; nothing is written', async (t) => {
  const r = error(429, {
    'content-type': 'application/json',
    'content-encoding': 'gzip',
    'retry-after': '3',
    'request-id': 'r-9',
  });
  t.equal(r.core.firstByteMs, 40, 'the error head is the first byte');
  r.unit.onData(Buffer.from('{"error":"slow down","model":"small'));
  r.unit.onData(Buffer.from('-v1"}'));
  r.unit.onEnd();
  t.same(r.seen.outcome, {
    kind: 'provider_error',
    status: 429,
    headers: [
      ...IDENTITY,
      ['X-Pi-Upstream-Model', 'small-v1'],
      ['X-Pi-Upstream-Request-Id', 'r-9'],
      ['Content-Type', 'application/json'],
      ['Content-Encoding', 'gzip'],
      ['Retry-After', '3'],
    ],
    body: Buffer.from('{"error":"slow down","model":"small-v1"}'),
    firstByteMs: 40,
  });
  t.same(r.reply.wire, [], 'the failover loop decides what the client gets');
  t.equal(r.timers.armed, 0);
});

t.test('an oversized error body is kept up to its cap', async (t) => {
  const r = error(500);
  const a = Buffer.alloc(600 * 1024, 0x61);
  const b = Buffer.alloc(MAX_ERROR_BODY - a.length, 0x62);
  r.unit.onData(a);
  r.unit.onData(b);
  r.unit.onData(Buffer.from('c'));
  r.unit.onData(Buffer.from('d'));
  t.equal(r.seen.outcome, null, 'not a failure');
  r.unit.onEnd();
  const o = r.seen.outcome;
  t.equal(o?.kind, 'provider_error');
  if (o?.kind === 'provider_error') {
    t.equal(o.body.length, MAX_ERROR_BODY, 'exactly the cap');
    t.ok(o.body.equals(Buffer.concat([a, b])), 'the head of the body, nothing after the cap');
  }
});

t.test('an error body: the idle limit runs from the head; client abort and upstream errors', async (t) => {
  const r = error(503);
  r.timers.advance(999);
  r.unit.onData(Buffer.from('{'));
  r.timers.advance(999);
  t.equal(r.seen.outcome, null, 'each chunk restarts the idle limit');
  r.timers.advance(1);
  t.same(r.seen.outcome, {
    kind: 'failed',
    reason: 'timeout',
    detail: 'provider went silent for 1000 ms before finishing its error answer',
    firstByteMs: 40,
  });
  t.same(r.ctrl.aborts, ['provider went silent for 1000 ms before finishing its error answer']);
  const r2 = error(503);
  r2.timers.advance(4999 - 40);
  r2.timers.advance(10);
  t.equal(
    r2.seen.outcome?.kind === 'failed' && r2.seen.outcome.reason,
    'timeout',
    'the first-byte limit no longer applies; idle does',
  );
  const r3 = error(502);
  r3.unit.onClientAborted();
  t.same(r3.seen.outcome, { kind: 'failed', reason: 'client_aborted', detail: 'client went away', firstByteMs: 40 });
  const r4 = error(502);
  r4.unit.onError(new Error('socket hang up'));
  t.same(r4.seen.outcome, { kind: 'failed', reason: 'reset', detail: 'socket hang up', firstByteMs: 40 });
});

t.test('BodyBuffer keeps chunks up to its cap', async (t) => {
  const b = new BodyBuffer(4);
  t.equal(b.add(Buffer.from('ab')), true);
  t.equal(b.add(Buffer.from('cd')), true);
  t.equal(b.add(Buffer.from('e')), false);
  t.equal(b.add(Buffer.from('')), false, 'past the cap stays past the cap');
  t.equal(b.bytes().toString(), 'abcd');
});

t.test('a JSON answer abandoned while beforeComplete pends keeps its usage and model in the outcome', async (t) => {
  let release: () => void = () => undefined;
  const r = json(undefined, () => new Promise<void>((resolve) => (release = resolve)));
  r.unit.onData(Buffer.from(ANSWER));
  r.unit.onEnd();
  r.reply.abort();
  const o = r.seen.outcome;
  if (o?.kind !== 'committed') throw new Error('expected a committed outcome');
  t.equal(o.broken, 'client_aborted');
  t.equal(o.clientAborted, true);
  t.same(o.usage, { promptTokens: 3, completionTokens: 4 }, 'the answer the settlement saw');
  t.equal(o.upstreamModel, 'small-v1');
  t.equal(o.contentBytes, REWRITTEN.length);
  release();
  await new Promise((resolve) => setImmediate(resolve));
  t.same(r.reply.wire, [], 'nothing sent to a client that left');
});
