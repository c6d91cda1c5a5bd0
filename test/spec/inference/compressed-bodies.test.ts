// Request bodies sent with a Content-Encoding, as agent clients send large bodies: gzip, deflate, br
// and zstd are decoded while the body is read, on every JSON inference endpoint and on the streamed
// image-edit upload, and forwarded to the provider decoded (without the client's Content-Encoding).
// The body limit bounds the decoded size (413 in the protocol's error shape), an encoding the gateway
// does not decode is 415 naming it, and bytes that do not decode are 400 — never an upstream call or
// a hold.
import t, { type Test } from 'tap';
import { request as httpRequest } from 'node:http';
import { brotliCompressSync, constants, createZstdCompress, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import OpenAI from 'openai';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { lastSim, USER } from '../../helpers/inference.ts';

const TEXT = 'This is a simulated reply from the pi-gateway upstream simulator.';
const CODINGS: Record<string, (b: Buffer) => Buffer> = {
  gzip: (b) => gzipSync(b),
  deflate: (b) => deflateSync(b),
  br: (b) => brotliCompressSync(b),
  zstd: (b) => zstdCompressSync(b),
};

/** One JSON request per inference protocol, and the text its answer carries. */
const ENDPOINTS: { path: string; body: Record<string, unknown>; text: (answer: Record<string, unknown>) => unknown }[] =
  [
    {
      path: '/v1/chat/completions',
      body: { model: 'acme/chat-small', messages: USER, max_tokens: 50 },
      text: (a) => (a['choices'] as { message: { content: string } }[])[0]?.message.content,
    },
    {
      path: '/v1/responses',
      body: { model: 'acme/chat-small', input: 'Say hello' },
      text: (a) => JSON.stringify(a['output']).includes(TEXT) && TEXT,
    },
    {
      path: '/v1/messages',
      body: { model: 'beta-labs/sonnet-ish', messages: USER, max_tokens: 50 },
      text: (a) => (a['content'] as { text: string }[])[0]?.text,
    },
  ];

async function setup(t: Test): Promise<{ s: Stack; key: string }> {
  const s = await startStack(t);
  s.credit('open', '100');
  return { s, key: s.key('open') };
}

function send(s: Stack, key: string, path: string, body: Buffer, encoding: string): Promise<Response> {
  return fetch(`${s.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-encoding': encoding },
    body,
  });
}

/** zstd streamed without a known size: the frame asks for a window of 2^windowLog bytes. */
async function zstdWithWindow(data: Buffer, windowLog: number): Promise<Buffer> {
  const c = createZstdCompress({ params: { [constants.ZSTD_c_windowLog]: windowLog } });
  const out: Buffer[] = [];
  c.on('data', (d: Buffer) => out.push(d));
  const ended = new Promise((resolve) => c.on('end', resolve));
  c.end(data);
  await ended;
  return Buffer.concat(out);
}

function noUpstreamAndNoHold(t: Test, s: Stack, upstreamBefore: number): void {
  t.equal(s.sim.requests.length, upstreamBefore, 'nothing reached a provider');
  const w = s.store.wallets.show('open', s.clock.now());
  t.equal(w.held, 0n, 'nothing held');
}

t.test(
  'gzip, deflate, br and zstd bodies are decoded on chat, responses and messages, and forwarded decoded',
  async (t) => {
    const { s, key } = await setup(t);
    for (const e of ENDPOINTS) {
      const json = Buffer.from(JSON.stringify(e.body));
      for (const [coding, compress] of Object.entries(CODINGS)) {
        const label = `${coding} on ${e.path}`;
        const res = await send(s, key, e.path, compress(json), coding);
        t.equal(res.status, 200, label);
        t.equal(e.text((await res.json()) as Record<string, unknown>), TEXT, `${label}: the answer`);
        const up = lastSim(s);
        t.equal(up.headers['content-encoding'], undefined, `${label}: no Content-Encoding upstream`);
        t.match(
          up.body,
          { messages: e.body['messages'], input: e.body['input'] },
          `${label}: the provider got the decoded JSON`,
        );
      }
      // identity (and identity listed beside nothing else) is the body as sent.
      for (const identity of ['identity', 'Identity', ' identity , identity']) {
        const res = await send(s, key, e.path, json, identity);
        t.equal(res.status, 200, `Content-Encoding: ${identity} on ${e.path}`);
        await res.arrayBuffer();
      }
    }
  },
);

t.test('a compressed streamed chat request streams as usual', async (t) => {
  const { s, key } = await setup(t);
  const body = gzipSync(JSON.stringify({ model: 'acme/chat-small', messages: USER, stream: true }));
  const res = await send(s, key, '/v1/chat/completions', body, 'gzip');
  t.equal(res.status, 200);
  const text = await res.text();
  t.match(text, /data: \[DONE\]\s*$/);
  t.equal(lastSim(s).headers['content-encoding'], undefined);
});

t.test('the official OpenAI SDK with a fetch that gzips request bodies (as agent clients do)', async (t) => {
  const { s, key } = await setup(t);
  let compressed = 0;
  const gzipFetch: typeof fetch = (input, init) => {
    if (typeof init?.body !== 'string') return fetch(input, init);
    compressed++;
    const headers = new Headers(init.headers);
    headers.set('content-encoding', 'gzip');
    return fetch(input, { ...init, headers, body: gzipSync(init.body) });
  };
  const client = new OpenAI({ baseURL: s.v1, apiKey: key, maxRetries: 0, fetch: gzipFetch });
  const chat = await client.chat.completions.create({
    model: 'acme/chat-small',
    messages: [{ role: 'user', content: 'Say hello' }],
    max_tokens: 50,
  });
  t.equal(chat.choices[0]?.message.content, TEXT);
  const stream = await client.chat.completions.create({
    model: 'acme/chat-small',
    messages: [{ role: 'user', content: 'Say hello' }],
    stream: true,
  });
  let streamed = '';
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
  t.equal(streamed, TEXT);
  const resp = await client.responses.create({ model: 'acme/chat-small', input: 'Say hello' });
  t.equal(resp.output_text, TEXT);
  t.equal(compressed, 3, 'every body went out gzipped');
});

t.test('the body limit applies to the decoded size: 413 in the protocol’s error shape', async (t) => {
  const { s, key } = await setup(t);
  // The fixture's limit is 64 KiB; 200 KiB of text compresses to a few hundred bytes.
  const big = (e: (typeof ENDPOINTS)[number]): Buffer =>
    Buffer.from(JSON.stringify({ ...e.body, filler: 'a'.repeat(200 * 1024) }));
  for (const e of ENDPOINTS) {
    for (const [coding, compress] of Object.entries(CODINGS)) {
      const body = compress(big(e));
      t.ok(body.length < 64 * 1024, `${coding}: ${body.length} bytes as sent`);
      const before = s.sim.requests.length;
      const res = await send(s, key, e.path, body, coding);
      t.equal(res.status, 413, `${coding} on ${e.path}`);
      const err = (await res.json()) as Record<string, unknown>;
      if (e.path === '/v1/messages')
        t.match(err, {
          type: 'error',
          error: { type: 'invalid_request_error', code: 'request_too_large', message: /65536-byte limit/ },
        });
      else
        t.match(err, {
          error: { code: 'request_too_large', type: 'invalid_request_error', message: /65536-byte limit/ },
        });
      noUpstreamAndNoHold(t, s, before);
    }
  }
  // Just under the limit once decoded is read.
  const fits = Buffer.from(JSON.stringify({ model: 'acme/chat-small', messages: USER, filler: 'a'.repeat(60 * 1024) }));
  const ok = await send(s, key, '/v1/chat/completions', gzipSync(fits), 'gzip');
  t.equal(ok.status, 200, 'a body under the limit once decoded');
});

t.test('an encoding the gateway does not decode, or stacked codings: 415 naming it', async (t) => {
  const { s, key } = await setup(t);
  const json = Buffer.from(JSON.stringify(ENDPOINTS[0]?.body));
  const cases: [string, RegExp][] = [
    [
      'compress',
      /^Content-Encoding "compress" is not supported; the gateway decodes one of gzip, deflate, br, zstd \(or identity\)$/,
    ],
    ['snappy', /"snappy" is not supported/],
    ['gzip, br', /^Content-Encoding "gzip, br" applies more than one coding/],
    ['gzip, gzip', /"gzip, gzip" applies more than one coding/],
  ];
  for (const [encoding, message] of cases) {
    const before = s.sim.requests.length;
    const res = await send(s, key, '/v1/chat/completions', json, encoding);
    t.equal(res.status, 415, encoding);
    t.match(await res.json(), {
      error: { code: 'unsupported_content_encoding', type: 'invalid_request_error', message },
    });
    noUpstreamAndNoHold(t, s, before);
  }
  const m = await send(s, key, '/v1/messages', json, 'compress');
  t.equal(m.status, 415);
  t.match(
    await m.json(),
    {
      type: 'error',
      error: { type: 'invalid_request_error', code: 'unsupported_content_encoding', message: /"compress"/ },
    },
    'the Messages envelope',
  );
  // The check runs before the key: nothing about the body is read.
  const nokey = await fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-encoding': 'compress' },
    body: json,
  });
  t.equal(nokey.status, 415);
  await nokey.arrayBuffer();
});

t.test('bytes that do not decode: 400 with a clear message', async (t) => {
  const { s, key } = await setup(t);
  const json = Buffer.from(JSON.stringify(ENDPOINTS[0]?.body));
  const whole = gzipSync(json);
  const cases: [string, Buffer, string][] = [
    ['gzip', json, 'JSON sent as gzip'],
    ['gzip', whole.subarray(0, whole.length - 10), 'gzip cut short'],
    ['deflate', gzipSync(json), 'gzip sent as deflate'],
    ['br', Buffer.from('not brotli at all'), 'not brotli'],
    ['zstd', json, 'JSON sent as zstd'],
    ['zstd', await zstdWithWindow(json, 27), 'a zstd frame asking for a 128 MiB window'],
  ];
  for (const [coding, body, label] of cases) {
    const before = s.sim.requests.length;
    const res = await send(s, key, '/v1/chat/completions', body, coding);
    t.equal(res.status, 400, label);
    t.match(
      await res.json(),
      {
        error: {
          code: 'invalid_request',
          message: new RegExp(`^the request body is not valid ${coding} data \\(Content-Encoding: ${coding}\\): .+`),
        },
      },
      label,
    );
    noUpstreamAndNoHold(t, s, before);
  }
  const m = await send(s, key, '/v1/messages', json, 'gzip');
  t.equal(m.status, 400);
  t.match(
    await m.json(),
    { type: 'error', error: { type: 'invalid_request_error', message: /not valid gzip data/ } },
    'the Messages envelope',
  );
  const after = await send(s, key, '/v1/chat/completions', whole, 'gzip');
  t.equal(after.status, 200, 'the gateway reads the next compressed body as usual');
});

const BOUNDARY = '----pi-compressed-upload';

function form(image: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nacme/painter\r\n`),
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nmake it blue\r\n`),
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="in.png"\r\nContent-Type: image/png\r\n\r\n`,
    ),
    image,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
}

function upload(s: Stack, key: string, body: Buffer, encoding: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${s.url}/v1/images/edits`, {
      method: 'POST',
      agent: false,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
        'content-encoding': encoding,
        'content-length': String(body.length),
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

t.test('image edits: a compressed multipart upload is decoded as it streams, within the upload limit', async (t) => {
  const { s, key } = await setup(t);
  const image = Buffer.alloc(300_000);
  for (let i = 0; i < image.length; i++) image[i] = (i * 31) & 0xff;
  for (const [coding, compress] of Object.entries(CODINGS)) {
    const res = await upload(s, key, compress(form(image)), coding);
    t.equal(res.status, 200, `${coding}: ${res.body.slice(0, 200)}`);
    const up = lastSim(s);
    t.equal(up.headers['content-encoding'], undefined, `${coding}: no Content-Encoding upstream`);
    t.match(
      up.body,
      { fields: { prompt: 'make it blue' }, files: [{ name: 'image', filename: 'in.png', size: image.length }] },
      `${coding}: the decoded form upstream`,
    );
  }
  // The fixture's upload limit is 1 MiB: 2 MiB of image compresses to almost nothing.
  const before = s.sim.requests.length;
  const over = await upload(s, key, gzipSync(form(Buffer.alloc(2 * 1024 * 1024, 0x41))), 'gzip');
  t.equal(over.status, 413, 'over the upload limit once decoded');
  t.match(JSON.parse(over.body), { error: { code: 'request_too_large', message: /1048576-byte limit/ } });
  t.equal(s.sim.requests.length, before, 'nothing reached a provider');
  const corrupt = await upload(s, key, form(image), 'gzip');
  t.equal(corrupt.status, 400, 'an upload that is not gzip');
  t.match(JSON.parse(corrupt.body), { error: { code: 'invalid_request', message: /not valid gzip data/ } });
  const unknown = await upload(s, key, form(image), 'compress');
  t.equal(unknown.status, 415);
});

t.test(
  'image edits: a large compressed upload goes through whole, the decoded stream paused and resumed',
  async (t) => {
    const s = await startStack(t, { limits: { maxUploadBytes: 64 * 1024 * 1024 } });
    s.credit('open', '100');
    const key = s.key('open');
    // 24 MiB decoded (far over what the body stream buffers before it pauses), a pattern zstd and gzip shrink.
    const image = Buffer.alloc(24 * 1024 * 1024);
    for (let i = 0; i < image.length; i++) image[i] = (i % 251) ^ ((i >> 12) & 0xff);
    for (const coding of ['gzip', 'zstd']) {
      const body = CODINGS[coding]?.(form(image)) ?? Buffer.alloc(0);
      const res = await upload(s, key, body, coding);
      t.equal(res.status, 200, `${coding}: ${body.length} bytes sent`);
      const up = lastSim(s);
      t.match(up.body, { files: [{ name: 'image', size: image.length }] }, `${coding}: every decoded byte upstream`);
      t.ok(up.rawBody.includes(image.subarray(image.length - 4096)), `${coding}: the last bytes intact`);
    }
  },
);
