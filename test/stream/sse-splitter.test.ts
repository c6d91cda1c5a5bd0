// The SSE splitter must give the same events whatever the upstream chunk boundaries are.
import t from 'tap';
import { SseSplitter, isBlankOrComment, parseSseEvent, sseEventName } from '../../src/stream/sse-splitter.ts';

const stream = Buffer.from(
  'data: {"a":1}\n\n' +
    'event: message_start\ndata: {"type":"message_start","x":"é✓"}\n\n' +
    ': ping\n\n' +
    'data: line1\ndata: line2\r\n\r\n' +
    'data: [DONE]\n\n',
);
const expected = [
  'data: {"a":1}\n\n',
  'event: message_start\ndata: {"type":"message_start","x":"é✓"}\n\n',
  ': ping\n\n',
  'data: line1\ndata: line2\r\n\r\n',
  'data: [DONE]\n\n',
];

t.test('every split point gives the same events', async (t) => {
  for (let cut = 0; cut <= stream.length; cut++) {
    for (let cut2 = cut; cut2 <= stream.length; cut2 += 7) {
      const s = new SseSplitter();
      const got = [
        ...s.push(stream.subarray(0, cut)),
        ...s.push(stream.subarray(cut, cut2)),
        ...s.push(stream.subarray(cut2)),
      ].map((b) => b.toString('utf8'));
      if (JSON.stringify(got) !== JSON.stringify(expected)) {
        t.same(got, expected, `cut at ${cut}/${cut2}`);
        return;
      }
      t.equal(s.flush(), null);
    }
  }
  t.pass('all splits agree');
});

t.test('byte-by-byte feeding', async (t) => {
  const s = new SseSplitter();
  const got: string[] = [];
  for (let i = 0; i < stream.length; i++) for (const e of s.push(stream.subarray(i, i + 1))) got.push(e.toString('utf8'));
  t.same(got, expected);
});

t.test('unterminated tail is returned by flush', async (t) => {
  const s = new SseSplitter();
  t.same(s.push(Buffer.from('data: 1\n\ndata: 2')).map(String), ['data: 1\n\n']);
  t.equal(s.pendingBytes, 7);
  t.equal(String(s.flush()), 'data: 2');
});

t.test('field parsing', async (t) => {
  t.same(parseSseEvent(Buffer.from('event: ping\ndata: {"type":"ping"}\n\n')), { event: 'ping', data: '{"type":"ping"}' });
  t.same(parseSseEvent(Buffer.from('data:x\ndata: y\r\n\r\n')), { event: null, data: 'x\ny' });
  t.same(parseSseEvent(Buffer.from(': comment\n\n')), { event: null, data: null });
  t.equal(sseEventName(Buffer.from('event: content_block_delta\ndata: {}\n\n')), 'content_block_delta');
  t.equal(sseEventName(Buffer.from('id: 3\nevent: error\ndata: {}\n\n')), 'error');
  t.equal(sseEventName(Buffer.from('data: {}\n\n')), null);
  t.ok(isBlankOrComment(Buffer.from(': ping\n\n')));
  t.notOk(isBlankOrComment(Buffer.from('data: 1\n\n')));
});
