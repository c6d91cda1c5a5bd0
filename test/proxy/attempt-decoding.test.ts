// An attempt on a platform whose answers are not the protocol's own wire (Bedrock's binary event
// stream, its error bodies): the head routes the platform's stream type to the relay through the
// adapter's decoder; decoded events are held, committed and relayed like SSE; an unreadable frame
// fails over before the commit and breaks the stream after it; an upstream end inside a frame is a
// cut; error bodies are rewritten into the protocol's error shape unless they are compressed.
import t from 'tap';
import type { AnswerDecoding, StreamDecoder } from '../../src/platforms/types.ts';
import { routeHead } from '../../src/proxy/attempt-head.ts';
import { attemptHarness } from './attempt-fakes.ts';

/** Frames are `<text>|`; `data: <text>\n\n` comes out of each; a frame `!` cannot be read. */
class PipeDecoder implements StreamDecoder {
  private held = '';
  failure: string | null = null;
  get pendingBytes(): number {
    return this.held.length;
  }
  push(chunk: Buffer): Buffer {
    this.held += chunk.toString('utf8');
    let out = '';
    if (this.failure) return Buffer.alloc(0);
    for (let bar = this.held.indexOf('|'); bar !== -1; bar = this.held.indexOf('|')) {
      const frame = this.held.slice(0, bar);
      this.held = this.held.slice(bar + 1);
      if (frame === '!') {
        this.failure = 'bad checksum';
        break;
      }
      out += `data: ${frame}\n\n`;
    }
    return Buffer.from(out);
  }
}

const DECODING: AnswerDecoding = {
  streamType: 'application/vnd.test-frames',
  decoder: () => new PipeDecoder(),
};
/** The platform's error rewrite (src/proxy/upstream-call.ts builds it from adapter and protocol). */
const ERROR_BODY = (status: number, _headers: Record<string, string>, body: Buffer): Buffer =>
  Buffer.from(JSON.stringify({ mapped: status, was: body.toString('utf8') }));
const FRAMES = { 'content-type': 'application/vnd.test-frames' };

t.test('routeHead: the platform stream type goes to the decoder; everything else as before', async (t) => {
  t.same(routeHead(200, FRAMES, DECODING), { kind: 'decoded', decoding: DECODING });
  t.same(routeHead(200, { 'content-type': 'Application/Vnd.Test-Frames; x=1' }, DECODING), {
    kind: 'decoded',
    decoding: DECODING,
  });
  t.same(routeHead(200, { ...FRAMES, 'content-encoding': 'gzip' }, DECODING), {
    kind: 'refused',
    detail: 'compressed event streams (gzip) are not supported',
  });
  t.same(
    routeHead(200, { 'content-type': 'text/event-stream' }, DECODING),
    { kind: 'stream' },
    'an SSE answer is still read as SSE',
  );
  t.same(routeHead(200, { 'content-type': 'application/json' }, DECODING), { kind: 'json' });
  t.same(routeHead(503, FRAMES, DECODING), { kind: 'error' });
  t.same(routeHead(200, FRAMES), { kind: 'json' }, 'without a decoding the type is just another JSON answer');
});

t.test('decoded frames, split anywhere, are held, committed and relayed as SSE', async (t) => {
  const h = attemptHarness({ decoding: DECODING });
  const sink = h.upstream();
  sink.onHead(200, FRAMES);
  for (const piece of ['p1', '|c', '1|', 'c2|[DO', 'NE]|']) sink.onData(Buffer.from(piece));
  sink.onEnd();
  await h.promise;
  t.equal(h.reply.body, 'data: p1\n\ndata: c1\n\ndata: c2\n\ndata: [DONE]\n\n');
  t.match(h.outcome(), { kind: 'committed', completed: true, broken: null, contentEvents: 2 });
});

t.test('an unreadable frame before the commit fails over; after it, ends the stream with an error event', async (t) => {
  const before = attemptHarness({ decoding: DECODING });
  before.upstream().onHead(200, FRAMES);
  before.upstream().onData(Buffer.from('p1|!|'));
  await before.promise;
  t.match(before.outcome(), {
    kind: 'failed',
    reason: 'malformed',
    detail: 'the provider sent an unreadable stream frame (bad checksum)',
  });
  t.same(before.reply.wire, [], 'nothing reached the client');
  t.same(before.ctrl.aborts, ['the provider sent an unreadable stream frame (bad checksum)']);

  const after = attemptHarness({ decoding: DECODING });
  after.upstream().onHead(200, FRAMES);
  after.upstream().onData(Buffer.from('c1|!|'));
  await after.promise;
  t.match(after.outcome(), { kind: 'committed', broken: 'malformed', completed: false });
  t.match(
    after.reply.body,
    /^data: c1\n\ndata: \{"error":\{"message":"the provider sent an unreadable stream frame \(bad checksum\); the answer is incomplete","code":"upstream_stream_error"\}\}\n\n$/,
  );
});

t.test('an upstream end inside a frame is a cut stream, never a complete one', async (t) => {
  const h = attemptHarness({ decoding: DECODING });
  h.upstream().onHead(200, FRAMES);
  h.upstream().onData(Buffer.from('c1|[DONE'));
  h.upstream().onEnd();
  await h.promise;
  t.match(h.outcome(), { kind: 'committed', broken: 'malformed' });
  t.match(h.reply.body, /ended inside a frame/);

  const early = attemptHarness({ decoding: DECODING });
  early.upstream().onHead(200, FRAMES);
  early.upstream().onData(Buffer.from('p1|c'));
  early.upstream().onEnd();
  await early.promise;
  t.match(early.outcome(), { kind: 'failed', reason: 'malformed', detail: 'the provider stream ended inside a frame' });
});

t.test('a frame still incomplete past the size limit before the commit is too large', async (t) => {
  const h = attemptHarness({ decoding: DECODING });
  h.upstream().onHead(200, FRAMES);
  h.upstream().onData(Buffer.alloc(300, 'a'));
  await h.promise;
  t.match(h.outcome(), { kind: 'failed', reason: 'too_large' });
});

t.test('error bodies are rewritten into the protocol shape, compressed ones pass as they are', async (t) => {
  const h = attemptHarness({ decoding: DECODING, errorBody: ERROR_BODY });
  h.upstream().onHead(429, { 'content-type': 'application/json', 'x-amzn-requestid': 'r1' });
  h.upstream().onData(Buffer.from('{"message":"slow down"}'));
  h.upstream().onEnd();
  await h.promise;
  const o = h.outcome();
  t.equal(o?.kind, 'provider_error');
  if (o?.kind === 'provider_error') {
    t.same(JSON.parse(o.body.toString('utf8')), { mapped: 429, was: '{"message":"slow down"}' });
    t.ok(o.headers.some(([n, v]) => n === 'X-Pi-Upstream-Request-Id' && v === 'r1'));
  }

  const gz = attemptHarness({ decoding: DECODING, errorBody: ERROR_BODY });
  gz.upstream().onHead(500, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
  gz.upstream().onData(Buffer.from('zz'));
  gz.upstream().onEnd();
  await gz.promise;
  const g = gz.outcome();
  if (g?.kind === 'provider_error') t.equal(g.body.toString('utf8'), 'zz');
  else t.fail('a provider error');
});
