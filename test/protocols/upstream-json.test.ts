// The upstream body written from the client's bytes: the member spans one scan finds agree with the
// parser for any object (any spacing, escapes, duplicate keys), and the spliced body is the document
// JSON.stringify writes for the rewritten object — byte for byte when the client sent compact JSON,
// with the client's own bytes for every untouched member otherwise (bodies from 1 KB on; smaller
// ones are serialised whole, which is cheaper there).
import t from 'tap';
import fc from 'fast-check';
import { jsonShape, nestsDeeperThan } from '../../src/stream/json-depth.ts';
import { spliced, upstreamJson } from '../../src/protocols/upstream-json.ts';
import type { JsonObject } from '../../src/protocols/types.ts';

const tricky = fc.constantFrom(
  '[',
  ']',
  '{',
  '}',
  '"',
  '\\',
  '\\"',
  '\\\\',
  'é',
  '\n',
  ':',
  ',',
  '__proto__',
  '\u2028',
);
const str = fc.array(fc.oneof(fc.string(), tricky), { maxLength: 4 }).map((parts) => parts.join(''));
const value = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    str,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('node'), { maxLength: 3 }),
    fc.dictionary(str, tie('node'), { maxKeys: 3 }),
  ),
})).node;
const object = fc.dictionary(str, value, { maxKeys: 6 });
/** JSON text of `v` with optional spacing (JSON.stringify's indentation, or none). */
const spaced = (v: unknown, indent: number) =>
  Buffer.from(indent === 0 ? JSON.stringify(v) : JSON.stringify(v, null, indent));

t.test('member spans agree with the parser for any object and any spacing', async (t) => {
  fc.assert(
    fc.property(object, fc.constantFrom(0, 1, 2, '\t'), (v, indent) => {
      const raw = typeof indent === 'string' ? Buffer.from(JSON.stringify(v, null, indent)) : spaced(v, indent);
      const parsed = JSON.parse(raw.toString('utf8')) as JsonObject;
      const { tooDeep, members } = jsonShape(raw, 1000);
      if (tooDeep || members === null) return false;
      if (members.size !== Object.keys(parsed).length) return false;
      for (const k of Object.keys(parsed)) {
        const span = members.get(k);
        if (!span) return false;
        t.strictSame(JSON.parse(raw.toString('utf8', span[0], span[1])), parsed[k]);
      }
      return true;
    }),
    { numRuns: 500 },
  );
});

t.test("the depth verdict is nestsDeeperThan's for any JSON text, object or not", async (t) => {
  fc.assert(
    fc.property(value, fc.integer({ min: 0, max: 6 }), (v, max) => {
      const raw = Buffer.from(JSON.stringify(v));
      return jsonShape(raw, max).tooDeep === nestsDeeperThan(raw, max);
    }),
    { numRuns: 1000 },
  );
  t.equal(jsonShape(Buffer.from('[1,[2]]'), 5).members, null, 'an array has no members');
  t.equal(jsonShape(Buffer.from('[[[[1]]]]'), 2).tooDeep, true, 'an array too deep is still too deep');
  t.equal(jsonShape(Buffer.from('{"a":1} {"b":2}'), 5).members, null, 'two documents');
  t.equal(jsonShape(Buffer.from('{"a" "b":1}'), 5).members, null, 'a key without its colon');
  t.equal(jsonShape(Buffer.from('{"a":1'), 5).members, null, 'cut off');
});

t.test('a duplicated key keeps its last value, as JSON.parse does', async (t) => {
  const raw = Buffer.from('{"a":1,"b":[1],"a":{"x":2}}');
  const { members } = jsonShape(raw, 10);
  const a = members?.get('a');
  t.ok(a);
  if (a) t.equal(raw.toString('utf8', a[0], a[1]), '{"x":2}');
  t.equal(members?.size, 2);
});

t.test('escaped keys are decoded as the parser decodes them', async (t) => {
  const raw = Buffer.from('{"mo\\u0064el":"x","a\\"b":1}');
  const { members } = jsonShape(raw, 10);
  t.strictSame([...(members?.keys() ?? [])], ['model', 'a"b']);
});

/** A random rewrite of `v`: some members replaced, some removed, some added (prepare/patchBody do these). */
const rewrite = fc.record({
  replace: fc.array(fc.tuple(fc.nat(), value), { maxLength: 3 }),
  remove: fc.array(fc.nat(), { maxLength: 2 }),
  add: fc.dictionary(str, value, { maxKeys: 2 }),
});

function applyRewrite(
  original: JsonObject,
  r: { replace: [number, unknown][]; remove: number[]; add: Record<string, unknown> },
): JsonObject {
  const body: JsonObject = { ...original };
  const keys = Object.keys(original);
  if (keys.length > 0) {
    for (const [i, v] of r.replace) body[keys[i % keys.length] as string] = v;
    for (const i of r.remove) delete body[keys[i % keys.length] as string];
  }
  for (const [k, v] of Object.entries(r.add)) body[k] = v;
  return body;
}

t.test('the spliced body is JSON.stringify of the rewritten object, byte for byte, from compact JSON', async (t) => {
  fc.assert(
    fc.property(object, rewrite, (v, r) => {
      const raw = Buffer.from(JSON.stringify(v));
      const original = JSON.parse(raw.toString('utf8')) as JsonObject;
      const members = jsonShape(raw, 1000).members;
      if (members === null) return false;
      const body = applyRewrite(original, r);
      const out = spliced(body, { raw, members, original });
      return Buffer.from(out).toString('utf8') === JSON.stringify(body);
    }),
    { numRuns: 1000 },
  );
  t.pass('1000 random rewrites');
});

t.test('from spaced JSON: the same document, untouched members as the client wrote them', async (t) => {
  fc.assert(
    fc.property(object, rewrite, (v, r) => {
      const raw = spaced(v, 2);
      const original = JSON.parse(raw.toString('utf8')) as JsonObject;
      const members = jsonShape(raw, 1000).members;
      if (members === null) return false;
      const body = applyRewrite(original, r);
      const text = Buffer.from(spliced(body, { raw, members, original })).toString('utf8');
      const parsed = JSON.parse(text) as JsonObject;
      t.strictSame(
        Object.keys(parsed),
        Object.keys(JSON.parse(JSON.stringify(body)) as JsonObject),
        'same members in the same order',
      );
      t.strictSame(parsed, JSON.parse(JSON.stringify(body)));
      return true;
    }),
    { numRuns: 200 },
  );
  const raw = Buffer.from(
    '{ "model" : "openai/gpt-4o",\n  "messages": [ {"role": "user", "content": "caf\\u00e9"} ],\n  "n": 1.50, "big": 12345678901234567890 }',
  );
  const original = JSON.parse(raw.toString('utf8')) as JsonObject;
  const members = jsonShape(raw, 10).members;
  t.ok(members);
  if (!members) return;
  const out = spliced(
    { ...original, model: 'gpt-4o', stream_options: { include_usage: true } },
    { raw, members, original },
  );
  t.equal(
    Buffer.from(out).toString('utf8'),
    '{"model":"gpt-4o","messages":[ {"role": "user", "content": "caf\\u00e9"} ],"n":1.50,"big":12345678901234567890,"stream_options":{"include_usage":true}}',
    "the client's bytes for untouched members (escapes, number forms, digits beyond a double)",
  );
});

t.test('members without a JSON form are left out; no source means JSON.stringify', async (t) => {
  const raw = Buffer.from('{"a":1,"b":2}');
  const original = JSON.parse(raw.toString('utf8')) as JsonObject;
  const members = jsonShape(raw, 10).members;
  if (!members) return t.fail('no members');
  t.equal(
    Buffer.from(spliced({ ...original, b: undefined, c: () => 1 }, { raw, members, original })).toString('utf8'),
    '{"a":1}',
  );
  t.equal(Buffer.from(spliced({ b: undefined }, { raw, members, original })).toString('utf8'), '{}');
  t.equal(upstreamJson({ x: [1, 2] }, null), '{"x":[1,2]}');
});

t.test('a small body is serialised whole; from 1 KB on it is spliced', async (t) => {
  const small = Buffer.from('{ "model" : "m", "n" : 1.50 }');
  const smallOriginal = JSON.parse(small.toString('utf8')) as JsonObject;
  const smallMembers = jsonShape(small, 10).members;
  if (!smallMembers) return t.fail('no members');
  t.equal(
    upstreamJson({ ...smallOriginal, model: 'up' }, { raw: small, members: smallMembers, original: smallOriginal }),
    '{"model":"up","n":1.5}',
  );
  const big = Buffer.from(`{ "model" : "m", "pad": "${'x'.repeat(1100)}", "n" : 1.50 }`);
  const bigOriginal = JSON.parse(big.toString('utf8')) as JsonObject;
  const bigMembers = jsonShape(big, 10).members;
  if (!bigMembers) return t.fail('no members');
  const out = upstreamJson({ ...bigOriginal, model: 'up' }, { raw: big, members: bigMembers, original: bigOriginal });
  t.ok(Buffer.isBuffer(out));
  t.equal(Buffer.from(out).toString('utf8'), `{"model":"up","pad":"${'x'.repeat(1100)}","n":1.50}`);
});

t.test('a member named __proto__ is a member like any other', async (t) => {
  const raw = Buffer.from('{"__proto__":{"x":1},"model":"m"}');
  const original = JSON.parse(raw.toString('utf8')) as JsonObject;
  const members = jsonShape(raw, 10).members;
  if (!members) return t.fail('no members');
  const body: JsonObject = { ...original, model: 'up' };
  t.equal(Buffer.from(spliced(body, { raw, members, original })).toString('utf8'), JSON.stringify(body));
  t.equal(JSON.stringify(body), '{"__proto__":{"x":1},"model":"up"}');
});
