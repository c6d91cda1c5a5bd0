// Bedrock's event stream decoded into Messages SSE (src/platforms/bedrock-event-stream.ts), with
// frames written by the simulator's independent encoder: the same SSE bytes whatever the split
// (every single split point of a whole stream, and byte by byte), exceptions as Messages error
// events, events before a broken frame still delivered, corrupt CRCs and absurd lengths refused,
// a partial frame held (pendingBytes) and never the whole chunk it came in.
import t from 'tap';
import { BedrockStreamDecoder } from '../../src/platforms/bedrock-event-stream.ts';
import { chunkMessage, eventStreamMessage, exceptionMessage } from '../../src/simulator/event-stream-frames.ts';

const EVENTS = [
  '{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}',
  '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
  '{"type": "ping"}',
  '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hé ✓ \\n"}}',
  '{"type":"content_block_stop","index":0}',
  '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}',
  '{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3,"outputTokenCount":4}}',
];
const STREAM = Buffer.concat(EVENTS.map(chunkMessage));
const SSE = EVENTS.map((e) => `event: ${(JSON.parse(e) as { type: string }).type}\ndata: ${e}\n\n`).join('');

function decodeAll(pieces: Buffer[]): { out: string; decoder: BedrockStreamDecoder } {
  const decoder = new BedrockStreamDecoder();
  const out = Buffer.concat(pieces.map((p) => decoder.push(p))).toString('utf8');
  return { out, decoder };
}

t.test('one chunk: every event byte for byte, named by its type', async (t) => {
  const { out, decoder } = decodeAll([STREAM]);
  t.equal(out, SSE);
  t.equal(decoder.pendingBytes, 0);
  t.equal(decoder.failure, null);
});

t.test('split at every byte boundary (two pieces), and byte by byte', async (t) => {
  let bad = 0;
  for (let i = 1; i < STREAM.length; i++) {
    const { out, decoder } = decodeAll([STREAM.subarray(0, i), STREAM.subarray(i)]);
    if (out !== SSE || decoder.pendingBytes !== 0 || decoder.failure !== null) bad++;
  }
  t.equal(bad, 0, `all ${STREAM.length - 1} split points give the same SSE`);
  const bytes = [...STREAM].map((b) => Buffer.from([b]));
  t.equal(decodeAll(bytes).out, SSE, 'byte by byte');
});

t.test('a partial frame is held, and counted', async (t) => {
  const decoder = new BedrockStreamDecoder();
  const first = chunkMessage(EVENTS[0] as string);
  t.equal(decoder.push(first.subarray(0, 20)).length, 0);
  t.equal(decoder.pendingBytes, 20);
  t.equal(decoder.push(first.subarray(20)).toString('utf8'), `event: message_start\ndata: ${EVENTS[0]}\n\n`);
  t.equal(decoder.pendingBytes, 0);
});

t.test('exception messages become Messages error events', async (t) => {
  const { out } = decodeAll([
    chunkMessage(EVENTS[0] as string),
    exceptionMessage('throttlingException', 'Too many requests, please wait before trying again.'),
  ]);
  t.equal(
    out,
    `event: message_start\ndata: ${EVENTS[0]}\n\nevent: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"Too many requests, please wait before trying again."}}\n\n`,
  );
  for (const [name, type] of [
    ['modelStreamErrorException', 'api_error'],
    ['internalServerException', 'api_error'],
    ['serviceUnavailableException', 'overloaded_error'],
    ['validationException', 'invalid_request_error'],
    ['somethingNewException', 'api_error'],
  ]) {
    t.match(decodeAll([exceptionMessage(name as string, 'x')]).out, `"type":"${type}"`, String(name));
  }
  const error = eventStreamMessage(
    [
      [':message-type', 'error'],
      [':error-code', 'InternalFailure'],
      [':error-message', 'boom'],
    ],
    Buffer.alloc(0),
  );
  t.equal(
    decodeAll([error]).out,
    'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"boom"}}\n\n',
  );
});

t.test('events that are not chunks are skipped', async (t) => {
  const other = eventStreamMessage(
    [
      [':message-type', 'event'],
      [':event-type', 'initial-response'],
    ],
    Buffer.from('{}'),
  );
  t.equal(decodeAll([other, chunkMessage(EVENTS[2] as string)]).out, `event: ping\ndata: ${EVENTS[2]}\n\n`);
});

t.test('a corrupt frame stops the decoder; the events before it still come out', async (t) => {
  const good = chunkMessage(EVENTS[0] as string);
  const bad = Buffer.from(chunkMessage(EVENTS[1] as string));
  bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 0xff;
  const decoder = new BedrockStreamDecoder();
  t.equal(decoder.push(Buffer.concat([good, bad])).toString('utf8'), `event: message_start\ndata: ${EVENTS[0]}\n\n`);
  t.match(decoder.failure, /checksum|CRC/i);
  t.equal(decoder.push(good).length, 0, 'nothing after a failure');

  const huge = Buffer.alloc(16);
  huge.writeUInt32BE(64 * 1024 * 1024, 0);
  const d2 = new BedrockStreamDecoder();
  d2.push(huge);
  t.match(d2.failure, /claims 67108864 bytes/);
  t.equal(d2.pendingBytes, 0);

  const notMessages = eventStreamMessage(
    [
      [':message-type', 'event'],
      [':event-type', 'chunk'],
    ],
    Buffer.from(JSON.stringify({ bytes: Buffer.from('[1,2]').toString('base64') })),
  );
  const d3 = new BedrockStreamDecoder();
  d3.push(notMessages);
  t.equal(d3.failure, 'a chunk whose bytes are not a Messages event');
});

t.test('a chunk JSON holding a line break goes out on one data line', async (t) => {
  const pretty = '{\n  "type": "ping"\n}';
  t.equal(decodeAll([chunkMessage(pretty)]).out, 'event: ping\ndata: {"type":"ping"}\n\n');
});
