// isCompleteJson says exactly what JSON.parse says of the same bytes: true for one complete value,
// false for a body cut anywhere, a syntax error anywhere, or bytes after the value.
import t from 'tap';
import fc from 'fast-check';
import { isCompleteJson } from '../../src/stream/json-complete.ts';

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

t.test('agrees with JSON.parse on values, their cuts and their mutations', async (t) => {
  const mutated = fc
    .tuple(
      fc.json(),
      fc.nat(),
      fc.constantFrom('', '}', ']', '"', ',', ':', '\\', ' ', '0', '-', 'e', '.', 'x', '\u0001', 'u', 'null'),
    )
    .map(([json, at, insert]) => {
      const cut = at % (json.length + 1);
      return at % 3 === 0 ? json.slice(0, cut) : json.slice(0, cut) + insert + json.slice(cut + (at % 2));
    });
  fc.assert(
    fc.property(
      fc.oneof(fc.json(), mutated, fc.string()),
      (text) => isCompleteJson(Buffer.from(text)) === parses(text),
    ),
    { numRuns: 5000 },
  );
  t.pass('5000 cases agree');
});

t.test('the shapes the grammar names', async (t) => {
  const yes = [
    '{}',
    '[]',
    ' {"a":[1,2,{"b":null}],"c":"\\u00e9\\n"} ',
    '0',
    '-0.5e+3',
    '"x"',
    'true',
    '[[[[]]]]',
    '{"a":{}}',
  ];
  const no = [
    '',
    ' ',
    '{',
    '{"a":1',
    '{"a":1,}',
    '[1,]',
    '{"a" 1}',
    '{a:1}',
    '01',
    '1.',
    '.5',
    '1e',
    '"\\x"',
    '"\\u12g4"',
    '"a',
    'tru',
    'nul',
    '{}{}',
    '{} x',
    '[}',
    '{]',
    '"\t"',
  ];
  for (const s of yes) t.ok(isCompleteJson(Buffer.from(s)), s);
  for (const s of no) t.notOk(isCompleteJson(Buffer.from(s)), JSON.stringify(s));
  const deep = '['.repeat(100_000) + ']'.repeat(100_000);
  t.ok(isCompleteJson(Buffer.from(deep)), 'deep nesting, no recursion');
  t.notOk(isCompleteJson(Buffer.from(deep.slice(0, -1))), 'cut');
});

t.test('an image answer cut before its closing brace is not complete', async (t) => {
  const body = JSON.stringify({
    created: 1,
    data: [{ b64_json: Buffer.alloc(300_000, 7).toString('base64') }],
    usage: { total_tokens: 3 },
  });
  t.ok(isCompleteJson(Buffer.from(body)));
  t.notOk(isCompleteJson(Buffer.from(body.slice(0, -1))));
  t.notOk(isCompleteJson(Buffer.from(body.slice(0, body.indexOf('"usage"') - 1))));
});
