// Malformed HTTP over raw sockets: every malformed request is answered and its connection closed at
// once, or (where uWS gives the gateway no say) closed by uWS without an answer within its idle
// timeout; never left open, and the gateway keeps serving. Which is which is documented in the
// API reference (docs/api.md, "HTTP transport").
import t, { type Test } from 'tap';
import { parseResponses, rawConnect, rawExchange } from '../../helpers/raw-client.ts';
import { startStack, type Stack } from '../../helpers/stack.ts';

const BODY = JSON.stringify({ model: 'acme/chat-small', messages: [{ role: 'user', content: 'hi' }] });

async function stillServing(t: Test, s: Stack, label: string): Promise<void> {
  const res = await fetch(`${s.url}/v1/models`);
  await res.arrayBuffer();
  t.equal(res.status, 200, `${label}: the gateway still answers`);
}

t.test('framing uWS lets through: the gateway answers 400 invalid_request and closes the connection', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const auth = `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\n`;
  const cases: [string, string, RegExp][] = [
    [
      'Transfer-Encoding gzip',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: gzip\r\n\r\nabc`,
      /unsupported Transfer-Encoding gzip \(only chunked is accepted\)/,
    ],
    [
      'Transfer-Encoding chunked, gzip',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
      /unsupported Transfer-Encoding/,
    ],
    [
      'Transfer-Encoding gzip, chunked',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n`,
      /unsupported Transfer-Encoding/,
    ],
    [
      'two Content-Length headers',
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: ${BODY.length}\r\nContent-Length: 5\r\n\r\n${BODY}`,
      /more than one Content-Length header/,
    ],
    [
      'a lower-case method',
      'get /v1/models HTTP/1.1\r\nHost: x\r\n\r\n',
      /unknown method get \(method names are case-sensitive\)/,
    ],
    [
      'a lower-case POST',
      `post /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: ${BODY.length}\r\n\r\n${BODY}`,
      /unknown method post /,
    ],
  ];
  for (const [name, bytes, message] of cases) {
    const started = performance.now();
    const out = await rawExchange(s.gw.port, bytes, 3000);
    const answers = parseResponses(out);
    t.equal(answers.length, 1, `${name}: one answer`);
    const a = answers[0];
    t.equal(a?.status, 400, `${name}: 400`);
    const error = (JSON.parse(a?.body ?? '{}') as { error?: { message: string } }).error;
    t.match(
      error,
      { type: 'invalid_request_error', code: 'invalid_request', message: /^malformed request: / },
      `${name}: the error object`,
    );
    t.match(error?.message, message, `${name}: saying why`);
    t.match(a?.header('x-pi-trace-id') ?? '', /^[0-9a-f-]{36}$/, `${name}: X-Pi-Trace-Id`);
    t.equal(a?.header('connection'), 'close', `${name}: Connection: close`);
    t.ok(performance.now() - started < 3000, `${name}: closed at once`);
  }
  t.equal(s.sim.requests.length, 0, 'nothing was forwarded');
  await stillServing(t, s, 'after the refusals');
});

t.test('malformed heads uWS answers itself (its own 400 or 505, then closed at once)', async (t) => {
  const s = await startStack(t);
  const cases: [string, string, number][] = [
    [
      'Transfer-Encoding with Content-Length',
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n',
      400,
    ],
    [
      'a chunk size that is not hex',
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n',
      400,
    ],
    [
      'a chunk size over 64 bits',
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc',
      400,
    ],
    ['obs-fold', 'GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Title: a\r\n b\r\n\r\n', 400],
    ['a header line without a colon', 'GET /v1/models HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n', 400],
    ['a space before the colon', 'GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Title : a\r\n\r\n', 400],
    ['no Host', 'GET /v1/models HTTP/1.1\r\n\r\n', 400],
    ['two Host headers', 'GET /v1/models HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n', 400],
    [
      'a Content-Length that is not a number',
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      400,
    ],
    ['a negative Content-Length', 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n', 400],
    [
      'a comma in Content-Length',
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc',
      400,
    ],
    ['a NUL in a header value', 'GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Title: a\x00b\r\n\r\n', 400],
    ['a bare LF', 'GET /v1/models HTTP/1.1\r\nHost: x\nX-Title: a\r\n\r\n', 400],
    ['a DEL in a header name', 'GET /v1/models HTTP/1.1\r\nHost: x\r\nX\x7fA: 1\r\n\r\n', 400],
    ['HTTP/1.0', 'GET /v1/models HTTP/1.0\r\nHost: x\r\n\r\n', 505],
    ['HTTP/2.0 in a request line', 'GET /v1/models HTTP/2.0\r\nHost: x\r\n\r\n', 505],
    ['an absolute-form target', 'GET http://x/v1/models HTTP/1.1\r\nHost: x\r\n\r\n', 505],
    ['a space inside the target', 'GET /v1/mod els HTTP/1.1\r\nHost: x\r\n\r\n', 505],
    ['a request line ending in a bare LF', 'GET /v1/models HTTP/1.1\nHost: x\n\n', 505],
  ];
  for (const [name, bytes, status] of cases) {
    const started = performance.now();
    const out = await rawExchange(s.gw.port, bytes, 3000);
    t.match(out, new RegExp(`^HTTP/1\\.1 ${status} [^\\r]*\\r\\nConnection: close\\r\\n`), `${name}: uWS's ${status}`);
    t.equal(parseResponses(out).length, 1, `${name}: one answer`);
    t.ok(performance.now() - started < 3000, `${name}: closed at once`);
  }
  t.equal(s.sim.requests.length, 0, 'nothing was forwarded');
  await stillServing(t, s, 'after the malformed heads');
});

t.test(
  'malformed input uWS neither answers nor refuses: closed by its idle timeout, never left open',
  { timeout: 60_000 },
  async (t) => {
    const s = await startStack(t);
    const key = s.key('open');
    const chat = (size: string): string =>
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${size}\r\n${BODY}\r\n0\r\n\r\n`;
    const silent: [string, string][] = [
      ['an empty line before the request line', '\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n'],
      ['a bare CR in a header value', 'GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Title: a\rb\r\n\r\n'],
      ['a head that never ends', 'GET /v1/models HTTP/1.1\r\nHost: x\r\n'],
    ];
    // Chunk extensions are legal HTTP that uWS misreads: depending on the bytes it answers its own 400
    // at once or takes the rest for chunk data and waits (the handler never gets a whole body).
    const extensions: [string, string][] = [
      ['a chunk extension', chat(`${BODY.length.toString(16)};ext=1`)],
      ['a short chunk with an extension', chat(`3;a=b`).replace(BODY, 'abc')],
    ];
    // All at once: each waits out the same timeout (about 10 s; uWS checks it every 4 s).
    const started = performance.now();
    const outs = await Promise.all(
      [...silent, ...extensions].map(([, bytes]) => rawExchange(s.gw.port, bytes, 20_000)),
    );
    const seconds = (performance.now() - started) / 1000;
    for (const [i, [name]] of silent.entries()) t.equal(outs[i], '', `${name}: closed without an answer`);
    for (const [i, [name]] of extensions.entries())
      t.match(
        outs[silent.length + i],
        /^$|^HTTP\/1\.1 400 Bad Request\r\nConnection: close\r\n/,
        `${name}: uWS's 400 or no answer, then closed`,
      );
    t.ok(seconds < 20, `every connection closed within ${seconds.toFixed(1)} s`);
    t.equal(s.sim.requests.length, 0, 'nothing was forwarded');
    await stillServing(t, s, 'after the timeouts');
  },
);

t.test('a request pipelined behind one still being answered: uWS drops the connection', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const c = await rawConnect(s.gw.port);
  t.teardown(() => c.destroy());
  const post = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`;
  await c.write(`${post}GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n`);
  await c.closedWithin(5000);
  t.equal(c.text(), '', 'neither request is answered');
  await stillServing(t, s, 'after the pipelined pair');
  // Sent one after the other on one connection, both are answered.
  const d = await rawConnect(s.gw.port);
  t.teardown(() => d.destroy());
  await d.write(post);
  await d.until(/"choices"[\s\S]*\}$/);
  await d.write('GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n');
  await d.until(/HTTP\/1\.1 200 [\s\S]*HTTP\/1\.1 200 [\s\S]*\]\}$/);
  t.pass('a keep-alive connection used one request at a time serves both');
});
