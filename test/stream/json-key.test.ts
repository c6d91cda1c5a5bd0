// The key scanner finds `model` only where it is a key at the asked depth, never inside strings.
import t from 'tap';
import {
  findStringValue,
  hasNonNullKey,
  memberValues,
  readString,
  replaceSpan,
  withoutNullMember,
} from '../../src/stream/json-key.ts';

const rewrite = (json: string, depth: number, to = 'v/slug') => {
  const buf = Buffer.from(json);
  const span = findStringValue(buf, 'model', depth);
  return span ? replaceSpan(buf, span, Buffer.from(JSON.stringify(to))).toString() : null;
};

t.test('top-level model in a chat chunk', async (t) => {
  const chunk =
    '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"delta":{"content":"\\"model\\": \\"x\\""}}]}';
  const out = rewrite(chunk, 1);
  t.equal(out, chunk.replace('"model":"gpt-4o"', '"model":"v/slug"'));
  t.same(JSON.parse(out as string).choices[0].delta.content, '"model": "x"');
});

t.test('nested model at depth 2 only', async (t) => {
  const ev = '{"type":"response.created","response":{"id":"r","metadata":{"model":"keep"},"model":"gpt-4o"}}';
  const out = JSON.parse(rewrite(ev, 2) as string);
  t.equal(out.response.model, 'v/slug');
  t.equal(out.response.metadata.model, 'keep');
});

t.test('string values equal to "model" and escaped quotes are not keys', async (t) => {
  t.equal(
    rewrite('{"type":"model","x":"\\"model\\":\\"no\\"","model":"m"}', 1),
    '{"type":"model","x":"\\"model\\":\\"no\\"","model":"v/slug"}',
  );
  t.equal(rewrite('{"a":"\\"model","model" : "m"}', 1), '{"a":"\\"model","model" : "v/slug"}');
  t.equal(rewrite('{"a":["model"],"b":{"model":"deep"}}', 1), null);
  t.equal(rewrite('{"model":null}', 1), null);
});

t.test('readString decodes escapes', async (t) => {
  const buf = Buffer.from('{"model":"a\\u00e9b"}');
  const span = findStringValue(buf, 'model', 1);
  t.ok(span);
  t.equal(readString(buf, span!), 'aéb');
});

t.test('non-null key detection', async (t) => {
  t.notOk(hasNonNullKey(Buffer.from('{"usage":null,"x":1}'), 'usage', 1));
  t.ok(hasNonNullKey(Buffer.from('{"choices":[],"usage": {"prompt_tokens":1}}'), 'usage', 1));
  t.notOk(hasNonNullKey(Buffer.from('{"a":{"usage":{"x":1}}}'), 'usage', 1));
});

t.test('memberValues: every member of one object with a name, however spelled, nothing nested', async (t) => {
  const spans = (json: string, key = 'model') => {
    const buf = Buffer.from(json);
    return memberValues(buf, json.indexOf('{'), key)?.map((s) => buf.toString('utf8', s.start, s.end)) ?? null;
  };
  t.same(spans('{"model":"a","x":{"model":"deep"},"model" : "b"}'), ['"a"', '"b"'], 'twice, the nested one left out');
  t.same(
    spans('{"mod\\u0065l":"a","\\u006dodel":null,"m\\u006fdel":{"k":1}}'),
    ['"a"', 'null', '{"k":1}'],
    'escaped spellings',
  );
  t.same(spans('{"models":"a","mode":"b","x":"\\"model\\":\\"c\\""}'), [], 'other names, and the name inside a string');
  t.same(spans('{}'), []);
  t.same(spans(' { "model" : 1 , "y" : [1,{"model":2}] } '), ['1']);
  t.equal(spans('{"model":"a"'), null, 'cut short');
  t.equal(spans('{"model" "a"}'), null, 'not well formed');
  t.equal(spans('data: {"a":1,\ndata: "model":"x"}'), null, 'JSON over two data lines cannot be walked');
});

t.test('withoutNullMember drops a null member at the asked depth, with one comma, and nothing else', async (t) => {
  const drop = (json: string) => withoutNullMember(Buffer.from(json), 'usage', 1).toString();
  t.equal(drop('{"id":"c","choices":[],"usage":null}'), '{"id":"c","choices":[]}', 'last member');
  t.equal(drop('{"usage":null,"id":"c"}'), '{"id":"c"}', 'first member');
  t.equal(drop('{ "usage" : null }'), '{  }', 'the only member');
  t.equal(drop('{"a":1, "usage" : null ,"b":2}'), '{"a":1 ,"b":2}', 'spaces around');
  t.equal(
    drop('data: {"a":1,"usage":null,"obfuscation":"x"}\n\n'),
    'data: {"a":1,"obfuscation":"x"}\n\n',
    'an SSE event',
  );
  t.equal(
    drop('{"usage":null,"b":{"usage":null},"usage":null}'),
    '{"b":{"usage":null}}',
    'every null one at depth 1, none deeper',
  );
  for (const keep of [
    '{"usage":{"prompt_tokens":1}}',
    '{"a":"\\"usage\\":null"}',
    '{"a":["usage",null]}',
    '{"usage":0}',
    '{"x":1}',
  ]) {
    const buf = Buffer.from(keep);
    t.equal(withoutNullMember(buf, 'usage', 1), buf, `${keep}: untouched, the same buffer`);
  }
  for (const json of ['{"usage":null,"a":[1,{"usage":null}],"z":"usage"}', '{"a":null,"usage":null}'])
    t.same(
      JSON.parse(drop(json)),
      Object.fromEntries(Object.entries(JSON.parse(json) as Record<string, unknown>).filter(([k]) => k !== 'usage')),
      json,
    );
});
