// Pure parts of the simulator: JSON templates, reply text planning, path routing, the script book
// and behaviour validation.
import t from 'tap';
import { parseBehaviour, selectBehaviour } from '../../src/simulator/behaviour.ts';
import { RawJson, compileTemplate, pyFloat, slot } from '../../src/simulator/json-template.ts';
import { estimatePromptTokens, planText } from '../../src/simulator/reply-text.ts';
import { classify } from '../../src/simulator/routes.ts';
import { ScriptBook } from '../../src/simulator/script-book.ts';

t.test('templates render exactly what JSON.stringify would', async (t) => {
  const shape = { a: slot('a'), nested: { list: [slot('b'), 2], obj: slot('c') }, tail: 'x' };
  const values = { a: 'q"uote', b: null, c: { deep: [1, { e: 'f' }], empty: [] } };
  const expected = { a: 'q"uote', nested: { list: [null, 2], obj: values.c }, tail: 'x' };
  for (const indent of [0, 2, 4] as const) {
    t.equal(
      compileTemplate(shape, indent).render(values),
      indent ? JSON.stringify(expected, null, indent) : JSON.stringify(expected),
      `indent ${indent}`,
    );
  }
  t.equal(compileTemplate({ x: slot('x') }).render({ x: new RawJson('[1,2]') }), '{"x":[1,2]}');
  t.equal(compileTemplate({ x: slot('x') }).render({}), '{"x":null}');
  t.equal(pyFloat(1).json, '1.0');
  t.equal(pyFloat(0.25).json, '0.25');
  t.equal(pyFloat(1e15).json, '1000000000000000.0');
  t.equal(pyFloat(1e16).json, '1e+16', "Python's exponent form from 1e16");
  t.equal(pyFloat(1.2345678901234568e29).json, '1.2345678901234568e+29');
  t.equal(pyFloat(-1.5e300).json, '-1.5e+300');
  t.equal(pyFloat(Number.POSITIVE_INFINITY).json, 'null', 'JSON has no Infinity');
  for (const n of [1e16, 1.2345678901234568e29, 1e308, -1e20, 3e-7, Number.NaN])
    t.doesNotThrow(() => JSON.parse(pyFloat(n).json), `${n} echoes as JSON`);
});

t.test('reply text: default sentence, chunking, caps', async (t) => {
  const d = planText({}, undefined, undefined);
  t.equal(d.full, 'This is a simulated reply from the pi-gateway upstream simulator.');
  t.equal(d.pieces.length, 3);
  t.equal(d.pieces.join(''), d.full);
  t.equal(d.tokens, 10);
  t.equal(planText({ chunks: 1 }, undefined, undefined).pieces.length, 1);
  const long = planText({ chunks: 14 }, undefined, undefined);
  t.equal(long.pieces.length, 14);
  t.equal(long.tokens, 14);
  t.match(long.full, /simulator\. alpha bravo charlie delta$/);
  const capped = planText({ text: 'one two three four five' }, undefined, 2);
  t.same(capped.pieces, ['one ', 'two ']);
  t.ok(capped.truncated);
  t.same(planText({ text: 'x' }, undefined, 0).pieces, []);
  t.same(planText({ text: 'héllo', chunks: 2 }, undefined, undefined).pieces, ['hé', 'llo']);
  t.same(planText({ chunks: 0 }, undefined, undefined).pieces, []);
  t.equal(planText({ echo: true, chunks: 2 }, '{"a": 1}', 1).full, '{"a": 1}', 'echo ignores the cap');
});

t.test('prompt estimate counts message text only', async (t) => {
  t.equal(estimatePromptTokens({ messages: [{ role: 'user', content: 'x'.repeat(40) }] }), 10);
  t.equal(
    estimatePromptTokens({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'abcd' },
            { type: 'image_url', image_url: { url: 'data:' + 'A'.repeat(999) } },
          ],
        },
      ],
    }),
    1,
  );
  t.equal(estimatePromptTokens({ input: 'abcdefgh', sim: { text: 'ignored'.repeat(100) } }), 2);
  t.equal(estimatePromptTokens({}), 1);
});

t.test('routing by suffix', async (t) => {
  t.same(classify('/v1/chat/completions'), { kind: 'inference', endpoint: 'chat_completions', form: 'plain' });
  t.same(classify('/any/prefix/v1/responses'), { kind: 'inference', endpoint: 'responses', form: 'plain' });
  t.same(classify('/v1/images/edits'), { kind: 'inference', endpoint: 'images_edits', form: 'plain' });
  t.same(classify('/openai/deployments/gpt%2D4o/chat/completions'), {
    kind: 'inference',
    endpoint: 'chat_completions',
    form: 'azure',
    urlModel: 'gpt-4o',
  });
  t.same(classify('/v1/projects/p/locations/l/publishers/anthropic/models/claude-x%4020250101:streamRawPredict'), {
    kind: 'inference',
    endpoint: 'messages',
    form: 'vertex',
    urlModel: 'claude-x@20250101',
    urlStream: true,
  });
  t.same(classify('/v1/projects/p/endpoints/openapi/chat/completions'), {
    kind: 'inference',
    endpoint: 'chat_completions',
    form: 'plain',
  });
  t.same(classify('/_sim/requests'), { kind: 'control', name: 'requests' });
  t.equal(classify('/v1/embeddings'), null);
  t.equal(classify('/v1/chat/completions/'), null);
});

t.test('script book queues per model', async (t) => {
  const book = new ScriptBook();
  t.equal(book.take('m'), undefined);
  book.add('m', { status: 500 }, 1);
  book.add('m', { status: 502 });
  t.same(book.take('m'), { status: 500 });
  t.same(book.take('m'), { status: 502 });
  t.same(book.take('m'), { status: 502 });
  t.equal(book.take('other'), undefined);
  book.clear();
  t.equal(book.take('m'), undefined);
});

t.test('behaviour validation and selection', async (t) => {
  t.same(parseBehaviour({ status: 503, headers: { 'retry-after': '2' }, usage: { prompt: 1 } }, 'b'), {
    status: 503,
    headers: { 'retry-after': '2' },
    usage: { prompt: 1 },
  });
  t.throws(() => parseBehaviour({ status: 700 }, 'b'), /b\.status must be an HTTP status/);
  t.throws(() => parseBehaviour({ headers: { 'bad header': 'x' } }, 'b'), /b\.headers/);
  t.throws(() => parseBehaviour({ headers: { ok: 'a\r\nb' } }, 'b'), /b\.headers/);
  t.throws(() => parseBehaviour({ usage: { tokens: 1 } }, 'b'), /b\.usage/);
  t.throws(() => parseBehaviour([], 'b'), /b must be an object/);
  t.equal(selectBehaviour(undefined, undefined, undefined, 'm').source, 'default');
  t.same(selectBehaviour(undefined, { chunks: 1, by_model: { m: { chunks: 9 } } }, undefined, 'm'), {
    behaviour: { chunks: 9 },
    source: 'body',
  });
  t.same(selectBehaviour(undefined, { chunks: 1, by_model: { x: { chunks: 9 } } }, undefined, 'm'), {
    behaviour: { chunks: 1 },
    source: 'body',
  });
  t.same(selectBehaviour(undefined, undefined, '{"chunks":2}', 'm'), { behaviour: { chunks: 2 }, source: 'header' });
  t.throws(() => selectBehaviour(undefined, { by_model: [] }, undefined, 'm'), /sim\.by_model must be an object/);
});
