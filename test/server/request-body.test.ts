// The request body reader on real sockets, at the glue level (createHttpServer with test routes):
// once an answer is sent or the client left, the reader never touches the uWS response again (a
// finished response used from JavaScript throws from native code), a socket it paused is resumed
// before the answer ends (or the rest of the body would never be read and the connection would hang),
// and the rest of the body is read and dropped so the connection answers its next request.
import t, { type Test } from 'tap';
import { GatewayError } from '../../src/errors.ts';
import { createHttpServer, type RouteDef } from '../../src/server/http-server.ts';
import { DROPPED_BODY_BYTES } from '../../src/server/read-body.ts';
import { waitFor } from '../helpers/admission.ts';
import { parseResponses, rawConnect } from '../helpers/raw-client.ts';

function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const CAP = 4 * 1024 * 1024;

async function serve(t: Test, routes: RouteDef[]): Promise<{ port: number; errors: unknown[] }> {
  const errors: unknown[] = [];
  const server = createHttpServer(
    [...routes, { method: 'get', pattern: '/ok', handler: (_r, reply) => reply.send(200, [], 'fine') }],
    {
      onUnexpectedError: (err) => errors.push(err),
    },
  );
  const port = await server.listen('127.0.0.1', 0);
  t.teardown(() => server.close());
  return { port, errors };
}

const NEXT = 'GET /ok HTTP/1.1\r\nHost: x\r\n\r\n';
const ANSWERED_THEN_NEXT = /^HTTP\/1\.1 4\d\d [\s\S]*HTTP\/1\.1 200 [\s\S]*\r\n\r\nfine$/;

t.test(
  'an answer while the upload is paused: the socket is resumed, the rest dropped, the next request answered',
  async (t) => {
    const s = await serve(t, [
      {
        method: 'post',
        pattern: '/upload',
        body: 'stream',
        maxBodyBytes: CAP,
        handler: async (req, reply) => {
          // Answers once the stream holds what it buffers: the reader has paused uWS by then.
          t.ok(
            await waitFor(() => (req.bodyStream?.readableLength ?? 0) >= 256 * 1024),
            'the upload filled the stream',
          );
          reply.sendError(new GatewayError('invalid_request', 'refused before reading the body'));
        },
      },
    ]);
    const body = Buffer.alloc(1024 * 1024, 0x61);
    const c = await rawConnect(s.port);
    t.teardown(() => c.destroy());
    await c.write(
      Buffer.concat([Buffer.from(`POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`), body]),
    );
    await c.until(/"code":"invalid_request"\}\}$/, 5000);
    // Not pipelined with the upload: uWS drops a connection that sends a request while the previous
    // answer is pending.
    await c.write(NEXT);
    const out = await c.until(ANSWERED_THEN_NEXT, 5000);
    const [first, second] = parseResponses(out);
    t.equal(first?.status, 400);
    t.equal(second?.body, 'fine', 'the next request on the connection is answered');
    t.same(s.errors, []);
  },
);

t.test(
  'an answer before the upload arrives: later chunks, read() and a late abort never touch the response',
  async (t) => {
    const consumer = deferred<string>();
    const s = await serve(t, [
      {
        method: 'post',
        pattern: '/answer-then-read',
        body: 'stream',
        maxBodyBytes: CAP,
        handler: async (req, reply) => {
          reply.sendError(new GatewayError('invalid_request', 'answered first'));
          // A consumer that still reads after the answer: the stream ends with an error, and its
          // read() calls never resume a finished response.
          try {
            for await (const _ of req.bodyStream ?? []) void _;
            consumer.resolve('ended');
          } catch (err) {
            consumer.resolve(err instanceof Error ? err.message : String(err));
          }
        },
      },
      {
        method: 'post',
        pattern: '/answer-unread',
        body: 'stream',
        maxBodyBytes: CAP,
        handler: (_req, reply) => reply.sendError(new GatewayError('invalid_request', 'never read')),
      },
    ]);
    for (const path of ['/answer-then-read', '/answer-unread']) {
      const c = await rawConnect(s.port);
      t.teardown(() => c.destroy());
      const total = 2 * 1024 * 1024;
      await c.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${total}\r\n\r\n`);
      await c.until(/\r\n\r\n\{[\s\S]*\}$/);
      for (let i = 0; i < total; i += 64 * 1024) await c.write(Buffer.alloc(64 * 1024, 0x62));
      await c.write(NEXT);
      await c.until(ANSWERED_THEN_NEXT, 5000);
      t.pass(`${path}: the rest of the body was dropped and the next request answered`);
    }
    t.match(
      await consumer.promise,
      /answer was sent before the request body was read/,
      'the late consumer is told, not left waiting',
    );
    // The same, with the client leaving mid-upload after the answer.
    const c = await rawConnect(s.port);
    await c.write(`POST /answer-unread HTTP/1.1\r\nHost: x\r\nContent-Length: ${CAP}\r\n\r\n`);
    await c.until(/\r\n\r\n\{[\s\S]*\}$/);
    await c.write(Buffer.alloc(512 * 1024, 0x63));
    c.destroy();
    const after = await rawConnect(s.port);
    await after.write(NEXT);
    await after.until(/fine$/);
    after.destroy();
    t.same(s.errors, []);
  },
);

t.test('a client that leaves before a handler looked at its upload does not stop the process', async (t) => {
  const aborted = deferred();
  const release = deferred();
  const s = await serve(t, [
    {
      method: 'post',
      pattern: '/slow-handler',
      body: 'stream',
      maxBodyBytes: CAP,
      handler: async (_req, reply) => {
        reply.onAborted(() => aborted.resolve());
        // Never reads the body: the stream's abort error has no consumer.
        await release.promise;
        reply.sendError(new GatewayError('invalid_request', 'too late'));
      },
    },
  ]);
  const c = await rawConnect(s.port);
  await c.write(`POST /slow-handler HTTP/1.1\r\nHost: x\r\nContent-Length: ${CAP}\r\n\r\n`);
  // Less than the stream buffers: the socket is not paused, so uWS sees the client leave (a paused
  // socket is not polled, and its close is noticed only once it is resumed).
  await c.write(Buffer.alloc(100 * 1024, 0x64));
  c.destroy();
  await aborted.promise;
  // Let the stream's error event be emitted (next ticks) before the handler goes on.
  await new Promise((r) => setImmediate(r));
  release.resolve();
  const after = await rawConnect(s.port);
  await after.write(NEXT);
  await after.until(/fine$/);
  after.destroy();
  t.same(s.errors, []);
});

t.test(
  'an empty body whose head arrived in several packets is complete at once (uWS never calls onData)',
  async (t) => {
    const s = await serve(t, [
      {
        method: 'post',
        pattern: '/buffered',
        body: 'buffer',
        maxBodyBytes: CAP,
        handler: (req, reply) => reply.sendJson(200, { length: req.body.length }),
      },
      {
        method: 'post',
        pattern: '/stream',
        body: 'stream',
        maxBodyBytes: CAP,
        handler: async (req, reply) => {
          let length = 0;
          for await (const chunk of req.bodyStream ?? []) length += (chunk as Buffer).length;
          reply.sendJson(200, { length });
        },
      },
    ]);
    for (const path of ['/buffered', '/stream']) {
      const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`;
      for (const cut of [10, head.length - 3, head.length]) {
        const c = await rawConnect(s.port);
        t.teardown(() => c.destroy());
        await c.write(head.slice(0, cut));
        // A pause so the server reads the two parts apart (not a time rule: nothing waits on a clock).
        await new Promise((resolve) => setTimeout(resolve, 20));
        if (cut < head.length) await c.write(head.slice(cut));
        const [answer] = parseResponses(await c.until(/\}$/, 5000));
        t.equal(answer?.body, '{"length":0}', `${path}, head cut at ${cut} of ${head.length}: answered at once`);
      }
    }
    t.same(s.errors, []);
  },
);

t.test(
  'a declared body a little past the cap: 413, the rest read and dropped, the next request answered',
  async (t) => {
    // Closing a socket with the client's bytes still unread makes the kernel send a reset, which can
    // discard the 413 before the client reads it: the upload is read to its end instead.
    const cap = 256 * 1024;
    const s = await serve(t, [
      {
        method: 'post',
        pattern: '/buffered',
        body: 'buffer',
        maxBodyBytes: cap,
        handler: (req, reply) => reply.sendJson(200, { length: req.body.length }),
      },
      {
        method: 'post',
        pattern: '/stream',
        body: 'stream',
        maxBodyBytes: cap,
        handler: (_req, reply) => reply.sendJson(200, {}),
      },
    ]);
    for (const path of ['/buffered', '/stream']) {
      const body = Buffer.alloc(cap + DROPPED_BODY_BYTES, 0x61);
      const c = await rawConnect(s.port);
      t.teardown(() => c.destroy());
      await c.write(
        Buffer.concat([
          Buffer.from(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`),
          body,
        ]),
      );
      await c.until(/request_too_large"\}\}$/, 10_000);
      t.notOk(c.closed, `${path}: the connection stays open while the rest arrives`);
      await c.write(NEXT);
      const [first, second] = parseResponses(await c.until(ANSWERED_THEN_NEXT, 10_000));
      t.equal(first?.status, 413, `${path}: 413`);
      t.equal(
        second?.body,
        'fine',
        `${path}: the whole upload was read, and the next request on the connection answered`,
      );
    }
    t.same(s.errors, []);
  },
);

t.test('a buffered body over the cap: 413, then the connection is closed', async (t) => {
  const s = await serve(t, [
    {
      method: 'post',
      pattern: '/buffered',
      body: 'buffer',
      maxBodyBytes: 256 * 1024,
      handler: (req, reply) => reply.sendJson(200, { length: req.body.length }),
    },
  ]);
  // Undeclared length over the cap: 413 at once, and the connection is closed after it (what is
  // left of a chunked body has no bound), never left open.
  const c = await rawConnect(s.port);
  t.teardown(() => c.destroy());
  await c.write('POST /buffered HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
  const piece = Buffer.alloc(64 * 1024, 0x65);
  for (let i = 0; i < 5; i++)
    await c.write(Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]));
  await c.until(/request_too_large"\}\}$/);
  await c.closedWithin(5000);
  const [answer] = parseResponses(c.text());
  t.equal(answer?.status, 413);
  t.equal(answer?.header('connection'), 'close');
  // Declared over the cap: answered from the head alone, then closed.
  const d = await rawConnect(s.port);
  t.teardown(() => d.destroy());
  await d.write(`POST /buffered HTTP/1.1\r\nHost: x\r\nContent-Length: ${1024 * 1024 * 1024}\r\n\r\n`);
  await d.write(piece);
  await d.closedWithin(5000);
  t.equal(parseResponses(d.text())[0]?.status, 413, 'a declared length over the cap: 413, then closed');
  const ok = await rawConnect(s.port);
  await ok.write(NEXT);
  await ok.until(/fine$/);
  ok.destroy();
  t.same(s.errors, []);
});
