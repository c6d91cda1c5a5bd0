// Dispatch on the upstream's head (status, content type, content encoding → phase), the headers an
// answer goes out with, and runAttempt end to end over a fake client: the sink hands each callback to
// the phase the head chose, and after the outcome nothing more reaches the client.
import t from 'tap';
import { Readable } from 'node:stream';
import { AttemptSink } from '../../src/proxy/attempt.ts';
import { type HeadRoute, providerHeaders, routeHead } from '../../src/proxy/attempt-head.ts';
import { answerHead, attemptHarness, ev, IDENTITY } from './attempt-fakes.ts';

t.test('routeHead: the dispatch table', async (t) => {
  const table: [number, Record<string, string>, HeadRoute][] = [
    [200, { 'content-type': 'text/event-stream' }, { kind: 'stream' }],
    [200, { 'content-type': 'Text/Event-Stream; charset=utf-8' }, { kind: 'stream' }],
    [200, { 'content-type': 'text/event-stream', 'content-encoding': 'identity' }, { kind: 'stream' }],
    [200, { 'content-type': 'text/event-stream', 'content-encoding': '' }, { kind: 'stream' }],
    [
      200,
      { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' },
      { kind: 'refused', detail: 'compressed event streams (gzip) are not supported' },
    ],
    [
      200,
      { 'content-type': 'text/event-stream', 'content-encoding': 'br' },
      { kind: 'refused', detail: 'compressed event streams (br) are not supported' },
    ],
    [200, { 'content-type': 'application/json' }, { kind: 'json' }],
    [200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }, { kind: 'json' }],
    [200, {}, { kind: 'json' }],
    [201, { 'content-type': 'text/plain' }, { kind: 'json' }],
    [299, { 'content-type': 'text/event-stream' }, { kind: 'stream' }],
    [199, { 'content-type': 'text/event-stream' }, { kind: 'error' }],
    [300, { 'content-type': 'application/json' }, { kind: 'error' }],
    [400, { 'content-type': 'application/json' }, { kind: 'error' }],
    [429, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' }, { kind: 'error' }],
    [500, { 'content-type': 'text/event-stream' }, { kind: 'error' }],
  ];
  for (const [status, headers, want] of table)
    t.same(routeHead(status, headers), want, `${status} ${JSON.stringify(headers)}`);
});

t.test('providerHeaders: identity, upstream model and request id, then the forwarded provider headers', async (t) => {
  const head = answerHead(200, {
    'content-type': 'application/json',
    'content-encoding': 'br',
    'x-request-id': 'x1',
    'set-cookie': 'no',
    'content-length': '12',
  });
  t.same(providerHeaders(head, 'm-1', false), [
    ...IDENTITY,
    ['X-Pi-Upstream-Model', 'm-1'],
    ['X-Pi-Upstream-Request-Id', 'x1'],
    ['Content-Type', 'application/json'],
  ]);
  t.same(providerHeaders(head, null, true), [
    ...IDENTITY,
    ['X-Pi-Upstream-Request-Id', 'x1'],
    ['Content-Type', 'application/json'],
    ['Content-Encoding', 'br'],
  ]);
});

t.test('runAttempt: the head picks the phase that reads the rest', async (t) => {
  for (const [status, headers, kind] of [
    [200, { 'content-type': 'text/event-stream' }, 'stream'],
    [200, { 'content-type': 'application/json' }, 'json'],
    [503, { 'content-type': 'application/json' }, 'error'],
  ] as const) {
    const h = attemptHarness();
    const sink = h.upstream();
    t.ok(sink instanceof AttemptSink);
    if (!(sink instanceof AttemptSink)) continue;
    t.equal(sink.phaseKind, 'head');
    sink.onHead(status, headers);
    t.equal(sink.phaseKind, kind, `${status} ${headers['content-type']} → ${kind}`);
  }
});

t.test('runAttempt: a stream end to end, and nothing after the outcome', async (t) => {
  const h = attemptHarness();
  const up = h.upstream();
  h.timers.advance(7);
  up.onHead(200, { 'content-type': 'text/event-stream' });
  up.onData(Buffer.concat([ev('p1'), ev('c1')]));
  up.onData(Buffer.from('data: [DONE]\n\n'));
  const o = await h.promise;
  t.equal(o.kind === 'committed' && o.broken, null);
  t.equal(o.firstByteMs, 7);
  const wire = [...h.reply.wire];
  t.same(wire.at(-1), 'end');
  up.onData(ev('c2'));
  up.onEnd();
  up.onError(new Error('late'));
  h.reply.abort();
  t.same(h.reply.wire, wire, 'nothing written after the outcome');
  t.same(
    h.ctrl.aborts,
    ['the provider kept sending after its answer ended'],
    'a provider that goes on sending is dropped',
  );
  t.equal(h.timers.armed, 0);
});

t.test('runAttempt: a JSON answer end to end', async (t) => {
  const order: string[] = [];
  const h = attemptHarness({ beforeComplete: () => void order.push(`hook sees ${h.reply.wire.length} writes`) });
  const up = h.upstream();
  up.onHead(200, { 'content-type': 'application/json' });
  up.onData(Buffer.from('{"model":"m-2","x":1}'));
  up.onEnd();
  const o = await h.promise;
  t.same(order, ['hook sees 0 writes']);
  t.equal(o.kind, 'committed');
  t.same(h.reply.wire, ['send 200 {"model":"acme/slug","x":1}']);
});

t.test('runAttempt: before the head', async (t) => {
  const refused = attemptHarness();
  refused.upstream().onHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
  t.same(await refused.promise, {
    kind: 'failed',
    reason: 'malformed',
    detail: 'compressed event streams (gzip) are not supported',
    firstByteMs: null,
  });
  t.same(refused.ctrl.aborts, ['compressed event streams (gzip) are not supported']);

  const closed = attemptHarness();
  closed.upstream().onEnd();
  t.same(await closed.promise, {
    kind: 'failed',
    reason: 'malformed',
    detail: 'the provider closed without an answer',
    firstByteMs: null,
  });

  const refusedConn = attemptHarness();
  refusedConn
    .upstream()
    .onError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }));
  t.same(await refusedConn.promise, {
    kind: 'failed',
    reason: 'connect',
    detail: 'connect ECONNREFUSED 127.0.0.1:9',
    firstByteMs: null,
  });
  t.same(refusedConn.ctrl.aborts, []);

  const connectTimeout = attemptHarness();
  connectTimeout
    .upstream()
    .onError(Object.assign(new Error('Connect Timeout Error'), { code: 'UND_ERR_CONNECT_TIMEOUT' }));
  t.match(await connectTimeout.promise, { kind: 'failed', reason: 'connect' });

  const silent = attemptHarness();
  silent.timers.advance(4999);
  t.equal(silent.outcome(), null);
  silent.timers.advance(1);
  t.same(await silent.promise, {
    kind: 'failed',
    reason: 'timeout',
    detail: 'provider did not start answering within 5000 ms',
    firstByteMs: null,
  });
  t.same(silent.ctrl.aborts, ['provider did not start answering within 5000 ms']);

  const gone = attemptHarness();
  gone.reply.abort();
  t.same(await gone.promise, {
    kind: 'failed',
    reason: 'client_aborted',
    detail: 'client went away',
    firstByteMs: null,
  });
  t.same(gone.ctrl.aborts, ['client went away']);
  gone.upstream().onHead(200, { 'content-type': 'text/event-stream' });
  const sink = gone.upstream();
  t.ok(sink instanceof AttemptSink && sink.phaseKind === 'head', 'a head after the outcome is ignored');
  t.equal(gone.timers.armed, 0);
});

t.test('runAttempt: an interim head is not the answer, and an answer has one head', async (t) => {
  const h = attemptHarness();
  const sink = h.upstream();
  if (!(sink instanceof AttemptSink)) throw new Error('not an AttemptSink');
  sink.onHead(103, { link: '</a>' });
  t.equal(sink.phaseKind, 'head', 'still waiting for the answer');
  h.timers.advance(4999);
  t.equal(h.outcome(), null);
  sink.onHead(200, { 'content-type': 'text/event-stream' });
  t.equal(sink.phaseKind, 'stream');
  sink.onHead(500, { 'content-type': 'application/json' });
  t.equal(sink.phaseKind, 'stream', 'a second head changes nothing');
  sink.onData(ev('c1'));
  sink.onData(Buffer.from('data: [DONE]\n\n'));
  t.match(await h.promise, { kind: 'committed', status: 200, broken: null });

  const silent = attemptHarness();
  silent.upstream().onHead(102, {});
  silent.timers.advance(5000);
  t.same(
    await silent.promise,
    { kind: 'failed', reason: 'timeout', detail: 'provider did not start answering within 5000 ms', firstByteMs: null },
    'the first-byte limit runs through interim heads',
  );
});

t.test('runAttempt: a streamed upload is timed from when it was sent, not from the start of the upload', async (t) => {
  const h = attemptHarness({ body: Readable.from([Buffer.from('part')]) });
  const up = h.upstream();
  h.timers.advance(60_000);
  t.equal(h.outcome(), null, 'a minute of slow upload: no first-byte timeout');
  up.onRequestSent?.();
  h.timers.advance(3000);
  t.equal(h.outcome(), null);
  up.onHead(200, { 'content-type': 'text/event-stream' });
  h.timers.advance(30);
  up.onData(Buffer.concat([ev('c1'), Buffer.from('data: [DONE]\n\n')]));
  t.match(
    await h.promise,
    { kind: 'committed', firstByteMs: 3030 },
    "the first-byte time counts from the upload's end",
  );

  const silent = attemptHarness({ body: Readable.from([Buffer.from('part')]) });
  silent.upstream().onRequestSent?.();
  silent.timers.advance(5000);
  t.same(
    await silent.promise,
    { kind: 'failed', reason: 'timeout', detail: 'provider did not start answering within 5000 ms', firstByteMs: null },
    'then the limit applies',
  );

  const early = attemptHarness({ body: Readable.from([Buffer.from('part')]) });
  const eu = early.upstream();
  eu.onHead(200, { 'content-type': 'application/json' });
  eu.onData(Buffer.from('{"model":"m"}'));
  eu.onRequestSent?.();
  eu.onEnd();
  t.match(await early.promise, { kind: 'committed' }, 'a provider answering before the upload ended');
  t.equal(early.timers.armed, 0, 'no first-byte timer left behind');
});
