// Each protocol module reads its own requests (no server): which bodies are buffered or streamed,
// the JSON reader (routing fields off, checks, stream flag, hold bounds), each protocol's output
// bound, and the image-edit upload read up to its model field.
import t from 'tap';
import { Readable } from 'node:stream';
import { promptTokenBound } from '../../src/billing/hold.ts';
import { GatewayError } from '../../src/errors.ts';
import type { IncomingRequest } from '../../src/http/request.ts';
import { protocolFor, PROTOCOL_MODULES } from '../../src/protocols/index.ts';
import { DEFAULT_OUTPUT_BOUND } from '../../src/protocols/output-bound.ts';
import type { InboundBody, InboundRequest, ProtocolModule } from '../../src/protocols/types.ts';
import { model } from '../routing/fixtures.ts';

const LIMITS = { maxUploadBytes: 1 << 20 };

function request(over: Partial<IncomingRequest>): IncomingRequest {
  return {
    method: 'POST',
    path: '/',
    query: '',
    headers: {},
    params: [],
    body: Buffer.alloc(0),
    bodyStream: null,
    startedAt: 0,
    remoteAddress: '127.0.0.1',
    bodyBytes: 0,
    ...over,
  };
}

function jsonRequest(body: unknown): IncomingRequest {
  return request({ headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(body)) });
}

function moduleFor(endpoint: string): ProtocolModule {
  const m = protocolFor(endpoint);
  if (!m) throw new Error(`no module for ${endpoint}`);
  return m;
}

async function read(endpoint: string, req: IncomingRequest): Promise<InboundRequest> {
  return moduleFor(endpoint).read(req, endpoint, LIMITS);
}

/** The GatewayError a read was refused with (anything else fails the test). */
async function failureOf(p: Promise<unknown>): Promise<GatewayError> {
  const err = await p.then(
    () => new Error('the request was accepted'),
    (e: unknown) => e,
  );
  if (!(err instanceof GatewayError)) throw err;
  return err;
}

t.test('only image edits stream their body; every other endpoint is read whole', async (t) => {
  for (const m of PROTOCOL_MODULES) {
    for (const e of m.endpoints) t.equal(m.bodyDelivery(e), e === 'images_edits' ? 'stream' : 'buffer', e);
  }
});

t.test('a JSON request: routing fields taken off, stream flag, bounds from the body', async (t) => {
  const body = {
    model: 'acme/m1',
    models: ['acme/m2'],
    provider: { sort: 'price' },
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
  };
  const req = jsonRequest(body);
  const asked = await read('chat_completions', req);
  t.same(asked.fields, { model: 'acme/m1', fallbacks: ['acme/m2'], provider: { sort: 'price' } });
  t.equal(asked.stream, true);
  t.same(asked.body, {
    kind: 'json',
    original: { model: 'acme/m1', stream: true, messages: [{ role: 'user', content: 'hi' }] },
  });
  t.equal(asked.requestBytes, req.body.length);
  t.equal(asked.promptBound, promptTokenBound(req.body.length));
});

t.test('a JSON request from 1 KB on carries its bytes and member spans for the upstream body', async (t) => {
  const body = {
    model: 'acme/m1',
    provider: { sort: 'price' },
    messages: [{ role: 'user', content: 'x'.repeat(1100) }],
  };
  const req = jsonRequest(body);
  const asked = await read('chat_completions', req);
  const { source, ...plain } = asked.body as Extract<InboundBody, { kind: 'json' }>;
  t.same(plain, { kind: 'json', original: { model: 'acme/m1', messages: body.messages } });
  t.equal(source?.raw, req.body, 'the request bytes as they came');
  t.equal(source?.original, plain.original, 'the spans belong to the parsed members');
  t.strictSame([...(source?.members.keys() ?? [])], ['model', 'provider', 'messages']);
});

t.test('a JSON request the spec refuses', async (t) => {
  const refused = async (endpoint: string, req: IncomingRequest, message: RegExp) => {
    t.match(await failureOf(read(endpoint, req)), { message }, `${endpoint}: ${message}`);
  };
  await refused('chat_completions', request({}), /model is required/);
  await refused('chat_completions', request({ body: Buffer.from([0x7b, 0xff, 0x7d]) }), /not valid UTF-8/);
  await refused('chat_completions', request({ body: Buffer.from('{') }), /not valid JSON/);
  await refused('chat_completions', request({ body: Buffer.from('[1]') }), /must be a JSON object/);
  await refused('chat_completions', jsonRequest({ model: 'acme/m1' }), /messages is required/);
  await refused('messages', jsonRequest({ model: 'acme/m1', messages: [] }), /max_tokens is required/);
  await refused('responses', jsonRequest({ model: 'acme/m1' }), /input is required/);
  await refused('images_generations', jsonRequest({ model: 'acme/m1' }), /prompt is required/);
});

t.test('each protocol bounds the output from its own fields, else the model, else the default', async (t) => {
  const m = model('acme/m1', { maxCompletionTokens: 4096, contextLength: 128000 });
  const ctxOnly = model('acme/m2', { maxCompletionTokens: null, contextLength: 8000 });
  const bare = model('acme/m3', { maxCompletionTokens: null, contextLength: null });
  const messages = [{ role: 'user', content: 'hi' }];
  const rows: [string, object, number][] = [
    ['chat_completions', { messages, max_completion_tokens: 100, max_tokens: 200 }, 100],
    ['chat_completions', { messages, max_tokens: 200 }, 200],
    ['chat_completions', { messages, max_tokens: null }, 4096],
    ['chat_completions', { messages }, 4096],
    ['responses', { input: 'hi', max_output_tokens: 300 }, 300],
    ['responses', { input: 'hi', max_tokens: 300 }, 4096],
    ['messages', { messages, max_tokens: 50 }, 50],
    ['images_generations', { prompt: 'a cat', n: 3 }, 3 * 4096],
    ['images_generations', { prompt: 'a cat' }, 4096],
  ];
  for (const [endpoint, body, bound] of rows) {
    const asked = await read(endpoint, jsonRequest({ model: 'acme/m1', ...body }));
    t.equal(asked.outputBound(m), bound, `${endpoint} ${JSON.stringify(body)}`);
  }
  const chat = await read('chat_completions', jsonRequest({ model: 'acme/m1', messages }));
  t.equal(chat.outputBound(ctxOnly), 8000, 'no completion limit: the context length');
  t.equal(chat.outputBound(bare), DEFAULT_OUTPUT_BOUND, 'neither: the default');
});

t.test('a requested output limit is capped at what the model, or the deployment, can write', async (t) => {
  const m = model('acme/m1', { maxCompletionTokens: 4096, contextLength: 128000 });
  const ctxOnly = model('acme/m2', { maxCompletionTokens: null, contextLength: 8000 });
  const bare = model('acme/m3', { maxCompletionTokens: null, contextLength: null });
  const messages = [{ role: 'user', content: 'hi' }];
  const rows: [string, object, number][] = [
    ['chat_completions', { messages, max_tokens: 1_000_000 }, 4096],
    ['chat_completions', { messages, max_completion_tokens: 5000, max_tokens: 10 }, 4096],
    ['responses', { input: 'hi', max_output_tokens: Number.MAX_SAFE_INTEGER }, 4096],
    ['messages', { messages, max_tokens: 64_000 }, 4096],
  ];
  for (const [endpoint, body, bound] of rows) {
    const asked = await read(endpoint, jsonRequest({ model: 'acme/m1', ...body }));
    t.equal(asked.outputBound(m), bound, `${endpoint} ${JSON.stringify(body)}`);
    t.equal(
      asked.outputBound(m, { maxCompletionTokens: 1000, contextLength: 128000 }),
      1000,
      `${endpoint}: a deployment's lower limit`,
    );
  }
  const chat = await read('chat_completions', jsonRequest({ model: 'acme/m1', messages, max_tokens: 20_000 }));
  t.equal(chat.outputBound(ctxOnly), 8000, 'no completion limit: capped at the context length');
  t.equal(chat.outputBound(bare), 20_000, 'no limit declared at all: the request’s own');
  const images = await read('images_generations', jsonRequest({ model: 'acme/m1', prompt: 'a cat', n: 3 }));
  t.equal(
    images.outputBound(m, { maxCompletionTokens: 100, contextLength: null }),
    300,
    'images: n × the deployment’s limit',
  );
  const many = await read(
    'images_generations',
    jsonRequest({ model: 'acme/m1', prompt: 'a cat', n: Number.MAX_SAFE_INTEGER }),
  );
  t.equal(
    many.outputBound(m),
    Number.MAX_SAFE_INTEGER,
    'images: the product saturates at 2^53 − 1 instead of losing exactness',
  );
});

t.test('integer fields beyond 2^53 − 1 and nesting beyond the limit are refused while reading', async (t) => {
  const messages = [{ role: 'user', content: 'hi' }];
  const raw = (text: string) => request({ headers: { 'content-type': 'application/json' }, body: Buffer.from(text) });
  t.match(
    await failureOf(
      read('chat_completions', raw(`{"model":"acme/m1","messages":${JSON.stringify(messages)},"max_tokens":1e300}`)),
    ),
    { code: 'validation_failed', message: /^max_tokens must be a positive integer no larger than 9007199254740991$/ },
  );
  t.match(
    await failureOf(
      read('responses', raw('{"model":"acme/m1","input":"hi","max_output_tokens":99999999999999999999}')),
    ),
    { code: 'validation_failed', message: /^max_output_tokens/ },
  );
  t.match(await failureOf(read('messages', raw(`{"model":"acme/m1","messages":[],"max_tokens":9007199254740992}`))), {
    code: 'validation_failed',
    message: /^max_tokens/,
  });
  t.match(await failureOf(read('images_generations', raw('{"model":"acme/m1","prompt":"x","n":1e20}'))), {
    code: 'validation_failed',
    message: /^n must/,
  });
  t.match(
    await failureOf(read('chat_completions', raw(`{"model":"acme/m1","x":${'['.repeat(200)}${']'.repeat(200)}}`))),
    { code: 'invalid_request', message: /more than 128 levels deep/ },
  );
});

function multipart(parts: [string, string, string | null][]): { body: Buffer; contentType: string } {
  const b = 'XyZ';
  let s = '';
  for (const [name, value, filename] of parts) {
    const disp = filename === null ? `form-data; name="${name}"` : `form-data; name="${name}"; filename="${filename}"`;
    s += `--${b}\r\nContent-Disposition: ${disp}\r\n\r\n${value}\r\n`;
  }
  s += `--${b}--\r\n`;
  return { body: Buffer.from(s), contentType: `multipart/form-data; boundary=${b}` };
}

/** An upload request; with `splitAfter`, its body arrives in two chunks, the first ending just after that text. */
function uploadRequest(parts: [string, string, string | null][], splitAfter?: string): IncomingRequest {
  const { body, contentType } = multipart(parts);
  const at = splitAfter === undefined ? body.length : body.indexOf(splitAfter) + splitAfter.length;
  const chunks = at < body.length ? [body.subarray(0, at), body.subarray(at)] : [body];
  return request({
    headers: { 'content-type': contentType, 'content-length': String(body.length) },
    bodyStream: Readable.from(chunks),
  });
}

t.test('an image edit is read up to its model field and bounded from what it shows', async (t) => {
  const req = uploadRequest([
    ['image', 'PNGDATA', 'a.png'],
    ['prompt', 'make it blue', null],
    ['n', '2', null],
    ['model', 'acme/img', null],
  ]);
  const asked = await read('images_edits', req);
  t.same(asked.fields, { model: 'acme/img', fallbacks: [], provider: undefined });
  t.equal(asked.stream, false);
  t.equal(asked.requestBytes, Number(req.headers['content-length']));
  t.equal(asked.promptBound, Buffer.byteLength('make it blue') + 10_000, 'prompt bytes plus one image');
  t.equal(asked.outputBound(model('acme/img', { maxCompletionTokens: 1000 })), 2000, 'n images');
  t.equal(
    asked.outputBound(model('acme/img', { maxCompletionTokens: null })),
    2 * DEFAULT_OUTPUT_BOUND,
    'no completion limit: the default, not the context',
  );
  if (asked.body.kind !== 'upload') throw new Error('not an upload');
  t.equal(asked.body.upload.contentType, req.headers['content-type']);
  t.equal(asked.body.upload.replayable, true, 'nothing past the prefix went anywhere yet');
});

t.test('the text fields right after model are read before the hold: exact bounds', async (t) => {
  // The order the Python SDK sends: text fields (prompt, model, n, …) first, then the files.
  const asked = await read(
    'images_edits',
    uploadRequest(
      [
        ['prompt', 'make it blue', null],
        ['model', 'acme/img', null],
        ['n', '3', null],
        ['image', 'PNGDATA', 'a.png'],
      ],
      'PNG',
    ),
  );
  t.equal(
    asked.promptBound,
    Buffer.byteLength('make it blue') + 17 * 10_000,
    'the prompt read; the files after it not counted yet',
  );
  t.equal(asked.outputBound(model('acme/img', { maxCompletionTokens: 1000 })), 3000, 'n read after model');
  const whole = await read(
    'images_edits',
    uploadRequest([
      ['model', 'acme/img', null],
      ['prompt', 'x', null],
    ]),
  );
  t.equal(whole.promptBound, 1, 'the whole form read: no file, a one-byte prompt');
  t.equal(whole.outputBound(model('acme/img', { maxCompletionTokens: 1000 })), 1000, 'no n: one image');
});

t.test('an image edit whose fields come after a file is held for the most they may be', async (t) => {
  const asked = await read(
    'images_edits',
    uploadRequest(
      [
        ['model', 'acme/img', null],
        ['image', 'PNGDATA', 'a.png'],
        ['prompt', 'x', null],
        ['n', '2', null],
      ],
      'PNG',
    ),
  );
  t.equal(asked.promptBound, 32_000 + 17 * 10_000, 'the longest later prompt and the most files');
  t.equal(
    asked.outputBound(model('acme/img', { maxCompletionTokens: 1000 })),
    10 * 1000,
    'the most images a later n may ask for',
  );
});

t.test('an image edit the spec refuses', async (t) => {
  const refused = async (req: IncomingRequest, message: RegExp) => {
    t.match(await failureOf(read('images_edits', req)), { message }, String(message));
  };
  await refused(
    request({ headers: { 'content-type': 'application/json' }, bodyStream: Readable.from([]) }),
    /needs a multipart\/form-data body/,
  );
  await refused(uploadRequest([['prompt', 'p', null]]), /model is required/);
});
