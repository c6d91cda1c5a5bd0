// What a provider can do to the gateway, over a real gateway and a raw-socket upstream that sends any
// bytes: an answer ended by closing the connection while the client is slow, interim 1xx heads, an
// event that never ends, a decompression bomb, a body cut short, a 200 that is an error, a `model`
// written twice. Whatever the provider sends, the gateway keeps serving, the client's answer ends,
// and what reaches the client is what the provider sent, or an error.
import t, { type Test } from 'tap';
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import { startStack, type Stack } from '../../helpers/stack.ts';
import { rawHead, type RawExchange, rawJson, rawUpstream } from '../../helpers/raw-upstream.ts';
import { parseSse, rawPost, spyUpstream, USER, waitFor } from '../../helpers/inference.ts';

const CHAT = { model: 'acme/chat-small', messages: USER, provider: { only: ['alpha'] } };

async function stack(t: Test, limits: Record<string, number> = {}): Promise<{ s: Stack; key: string }> {
  const s = await startStack(t, { limits: { firstByteTimeoutMs: 5000, streamIdleTimeoutMs: 5000, ...limits } });
  const key = s.key('open');
  s.credit('open', '100');
  return { s, key };
}

function chunk(content: string): string {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'small-v1', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
}

const DONE = 'data: [DONE]\n\n';

/** Reads a response to its end (or until `ms`), as text. */
function readAll(res: IncomingMessage, ms = 20_000): Promise<{ text: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      res.destroy();
      resolve({ text: Buffer.concat(chunks).toString('utf8'), timedOut: true });
    }, ms);
    const done = (): void => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('utf8'), timedOut: false });
    };
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', done);
    res.on('error', done);
    res.resume();
  });
}

function chatStream(s: Stack, key: string): Promise<{ status: number; res: IncomingMessage }> {
  return rawPost(`${s.url}/v1/chat/completions`, JSON.stringify({ ...CHAT, stream: true }), {
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
  });
}

/** The gateway still answers an ordinary request (it did not exit, nothing is stuck). */
async function stillServes(
  t: Test,
  s: Stack,
  key: string,
  up: { exchanges: RawExchange[] },
  answer: (ex: RawExchange) => void,
): Promise<void> {
  const before = up.exchanges.length;
  const pending = s.post('/v1/chat/completions', CHAT, { key });
  await waitFor(() => up.exchanges.length > before);
  const ex = up.exchanges[before];
  if (ex) answer(ex);
  const res = await pending;
  t.equal(res.status, 200, 'the gateway still serves');
  await res.text();
}

const OK_JSON = rawJson(
  '200 OK',
  JSON.stringify({
    id: 'x',
    object: 'chat.completion',
    model: 'small-v1',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  }),
);

t.test(
  'an answer ended by closing the connection while the client is not reading reaches the client whole',
  async (t) => {
    const big = 'a'.repeat(8 * 1024 * 1024);
    for (const [name, statusLine] of [
      ['HTTP/1.1, no length', 'HTTP/1.1 200 OK'],
      ['HTTP/1.0', 'HTTP/1.0 200 OK'],
    ] as const) {
      const { s, key } = await stack(t);
      const spy = spyUpstream(s);
      let closeNext = true;
      const up = await rawUpstream(t, (ex) => {
        if (!closeNext) return;
        closeNext = false;
        // No Content-Length, no chunking: the answer ends when the provider closes the connection.
        ex.write(`${statusLine}\r\nContent-Type: text/event-stream\r\n\r\n`);
        ex.end(chunk(big) + DONE);
      });
      s.gw.ctx.upstreamOverride = new URL(up.url);
      const raw = await chatStream(s, key);
      t.equal(raw.status, 200, `${name}: committed`);
      raw.res.pause();
      t.ok(await waitFor(() => spy.pauses > 0), `${name}: the slow client paused the upstream read`);
      // The provider's close reaches the gateway while the upstream read is paused.
      await new Promise((r) => setTimeout(r, 300));
      const { text, timedOut } = await readAll(raw.res);
      t.notOk(timedOut, `${name}: the stream ended`);
      const events = parseSse(text);
      t.equal(events.length, 3, `${name}: the content event, the usage frame, [DONE]`);
      t.equal(
        (JSON.parse(events[0]?.data ?? '{}') as { choices: { delta: { content: string } }[] }).choices[0]?.delta.content
          .length,
        big.length,
        `${name}: every byte of the event`,
      );
      t.equal(events.at(-1)?.data, '[DONE]', `${name}: the normal end`);
      await stillServes(t, s, key, up, (ex) => ex.end(OK_JSON));
    }
  },
);

t.test(
  'a provider that resets the connection while the client is not reading breaks the stream, not the gateway',
  async (t) => {
    const { s, key } = await stack(t);
    const spy = spyUpstream(s);
    let resetNext = true;
    const up = await rawUpstream(t, (ex) => {
      if (!resetNext) return;
      resetNext = false;
      ex.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n');
      ex.write(chunk('a'.repeat(4 * 1024 * 1024)));
      ex.socket.once('drain', () => setTimeout(() => ex.reset(), 100));
    });
    s.gw.ctx.upstreamOverride = new URL(up.url);
    const raw = await chatStream(s, key);
    t.equal(raw.status, 200);
    raw.res.pause();
    t.ok(await waitFor(() => spy.pauses > 0), 'the slow client paused the upstream read');
    await new Promise((r) => setTimeout(r, 500));
    const { text, timedOut } = await readAll(raw.res);
    t.notOk(timedOut, 'the stream ended');
    const events = parseSse(text);
    t.match(
      events.at(-1)?.data ?? '',
      /"error":\{"message":"the provider (connection broke|stream ended before its end marker)/,
      'with the error event',
    );
    t.notMatch(text, '[DONE]', 'never as complete');
    await stillServes(t, s, key, up, (ex) => ex.end(OK_JSON));
  },
);

t.test(
  "interim heads before the answer: ignored, and the stream idle limit and the provider's close still end the stream",
  async (t) => {
    const { s, key } = await stack(t, { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 300 });
    let mode: 'stall' | 'drop' = 'stall';
    const up = await rawUpstream(t, (ex) => {
      ex.write('HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n');
      ex.write(
        rawHead('200 OK', [
          ['Content-Type', 'text/event-stream'],
          ['Transfer-Encoding', 'chunked'],
        ]),
      );
      const ev = chunk('hello');
      ex.write(`${ev.length.toString(16)}\r\n${ev}\r\n`);
      // Then silence with the connection open, or the connection dropped mid-answer.
      if (mode === 'drop') setTimeout(() => ex.end(), 50);
    });
    s.gw.ctx.upstreamOverride = new URL(up.url);
    for (const m of ['stall', 'drop'] as const) {
      mode = m;
      const raw = await chatStream(s, key);
      t.equal(raw.status, 200, `${m}: committed on the first content event`);
      const { text, timedOut } = await readAll(raw.res, 10_000);
      t.notOk(timedOut, `${m}: the client's stream ended`);
      const events = parseSse(text);
      t.match(events[0]?.data ?? '', /"content":"hello"/, `${m}: the content`);
      const expected =
        m === 'stall'
          ? /"error":\{"message":"the provider stream stalled for 300 ms/
          : /"error":\{"message":"the provider (stream ended before its end marker|connection broke)/;
      t.match(events.at(-1)?.data ?? '', expected, `${m}: ended with the error event`);
      t.notMatch(text, '[DONE]', `${m}: never as complete`);
    }
  },
);

t.test(
  'an interim 100 Continue before a valid answer is read past; the first-byte limit runs through interim heads',
  async (t) => {
    const { s, key } = await stack(t, { firstByteTimeoutMs: 400, streamIdleTimeoutMs: 400 });
    let mode: 'json' | 'stream' | 'silent' = 'json';
    const up = await rawUpstream(t, (ex) => {
      if (mode === 'silent') {
        // Interim heads, then nothing: the provider has not started answering.
        ex.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\n');
        return;
      }
      ex.write('HTTP/1.1 100 Continue\r\n\r\n');
      if (mode === 'json') ex.write(OK_JSON);
      else ex.end(`${rawHead('200 OK', [['Content-Type', 'text/event-stream']])}${chunk('hi')}${DONE}`);
    });
    s.gw.ctx.upstreamOverride = new URL(up.url);
    const res = await s.post('/v1/chat/completions', CHAT, { key });
    t.equal(res.status, 200, 'JSON answer');
    t.match(await res.json(), { model: 'acme/chat-small', choices: [{ message: { content: 'ok' } }] });
    mode = 'stream';
    const raw = await chatStream(s, key);
    t.equal(raw.status, 200, 'stream answer');
    const { text } = await readAll(raw.res);
    t.equal(parseSse(text).at(-1)?.data, '[DONE]');
    mode = 'silent';
    const t0 = performance.now();
    const late = await s.post('/v1/chat/completions', CHAT, { key });
    t.equal(late.status, 503, "no answer: the gateway's error");
    t.match(await late.json(), {
      error: { code: 'provider_unavailable', message: /did not start answering within 400 ms/ },
    });
    t.ok(performance.now() - t0 < 5000, 'ended by the first-byte limit');
  },
);

t.test(
  'an event that never ends costs bounded work: a provider failure before the commit point, a broken stream after it',
  async (t) => {
    const { s, key } = await stack(t, { firstByteTimeoutMs: 10_000, streamIdleTimeoutMs: 10_000 });
    let mode: 'before' | 'after' = 'before';
    const up = await rawUpstream(t, (ex) => {
      ex.write(rawHead('200 OK', [['Content-Type', 'text/event-stream']]));
      if (mode === 'after') ex.write(chunk('hello'));
      // 32 MiB of one `data:` line with no event boundary, in 64 KiB writes.
      ex.write('data: {"choices":[{"delta":{"content":"');
      const piece = Buffer.alloc(64 * 1024, 0x61);
      let sent = 0;
      const more = (): void => {
        while (sent < 32 * 1024 * 1024) {
          sent += piece.length;
          if (!ex.write(piece)) return void ex.socket.once('drain', more);
        }
      };
      more();
    });
    s.gw.ctx.upstreamOverride = new URL(up.url);
    const t0 = performance.now();
    const res = await s.post('/v1/chat/completions', { ...CHAT, stream: true }, { key });
    t.equal(res.status, 503, 'before the commit point: no provider could answer');
    t.match(await res.json(), {
      error: { code: 'provider_unavailable', message: /a provider event exceeded 16777216 bytes/ },
    });
    // Re-joining the held bytes on every chunk once cost ~20 s of CPU for 32 MiB.
    t.ok(performance.now() - t0 < 8000, `ended in ${Math.round(performance.now() - t0)} ms`);
    t.ok(await waitFor(() => up.exchanges.every((ex) => ex.socket.destroyed)), 'the upstream connection was dropped');

    mode = 'after';
    const raw = await chatStream(s, key);
    t.equal(raw.status, 200);
    const { text, timedOut } = await readAll(raw.res);
    t.notOk(timedOut);
    const events = parseSse(text);
    t.match(events[0]?.data ?? '', /"content":"hello"/);
    t.match(
      events.at(-1)?.data ?? '',
      /"error":\{"message":"a provider event exceeded 16777216 bytes; the answer is incomplete"/,
      'after the commit point: the error event',
    );
    t.notMatch(text, '[DONE]');
  },
);

t.test(
  'a compressed answer is inflated as it arrives and within the body limit: a decompression bomb is a provider failure',
  async (t) => {
    const { s, key } = await stack(t);
    // 16 gzip members of 64 MiB of spaces: 1 GiB inflated, about 1 MB on the wire.
    const member = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20));
    const bomb = Buffer.concat(Array.from({ length: 16 }, () => member));
    t.ok(bomb.length < 2 * 1024 * 1024, `${bomb.length} bytes compressed`);
    let mode: 'bomb' | 'fine' = 'bomb';
    const up = await rawUpstream(t, (ex) => {
      if (mode === 'fine')
        return ex.end(
          rawJson('200 OK', gzipSync(OK_JSON.subarray(OK_JSON.indexOf('\r\n\r\n') + 4)), [
            ['Content-Encoding', 'gzip'],
          ]),
        );
      ex.end(rawJson('200 OK', bomb, [['Content-Encoding', 'gzip']]));
    });
    s.gw.ctx.upstreamOverride = new URL(up.url);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const rss0 = process.memoryUsage().rss;
    const res = await s.post('/v1/chat/completions', CHAT, { key });
    loop.disable();
    const grewMb = (process.memoryUsage().rss - rss0) / 1024 / 1024;
    t.equal(res.status, 503, 'never a 200');
    t.match(await res.json(), {
      error: { code: 'provider_unavailable', message: /the provider answer inflated past 67108864 bytes/ },
    });
    // Inflating it whole with gunzipSync took RSS from 0.7 to 2.2 GB and blocked the loop ~2.6 s.
    t.ok(grewMb < 512, `RSS grew ${Math.round(grewMb)} MB`);
    t.ok(loop.max / 1e6 < 1000, `the event loop was blocked at most ${Math.round(loop.max / 1e6)} ms`);
    mode = 'fine';
    const ok = await s.post('/v1/chat/completions', CHAT, { key });
    t.equal(ok.status, 200, 'an ordinary compressed answer is read');
    t.match(await ok.json(), { model: 'acme/chat-small', choices: [{ message: { content: 'ok' } }] });
    t.equal(ok.headers.get('content-encoding'), null, 'and goes out decoded');
  },
);

/** What the ledger holds for a request: kinds of its entries. */
function ledgerKinds(s: Stack, res: Response): string[] {
  const trace = res.headers.get('x-pi-trace-id') ?? '';
  return s.store.wallets.ledgerOf(trace).map((e) => e.kind);
}

t.test('a non-streamed answer that does not parse completely is never a 200: it is a provider failure', async (t) => {
  const { s, key } = await stack(t);
  const image = JSON.stringify({
    created: 1,
    data: [{ b64_json: Buffer.alloc(200_000, 7).toString('base64') }],
    usage: {
      total_tokens: 10,
      input_tokens: 4,
      output_tokens: 6,
      input_tokens_details: { text_tokens: 4, image_tokens: 0 },
    },
  });
  const cut = image.slice(0, -1);
  const up = await rawUpstream(t, (ex) => {
    // alpha's answer is cut before its closing brace (its length says so too); zeta's is whole.
    const alpha = ex.body.includes('"painter-v1"');
    ex.end(rawJson('200 OK', alpha ? cut : image));
  });
  s.gw.ctx.upstreamOverride = new URL(up.url);
  const body = { model: 'acme/painter', prompt: 'a cat', provider: { only: ['alpha'] } };
  const res = await s.post('/v1/images/generations', body, { key });
  t.equal(res.status, 503, "alone: the gateway's error, not the cut answer");
  t.match(await res.json(), { error: { code: 'provider_unavailable', message: /not a usable JSON body/ } });
  t.notOk(ledgerKinds(s, res).includes('settle'), 'not billed');
  const failover = await s.post(
    '/v1/images/generations',
    { ...body, provider: { order: ['alpha', 'zeta'], allow_fallbacks: true } },
    { key },
  );
  t.equal(failover.status, 200, 'with another provider: its whole answer');
  t.equal(failover.headers.get('x-pi-provider'), 'zeta');
  // Whole, as zeta sent it, with the settled cost added to its usage.
  t.equal((await failover.text()).replace(/,"cost":[0-9.]+\}\}$/, '}}'), image);
});

t.test(
  "a Messages provider answering 200 with an error object: the provider's error, with its status, never billed",
  async (t) => {
    const { s, key } = await stack(t);
    const answers = new Map<string, string>();
    const ok = JSON.stringify({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'sonnet-ish-alpha',
      content: [{ type: 'text', text: 'hi' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 3, output_tokens: 1 },
    });
    const up = await rawUpstream(t, (ex) => {
      const upstreamModel = (JSON.parse(ex.body.toString()) as { model: string }).model;
      ex.end(rawJson('200 OK', answers.get(upstreamModel) ?? ok));
    });
    s.gw.ctx.upstreamOverride = new URL(up.url);
    const ask = (only: string[]) =>
      s.post(
        '/v1/messages',
        { model: 'beta-labs/sonnet-ish', max_tokens: 16, messages: USER, provider: { only, allow_fallbacks: true } },
        { key },
      );
    const cases: [string, string, number][] = [
      [
        'overloaded',
        JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
        529,
      ],
      [
        'rate limited, no top-level type',
        JSON.stringify({ error: { type: 'rate_limit_error', message: 'slow down' } }),
        429,
      ],
      [
        'invalid request',
        JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'bad' } }),
        400,
      ],
      [
        'request too large',
        JSON.stringify({ type: 'error', error: { type: 'request_too_large', message: 'big' } }),
        413,
      ],
      ['api error', JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'oops' } }), 500],
      ['an unknown type', JSON.stringify({ type: 'error', error: { type: 'something_new', message: '?' } }), 502],
      ['no error object', JSON.stringify({ type: 'error' }), 502],
    ];
    answers.set(
      'sonnet-ish-20250101',
      JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'bad' } }),
    );
    const passed = await ask(['delta', 'alpha']);
    t.equal(passed.status, 400, "the client's mistake is passed on, not retried");
    t.equal(passed.headers.get('x-pi-provider'), 'delta');
    answers.set(
      'sonnet-ish-20250101',
      JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    );
    const retried = await ask(['delta', 'alpha']);
    t.equal(retried.status, 200, 'an overloaded provider is failed over like a 529');
    t.equal(retried.headers.get('x-pi-provider'), 'alpha');
    t.match(await retried.json(), { type: 'message', model: 'beta-labs/sonnet-ish' });
    // (The 5xx below open delta's breaker on the way: each request names delta alone.)
    for (const [name, errorBody, status] of cases) {
      answers.set('sonnet-ish-20250101', errorBody);
      const res = await ask(['delta']);
      t.equal(res.status, status, `${name}: ${status}`);
      t.equal(await res.text(), errorBody, `${name}: the provider's body`);
      t.equal(res.headers.get('x-pi-provider'), 'delta');
      t.notOk(ledgerKinds(s, res).includes('settle'), `${name}: not billed`);
    }
  },
);

t.test(
  'an image stream ends at its completed event: nothing the provider sends after it reaches the client',
  async (t) => {
    const { s, key } = await stack(t, { firstByteTimeoutMs: 2000, streamIdleTimeoutMs: 2000 });
    const partial =
      'event: image_generation.partial_image\ndata: {"type":"image_generation.partial_image","b64_json":"aGk=","partial_image_index":0}\n\n';
    const completed =
      'event: image_generation.completed\ndata: {"type":"image_generation.completed","b64_json":"aGVsbG8=","usage":{"total_tokens":10,"input_tokens":4,"output_tokens":6,"input_tokens_details":{"text_tokens":4,"image_tokens":0}}}\n\n';
    let withPartial = true;
    const up = await rawUpstream(t, (ex) => {
      ex.write(rawHead('200 OK', [['Content-Type', 'text/event-stream']]));
      ex.write((withPartial ? partial : '') + completed);
      // The provider goes on: another event later, and the connection left open.
      setTimeout(() => ex.write(partial.replace('"partial_image_index":0', '"partial_image_index":9')), 100);
    });
    s.gw.ctx.upstreamOverride = new URL(up.url);
    for (const first of [true, false]) {
      withPartial = first;
      const res = await s.post(
        '/v1/images/generations',
        { model: 'acme/painter', prompt: 'a cat', stream: true, provider: { only: ['alpha'] } },
        { key },
      );
      t.equal(res.status, 200);
      const t0 = performance.now();
      const text = await res.text();
      t.ok(
        performance.now() - t0 < 1500,
        `${first ? 'after a partial image' : 'as the first event'}: ended without waiting for the provider to close`,
      );
      const events = parseSse(text);
      t.equal(events.at(-1)?.event, 'image_generation.completed', 'the completed event is the last one');
      t.notMatch(text, '"partial_image_index":9', 'nothing after it');
      t.equal(events.length, first ? 2 : 1);
    }
    t.ok(
      await waitFor(() => up.exchanges.every((ex) => ex.socket.destroyed)),
      'the provider that went on sending was dropped',
    );
  },
);

t.test(
  'a provider that sends `model` twice or spelled with escapes: the client still reads the slug, as X-Pi-Model says',
  async (t) => {
    const { s, key } = await stack(t);
    let stream = false;
    const up = await rawUpstream(t, (ex) => {
      if (!stream) {
        ex.end(
          rawJson(
            '200 OK',
            '{"id":"x","object":"chat.completion","model":"small-v1","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"model":"provider-own","mod\\u0065l":"provider-escaped"}',
          ),
        );
        return;
      }
      ex.write(rawHead('200 OK', [['Content-Type', 'text/event-stream']]));
      const c = (content: string, tail: string) =>
        `data: {"id":"c1","object":"chat.completion.chunk","model":"small-v1","choices":[{"index":0,"delta":{"content":"${content}"},"finish_reason":null}]${tail}}\n\n`;
      ex.end(c('a', '') + c('b', ',"model":"provider-own"') + c('c', ',"mod\\u0065l":"provider-escaped"') + DONE);
    });
    s.gw.ctx.upstreamOverride = new URL(up.url);
    const res = await s.post('/v1/chat/completions', CHAT, { key });
    t.equal(res.status, 200);
    t.equal(res.headers.get('x-pi-model'), 'acme/chat-small');
    const text = await res.text();
    t.equal((JSON.parse(text) as { model: string }).model, 'acme/chat-small', 'body model equals X-Pi-Model');
    t.notMatch(text, 'provider-', 'no provider value left');
    stream = true;
    const sres = await s.post('/v1/chat/completions', { ...CHAT, stream: true }, { key });
    const events = parseSse(await sres.text()).filter((e) => e.data.startsWith('{'));
    t.ok(events.length >= 3);
    for (const e of events)
      t.equal((JSON.parse(e.data) as { model: string }).model, 'acme/chat-small', 'every chunk names the slug');
    t.notMatch(JSON.stringify(events), 'provider-');
  },
);

t.test(
  'a slowly uploaded image edit is not charged to the provider: its first-byte limit starts once the upload was sent',
  async (t) => {
    const { s, key } = await stack(t, { firstByteTimeoutMs: 300, streamIdleTimeoutMs: 300 });
    const up = await rawUpstream(t, (ex) => {
      // Answers as soon as the whole upload arrived.
      ex.end(
        rawJson(
          '200 OK',
          JSON.stringify({
            created: 1,
            data: [{ b64_json: 'aGk=' }],
            usage: {
              total_tokens: 3,
              input_tokens: 1,
              output_tokens: 2,
              input_tokens_details: { text_tokens: 1, image_tokens: 0 },
            },
          }),
        ),
      );
    });
    s.gw.ctx.upstreamOverride = new URL(up.url);
    const boundary = '----pi-slow-upload';
    const part = (name: string, value: string): string =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    const req = httpRequest(`${s.url}/v1/images/edits`, {
      method: 'POST',
      agent: false,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'transfer-encoding': 'chunked',
      },
    });
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
    });
    req.write(
      part('model', 'acme/painter') +
        part('prompt', 'p') +
        `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
    );
    // The client takes well over the 300 ms first-byte limit to upload (8 pieces, 150 ms apart).
    for (let i = 0; i < 8; i++) {
      await new Promise((r) => setTimeout(r, 150));
      req.write(Buffer.alloc(4096, i));
    }
    req.end(`\r\n--${boundary}--\r\n`);
    const res = await response;
    t.equal(res.status, 200, res.body);
    t.equal(
      s.gw.ctx.health.state('alpha/painter').consecutiveFailures,
      0,
      'no health failure recorded against the provider',
    );
    t.equal(s.gw.ctx.health.state('alpha/painter').errorRate, 0);
  },
);
