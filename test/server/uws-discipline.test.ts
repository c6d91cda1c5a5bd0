// uWebSockets.js discipline (docs/index.d.ts; STYLE.md "Misusing uWS"), proved on real sockets:
// the native binding is loaded (not the JS fallback); clients that vanish mid-response, mid-stream
// or mid-upload never crash the server; bodies are capped (413) and copied chunk by chunk; many
// concurrent requests each get their own answer. Glue-level cases run on `createHttpServer` with
// test routes; gateway-level cases run on the full stack.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import net from 'node:net';
import t, { type Test } from 'tap';
import uWS from 'uWebSockets.js';
import { GatewayError } from '../../src/errors.ts';
import { createHttpServer, type HttpServer, type RouteDef } from '../../src/server/http-server.ts';
import { startStack } from '../helpers/stack.ts';

const require = createRequire(import.meta.url);

/** A promise with its resolve exposed (lets a handler wait for the test, without timers). */
function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

async function serve(t: Test, routes: RouteDef[]): Promise<{ port: number; url: string; server: HttpServer }> {
  const errors: unknown[] = [];
  const server = createHttpServer(routes, { onUnexpectedError: (err) => errors.push(err) });
  const port = await server.listen('127.0.0.1', 0);
  t.teardown(() => server.close());
  return { port, url: `http://127.0.0.1:${port}`, server };
}

interface RawOptions {
  /** Stop reading and destroy the socket once this many response bytes arrived. */
  destroyAfterBytes?: number;
  /** Destroy the socket right after writing everything. */
  destroyAfterWrite?: boolean;
  /** Close when the accumulated response matches. */
  until?: RegExp;
  /** Sees the accumulated response after every read. */
  onData?: (soFar: string) => void;
}

/** Writes `parts` one per event-loop turn (so the server sees separate TCP segments) and collects the answer. */
function raw(port: number, parts: (string | Buffer)[], o: RawOptions = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let size = 0;
    sock.on('data', (d) => {
      chunks.push(d);
      size += d.length;
      o.onData?.(Buffer.concat(chunks).toString('latin1'));
      if (o.destroyAfterBytes !== undefined && size >= o.destroyAfterBytes) sock.destroy();
      else if (o.until?.test(Buffer.concat(chunks).toString('latin1'))) sock.destroy();
    });
    sock.on('close', () => resolve(Buffer.concat(chunks)));
    sock.on('error', (e: NodeJS.ErrnoException) =>
      e.code === 'ECONNRESET' || e.code === 'EPIPE' ? undefined : reject(e),
    );
    sock.on('connect', async () => {
      for (const p of parts) {
        if (sock.destroyed) break;
        sock.write(p);
        await new Promise((r) => setImmediate(r));
      }
      if (o.destroyAfterWrite) sock.destroy();
    });
  });
}

async function alive(t: Test, url: string, msg = 'server still answers'): Promise<void> {
  const res = await fetch(url);
  await res.arrayBuffer();
  t.equal(res.status, 200, msg);
}

t.test('the native uWS binding is in use, not the JS fallback', async (t) => {
  t.equal(process.env['UWS_USE_FALLBACK'], undefined, 'UWS_USE_FALLBACK is unset');
  const resolved = require.resolve('uWebSockets.js');
  t.ok(resolved.includes('node_modules/uWebSockets.js'), `resolves to the package (${resolved})`);
  const binary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  const loaded = Object.keys(require.cache).filter((k) => k.includes('uWebSockets.js'));
  t.ok(
    loaded.some((k) => k.endsWith(binary)),
    `the ${binary} addon is loaded`,
  );
  t.notOk(
    loaded.some((k) => k.includes('/dist/')),
    'the fallback (dist/) is not loaded',
  );
  t.equal(require('uWebSockets.js'), uWS, 'the module the server imports is that binding');
  t.match(uWS.App.toString(), /\[native code\]/, 'App is a native function');
  const s = await serve(t, [{ method: 'get', pattern: '/', handler: (_r, reply) => reply.send(200, [], 'ok') }]);
  const res = await fetch(s.url);
  await res.text();
  t.equal(res.headers.get('uwebsockets'), '20', 'responses come from the native server');
});

t.test('a client that leaves during a large body send does not crash the server', async (t) => {
  const big = Buffer.alloc(16 * 1024 * 1024, 0x61);
  const aborted = deferred();
  const s = await serve(t, [
    {
      method: 'get',
      pattern: '/big',
      handler: (_req, reply) => {
        reply.onAborted(() => aborted.resolve());
        reply.send(200, [['Content-Type', 'application/octet-stream']], big);
      },
    },
    { method: 'get', pattern: '/ok', handler: (_r, reply) => reply.sendJson(200, { ok: true }) },
  ]);
  const got = await raw(s.port, ['GET /big HTTP/1.1\r\nHost: x\r\n\r\n'], { destroyAfterBytes: 64 * 1024 });
  t.ok(got.length >= 64 * 1024 && got.length < big.length, 'the client left part-way');
  await aborted.promise;
  t.pass('the server saw the abort');
  await alive(t, `${s.url}/ok`);

  // And when the client stays, backpressure (tryEnd + onWritable) delivers every byte.
  const res = await fetch(`${s.url}/big`);
  const body = Buffer.from(await res.arrayBuffer());
  t.equal(res.headers.get('content-length'), String(big.length));
  t.ok(body.equals(big), 'the whole 16 MiB body arrives intact');
});

t.test('a client that leaves mid-stream: later writes, end and errors are harmless', async (t) => {
  const aborted = deferred();
  const after = deferred<{ writeResult: boolean; done: boolean }>();
  const s = await serve(t, [
    {
      method: 'get',
      pattern: '/stream',
      handler: async (_req, reply) => {
        reply.onAborted(() => aborted.resolve());
        reply.startStream(200, [['Content-Type', 'text/event-stream']]);
        reply.write('data: first\n\n');
        await aborted.promise;
        // Everything below runs outside the uWS callback, on a response uWS has discarded.
        const writeResult = reply.write('data: too late\n\n');
        reply.onWritable(() => undefined);
        reply.cork(() => undefined);
        reply.end();
        reply.close();
        after.resolve({ writeResult, done: reply.done });
        throw new Error('a handler failing after the abort');
      },
    },
    { method: 'get', pattern: '/ok', handler: (_r, reply) => reply.sendJson(200, { ok: true }) },
  ]);
  await raw(s.port, ['GET /stream HTTP/1.1\r\nHost: x\r\n\r\n'], { until: /data: first/ });
  const r = await after.promise;
  t.equal(r.writeResult, true, 'write after abort is a no-op reporting no backpressure');
  t.equal(r.done, true, 'the reply knows it is over');
  await alive(t, `${s.url}/ok`);
});

t.test('an async handler answering after the client left does not touch the response', async (t) => {
  const aborted = deferred();
  const answered = deferred();
  const s = await serve(t, [
    {
      method: 'get',
      pattern: '/late',
      handler: async (_req, reply) => {
        reply.onAborted(() => aborted.resolve());
        await aborted.promise;
        reply.sendJson(200, { late: true });
        reply.sendError(new GatewayError('internal_error', 'late'));
        answered.resolve();
      },
    },
    { method: 'get', pattern: '/ok', handler: (_r, reply) => reply.sendJson(200, { ok: true }) },
  ]);
  const sock = net.connect(s.port, '127.0.0.1');
  sock.on('error', () => undefined);
  sock.write('GET /late HTTP/1.1\r\nHost: x\r\n\r\n');
  // Wait until the server has the request (the socket is readable from then on), then leave.
  await new Promise((r) => sock.once('connect', r));
  await new Promise((r) => setImmediate(r));
  sock.destroy();
  await answered.promise;
  t.pass('late answers were swallowed');
  await alive(t, `${s.url}/ok`);
});

t.test(
  'a handler error after the stream started closes the connection instead of hanging',
  { timeout: 20_000 },
  async (t) => {
    // The handler fails once the client holds the first bytes (released by the test, no timers).
    let go = deferred();
    const failAfterStart =
      (err: () => Error): RouteDef['handler'] =>
      async (_req, reply) => {
        reply.startStream(200, [['Content-Type', 'text/plain']]);
        reply.write('partial');
        await go.promise;
        throw err();
      };
    const s = await serve(t, [
      {
        method: 'get',
        pattern: '/gw-error',
        handler: failAfterStart(() => new GatewayError('validation_failed', 'too late for an error object')),
      },
      { method: 'get', pattern: '/other-error', handler: failAfterStart(() => new Error('boom')) },
      { method: 'get', pattern: '/ok', handler: (_r, reply) => reply.sendJson(200, { ok: true }) },
    ]);
    for (const path of ['/gw-error', '/other-error']) {
      go = deferred();
      const out = (
        await raw(s.port, [`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`], {
          onData: (x) => (x.includes('partial') ? go.resolve() : undefined),
        })
      ).toString('latin1');
      t.match(out, /^HTTP\/1\.1 200 /, `${path}: the stream had started`);
      t.match(out, /partial/);
      t.notMatch(out, /\r\n0\r\n\r\n$/, `${path}: not ended as if complete; the connection was dropped`);
    }
    await alive(t, `${s.url}/ok`);
  },
);

t.test('request bodies: copied chunk by chunk, capped, aborted uploads harmless', async (t) => {
  const handled: string[] = [];
  const streamErrors: string[] = [];
  const streamDone = deferred();
  const s = await serve(t, [
    {
      method: 'post',
      pattern: '/echo',
      body: 'buffer',
      maxBodyBytes: 1024 * 1024,
      handler: (req, reply) => {
        handled.push('echo');
        reply.sendJson(200, { length: req.body.length, sha256: createHash('sha256').update(req.body).digest('hex') });
      },
    },
    {
      method: 'post',
      pattern: '/upload',
      body: 'stream',
      maxBodyBytes: 1024 * 1024,
      handler: async (req, reply) => {
        try {
          let n = 0;
          for await (const c of req.bodyStream ?? []) n += (c as Buffer).length;
          reply.sendJson(200, { length: n });
        } catch (err) {
          streamErrors.push(err instanceof Error ? err.message : String(err));
        } finally {
          streamDone.resolve();
        }
      },
    },
    { method: 'get', pattern: '/ok', handler: (_r, reply) => reply.sendJson(200, { ok: true }) },
  ]);

  // Many small TCP segments: every onData chunk must be copied before uWS neuters it.
  const body = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
  const parts: Buffer[] = [Buffer.from(`POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`)];
  for (let i = 0; i < body.length; i += 997) parts.push(body.subarray(i, i + 997));
  const out = (await raw(s.port, parts, { until: /"sha256":"[0-9a-f]{64}"\}/ })).toString('latin1');
  const json = JSON.parse(out.slice(out.indexOf('{'))) as { length: number; sha256: string };
  t.equal(json.length, body.length, 'every byte read');
  t.equal(json.sha256, createHash('sha256').update(body).digest('hex'), 'bytes intact and in order');

  // Chunked transfer encoding, also in pieces.
  const chunked: string[] = ['POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n'];
  const text = 'héllo wörld '.repeat(2000);
  const tb = Buffer.from(text);
  for (let i = 0; i < tb.length; i += 500) {
    const c = tb.subarray(i, i + 500);
    chunked.push(`${c.length.toString(16)}\r\n${c.toString('latin1')}\r\n`);
  }
  chunked.push('0\r\n\r\n');
  const out2 = (
    await raw(
      s.port,
      chunked.map((c) => Buffer.from(c, 'latin1')),
      { until: /"sha256":"[0-9a-f]{64}"\}/ },
    )
  ).toString('latin1');
  const json2 = JSON.parse(out2.slice(out2.indexOf('{'))) as { length: number; sha256: string };
  t.equal(json2.sha256, createHash('sha256').update(tb).digest('hex'), 'chunked body intact');

  // Over the cap: declared, and undeclared (chunked), both answered 413 with the error object.
  const declared = (
    await raw(
      s.port,
      [`POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: ${2 * 1024 * 1024}\r\n\r\n`, Buffer.alloc(1000)],
      { until: /request_too_large"\}\}/ },
    )
  ).toString('latin1');
  t.match(declared, /^HTTP\/1\.1 413 /, 'declared length over the cap: 413');
  t.match(declared, /"code":"request_too_large"/);
  const big = Buffer.alloc(64 * 1024, 0x62);
  const over: Buffer[] = [Buffer.from('POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n')];
  for (let i = 0; i < 20; i++)
    over.push(Buffer.concat([Buffer.from(`${big.length.toString(16)}\r\n`), big, Buffer.from('\r\n')]));
  const undeclared = (await raw(s.port, over, { until: /request_too_large"\}\}/ })).toString('latin1');
  t.match(undeclared, /^HTTP\/1\.1 413 /, 'chunked body growing over the cap: 413');
  t.match(
    undeclared,
    /\{"error":\{"message":"request body is larger than the 1048576-byte limit","type":"invalid_request_error","code":"request_too_large"\}\}/,
  );

  // The client leaves mid-upload: the buffered handler is never called; the streamed one sees an error.
  const before = handled.length;
  await raw(s.port, [`POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 500000\r\n\r\n`, Buffer.alloc(10_000)], {
    destroyAfterWrite: true,
  });
  await raw(s.port, [`POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 500000\r\n\r\n`, Buffer.alloc(10_000)], {
    destroyAfterWrite: true,
  });
  await streamDone.promise;
  t.equal(handled.length, before, 'a half-sent buffered body never reaches the handler');
  t.match(streamErrors, [/client aborted the upload/], 'the streamed body errors');
  await alive(t, `${s.url}/ok`);
});

t.test('HEAD answers carry no body bytes, so a keep-alive connection stays in sync', async (t) => {
  const big = Buffer.alloc(200 * 1024, 0x63);
  const s = await serve(t, [
    { method: 'any', pattern: '/small', handler: (_r, reply) => reply.sendJson(400, { error: 'x' }) },
    { method: 'any', pattern: '/big', handler: (_r, reply) => reply.send(200, [], big) },
    {
      method: 'any',
      pattern: '/stream',
      handler: (_r, reply) => {
        reply.startStream(200, []);
        reply.write('never');
        reply.end();
      },
    },
    { method: 'get', pattern: '/ok', handler: (_r, reply) => reply.send(200, [], 'fine') },
  ]);
  for (const path of ['/small', '/big', '/stream']) {
    const out = (
      await raw(s.port, [`HEAD ${path} HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n`], {
        until: /\r\n\r\nfine$/,
      })
    ).toString('latin1');
    const [first, second] = out.split(/(?=HTTP\/1\.1 )/);
    t.ok(first?.endsWith('\r\n\r\n'), `HEAD ${path}: nothing after the header block`);
    t.match(first, /\r\nx-pi-trace-id: /i, `HEAD ${path}: gateway headers`);
    if (path !== '/stream')
      t.match(
        first,
        new RegExp(
          `\\r\\nContent-Length: ${path === '/big' ? big.length : JSON.stringify({ error: 'x' }).length}\\r\\n`,
          'i',
        ),
        `HEAD ${path}: the length GET would have`,
      );
    t.match(
      second,
      /^HTTP\/1\.1 200 OK[\s\S]*\r\n\r\nfine$/,
      `HEAD ${path}: the next response on the connection is intact`,
    );
  }
  // Through the gateway: HEAD is no catalog method (unserved-path answer), still framed correctly.
  const g = await startStack(t);
  const out = (
    await raw(
      g.gw.port,
      ['HEAD /v1/models HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models/acme/chat-small HTTP/1.1\r\nHost: x\r\n\r\n'],
      { until: /"details":"\/v1\/models\/acme\/chat-small"\}\}$/ },
    )
  ).toString('latin1');
  const [head, get] = out.split(/(?=HTTP\/1\.1 )/);
  t.match(head, /^HTTP\/1\.1 400 /);
  t.ok(head?.endsWith('\r\n\r\n'), 'gateway HEAD: no body');
  t.match(get, /^HTTP\/1\.1 200 OK/, 'gateway: next response intact');
});

t.test('gateway: 413 request_too_large, declared and undeclared', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  const cap = s.gw.ctx.settings.limits.maxBodyBytes;
  const head = (extra: string) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${extra}\r\n`;
  const declared = (
    await raw(s.gw.port, [head(`Content-Length: ${cap + 1}\r\n`), Buffer.alloc(cap + 1, 0x20)], {
      until: /request_too_large"\}\}/,
    })
  ).toString('latin1');
  t.match(declared, /^HTTP\/1\.1 413 /);
  t.match(declared, /\r\nx-pi-trace-id: /i);
  t.match(declared, /"type":"invalid_request_error","code":"request_too_large"/);
  const parts: Buffer[] = [Buffer.from(head('Transfer-Encoding: chunked\r\n'))];
  for (let i = 0; i < Math.ceil(cap / 4096) + 2; i++) parts.push(Buffer.from(`1000\r\n${' '.repeat(4096)}\r\n`));
  const undeclared = (await raw(s.gw.port, parts, { until: /request_too_large"\}\}/ })).toString('latin1');
  t.match(undeclared, /^HTTP\/1\.1 413 /);
  t.match(undeclared, /"code":"request_too_large"/);
  await alive(t, `${s.url}/v1/models`);
});

t.test('gateway: a chat body sent in many small pieces reaches the upstream intact', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const content = `pieces ${'ünïcödé '.repeat(300)}`;
  const body = Buffer.from(
    JSON.stringify({ model: 'acme/chat-small', messages: [{ role: 'user', content }], sim: { echo: true } }),
  );
  const parts: Buffer[] = [
    Buffer.from(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    ),
  ];
  // 7-byte pieces split multi-byte characters across chunks.
  for (let i = 0; i < body.length; i += 7) parts.push(body.subarray(i, i + 7));
  const out = (await raw(s.gw.port, parts)).toString('utf8');
  t.match(out, /^HTTP\/1\.1 200 /);
  const json = JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4)) as { choices: { message: { content: string } }[] };
  const echoed = JSON.parse(json.choices[0]?.message.content ?? '{}') as { messages: { content: string }[] };
  t.equal(echoed.messages[0]?.content, content, 'the upstream received exactly the text sent');
});

t.test('gateway: a client that leaves mid-stream does not crash the gateway', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  // Slow upstream stream: the client leaves after the first event, long before the end.
  s.sim.script('small-v1', { chunks: 50, chunkDelayMs: 20 });
  s.sim.script('small-beta', { chunks: 50, chunkDelayMs: 20 });
  s.sim.script('small-gamma', { chunks: 50, chunkDelayMs: 20 });
  s.sim.script('small-deployment', { chunks: 50, chunkDelayMs: 20 });
  for (let i = 0; i < 3; i++) {
    const ac = new AbortController();
    const res = await fetch(`${s.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'acme/chat-small', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      signal: ac.signal,
    });
    t.equal(res.status, 200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    t.ok(first.value && first.value.length > 0, 'got the first bytes');
    ac.abort();
    await reader.read().catch(() => undefined);
  }
  s.sim.clear();
  await alive(t, `${s.url}/v1/models`);
  const res = await s.post(
    '/v1/chat/completions',
    { model: 'acme/chat-small', messages: [{ role: 'user', content: 'after' }] },
    { key },
  );
  await res.arrayBuffer();
  t.equal(res.status, 200, 'inference still works');
});

t.test('gateway: a client that leaves mid-upload (images/edits) does not crash the gateway', async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '10');
  const boundary = 'xyzBOUNDARY';
  const start = `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nacme/painter\r\n--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`;
  await raw(
    s.gw.port,
    [
      `POST /v1/images/edits HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 900000\r\n\r\n`,
      start,
      Buffer.alloc(50_000, 1),
    ],
    { destroyAfterWrite: true },
  );
  await alive(t, `${s.url}/v1/models`);
});

t.test("concurrent requests never get each other's answers", async (t) => {
  const s = await startStack(t);
  const key = s.key('open');
  s.credit('open', '100');
  const slugs = [
    'acme/chat-small',
    'acme/chat-big',
    'acme/reasoner',
    'acme/bracketed',
    'acme/painter',
    'acme/embedder',
    'beta-labs/sonnet-ish',
  ];
  const catalog = Array.from({ length: 140 }, (_, i) => {
    const slug = slugs[i % slugs.length] as string;
    const path = i % 2 === 0 ? `/v1/models/${slug}` : `/v1/models/${slug}/endpoints`;
    return fetch(`${s.url}${path}`).then(async (r) => ({
      slug,
      trace: r.headers.get('x-pi-trace-id'),
      body: (await r.json()) as { id?: string; data?: { id: string } },
    }));
  });
  const chats = Array.from({ length: 60 }, (_, i) => {
    const marker = `marker-${i}-${'m'.repeat(i * 50)}`;
    return s
      .post(
        '/v1/chat/completions',
        { model: 'acme/chat-small', messages: [{ role: 'user', content: marker }], sim: { echo: true } },
        { key },
      )
      .then(async (r) => ({
        marker,
        status: r.status,
        trace: r.headers.get('x-pi-trace-id'),
        body: (await r.json()) as { choices: { message: { content: string } }[] },
      }));
  });
  const [cat, chat] = await Promise.all([Promise.all(catalog), Promise.all(chats)]);
  // The single-model body is the model object; the endpoints view wraps its view in {data}.
  t.ok(
    cat.every((c) => (c.body.data?.id ?? c.body.id) === c.slug),
    'every catalog answer is for the model asked',
  );
  t.ok(
    chat.every((c) => c.status === 200),
    'every chat answered 200',
  );
  t.ok(
    chat.every(
      (c) =>
        (JSON.parse(c.body.choices[0]?.message.content ?? '{}') as { messages: { content: string }[] }).messages[0]
          ?.content === c.marker,
    ),
    'every chat answer echoes its own request',
  );
  const traces = new Set([...cat, ...chat].map((c) => c.trace));
  t.equal(traces.size, cat.length + chat.length, 'distinct trace ids');
});
