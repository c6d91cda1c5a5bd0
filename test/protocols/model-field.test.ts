// The slug replaces every `model` a provider sends where the protocol has one — sent twice, spelled
// with escapes, in a duplicated container — so whatever JSON parser the client uses reads the slug,
// and X-Pi-Upstream-Model reports the value a JSON parser would have read.
import fc from 'fast-check';
import t from 'tap';
import { chatCompletions } from '../../src/protocols/chat-completions.ts';
import { images } from '../../src/protocols/images.ts';
import { messages } from '../../src/protocols/messages.ts';
import { slugModel, slugParsedModel } from '../../src/protocols/model-field.ts';
import { responses } from '../../src/protocols/responses.ts';
import { SseSplitter } from '../../src/stream/sse-splitter.ts';

const SLUG = Buffer.from('"vendor/slug"');

/** Every `model` value in the JSON text, in order, whatever the parser keeps. */
function allModels(json: string): unknown[] {
  const found: unknown[] = [];
  // Re-serialise each duplicate by parsing with a reviver that sees every key once per occurrence.
  const re = /"(?:[^"\\]|\\.)*"\s*:/g;
  for (const m of json.matchAll(re)) {
    const name = JSON.parse(m[0].slice(0, m[0].lastIndexOf(':')).trim()) as string;
    if (name === 'model') found.push(m.index);
  }
  return found;
}

t.test('depth 1: a duplicated or escaped key is rewritten everywhere; the last value is reported', async (t) => {
  for (const [json, reported] of [
    ['{"model":"first","x":1,"model":"second"}', 'second'],
    ['{"mod\\u0065l":"escaped","id":"a"}', 'escaped'],
    ['{"model":"plain","\\u006dodel":"sneaky"}', 'sneaky'],
    ['{"model":"a","nested":{"model":"keep"}}', 'a'],
    ['{"model":null,"model":"b"}', 'b'],
    ['{"model":"a","model":7}', null],
  ] as const) {
    const { out, reported: r } = slugModel(Buffer.from(json), SLUG, 0, 1);
    const text = out.toString();
    t.equal((JSON.parse(text) as { model: unknown }).model, 'vendor/slug', `${json}: a JSON parser reads the slug`);
    t.notMatch(text, /"(first|second|escaped|plain|sneaky)"/, `${json}: no provider value left at the top`);
    t.equal(r, reported, `${json}: reports ${reported}`);
    t.equal(allModels(text).length, allModels(json).length, 'no member added or lost');
  }
  t.match(
    slugModel(Buffer.from('{"model":"a","nested":{"model":"keep"}}'), SLUG, 0, 1).out.toString(),
    '"nested":{"model":"keep"}',
  );
});

t.test('depth 2: every model in every container object', async (t) => {
  const ev =
    'event: message_start\ndata: {"type":"message_start","message":{"model":"a","mod\\u0065l":"b"},"message":{"model":"c"}}\n\n';
  const { out, reported } = slugModel(Buffer.from(ev), SLUG, ev.indexOf('{'), 2, 'message');
  t.equal(out.toString().split('"vendor/slug"').length - 1, 3);
  t.equal(reported, 'c');
  const none = 'data: {"type":"response.created","response":{"id":"r"}}\n\n';
  t.match(
    slugModel(Buffer.from(none), SLUG, none.indexOf('{'), 2, 'response').out.toString(),
    '"response":{"model":"vendor/slug","id":"r"}',
    'added when absent',
  );
});

t.test('streams and bodies of every protocol: no provider model reaches the client', async (t) => {
  const chat = [
    'data: {"id":"c","object":"chat.completion.chunk","model":"up","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n',
    'data: {"id":"c","object":"chat.completion.chunk","model":"up","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n',
    // The fast path knows `"model":"up"`: a duplicate and an escaped spelling must still be caught.
    'data: {"id":"c","object":"chat.completion.chunk","model":"up","choices":[{"index":0,"delta":{"content":"x"}}],"model":"up2"}\n\n',
    'data: {"id":"c","object":"chat.completion.chunk","model":"up","choices":[{"index":0,"delta":{"content":"y"}}],"mod\\u0065l":"up3"}\n\n',
    'data: [DONE]\n\n',
  ].join('');
  const tap = chatCompletions.tap(SLUG);
  let out = '';
  for (const ev of new SseSplitter().push(Buffer.from(chat))) out += tap.onEvent(ev).out.toString();
  t.notMatch(out, /"up\d?"/, 'chat stream');
  t.equal(tap.upstreamModel, 'up');
  const resp = responses.tap(SLUG);
  const rev =
    'event: response.created\ndata: {"type":"response.created","respons\\u0065":{"id":"r","model":"up","status":"in_progress"}}\n\n';
  t.notMatch(resp.onEvent(Buffer.from(rev)).out.toString(), '"up"', 'responses: an escaped container name');
  for (const [name, p, body] of [
    ['chat', chatCompletions, '{"id":"x","object":"chat.completion","model":"up","choices":[],"model":"up2"}'],
    ['messages', messages, '{"id":"m","type":"message","mod\\u0065l":"up","content":[]}'],
    ['responses', responses, '{"id":"r","model":"up","status":"completed","model":"up2"}'],
    ['images', images, '{"created":1,"data":[{"b64_json":"aGk="}],"model":"up","model":"up2"}'],
  ] as const) {
    const a = p.readJson(Buffer.from(body), SLUG);
    t.notMatch(a?.body.toString() ?? '', /"up\d?"/, `${name} body`);
    t.equal((JSON.parse(a?.body.toString() ?? '{}') as { model?: string }).model, 'vendor/slug');
  }
  t.equal(
    images.readJson(Buffer.from('{"created":1,"data":[]}'), SLUG)?.body.toString(),
    '{"created":1,"data":[]}',
    'images add no model',
  );
});

t.test('a parsed body: the two-search rewrite gives what the member walk gives', async (t) => {
  // Names and values that can be mistaken for the member now and then; mostly ones that cannot.
  const key = fc.oneof(
    { weight: 1, arbitrary: fc.constantFrom('model', 'x"model"') },
    { weight: 5, arbitrary: fc.constantFrom('models', 'type', 'id', 'usage', 'content') },
  );
  const leaf = fc.oneof(
    { weight: 1, arbitrary: fc.constantFrom('model', '"model"', 'mod\\u0065l', '\u2028', 'a\\"b') },
    { weight: 4, arbitrary: fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.constant(null)) },
  );
  const value = fc.letrec((tie) => ({
    node: fc.oneof({ depthSize: 'small' }, leaf, tie('obj'), fc.array(tie('node'), { maxLength: 3 })),
    obj: fc.dictionary(key, tie('node'), { maxKeys: 4 }),
  })).node;
  // Bodies as providers write them: compact or indented, sometimes with every non-ASCII character
  // escaped, sometimes with a key written twice (which JSON.stringify never does).
  const body = fc
    .tuple(
      fc
        .tuple(
          fc.dictionary(key, value, { maxKeys: 6 }),
          fc.option(fc.constantFrom('gpt-4o', 'a\\"b', 'é'), { freq: 4 }),
        )
        .map(([obj, model]) => (model === null ? obj : { ...obj, model })),
      fc.constantFrom(0, 2),
      fc.boolean(),
      fc.oneof(
        { weight: 4, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.constantFrom('"model":"first",', '"mod\\u0065l":"esc",', '"model" : "spaced" ,') },
      ),
    )
    .map(([obj, indent, escapeAll, extra]) => {
      let text = JSON.stringify(obj, null, indent);
      if (escapeAll)
        text = text.replace(/[^\x20-\x7e\n]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      if (extra !== null) text = text.replace(/^\{/, `{${extra}`).replace(/,\s*\}$/, '}');
      return Buffer.from(text);
    });
  let quick = 0;
  let runs = 0;
  fc.assert(
    fc.property(body, (buf) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(buf.toString('utf8'));
      } catch {
        return true;
      }
      runs++;
      const walked = slugModel(buf, SLUG, 0, 1);
      const searched = slugParsedModel(buf, SLUG, parsed as Record<string, unknown>);
      const once = buf.indexOf('"model"') !== -1 && buf.indexOf('"model"', buf.indexOf('"model"') + 1) === -1;
      if (once && typeof (parsed as Record<string, unknown>)['model'] === 'string' && buf.indexOf('\\u') === -1)
        quick++;
      return searched.reported === walked.reported && searched.out.equals(walked.out);
    }),
    { numRuns: 5000, seed: 20261128 },
  );
  t.ok(quick > runs / 4, `${quick} of ${runs} bodies took the two searches`);
});
