// The one-pass reader of a stream event's top-level members must agree with the general readers
// (json-key.ts, model-field.ts) on every event it calls plain: the same `error` and `usage` verdicts,
// the same model id, and byte for byte the same rewritten event. Checked on generated events —
// plain chunks, chunks with the shapes the general path exists for (escaped names, repeated keys,
// line breaks, other prefixes and endings) and chunks with a byte broken.
import fc from 'fast-check';
import t from 'tap';
import { plainDisagreement, plainReading } from '../../fuzz/lib/plain-event.ts';
import { TopMembers } from '../../src/stream/top-members.ts';

const SLUG = Buffer.from('"openai/gpt-4o"');

const blank = fc.constantFrom('', '', '', ' ', '\t', '  ', '\n', '\r\n');
const name = fc.constantFrom(
  '"model"',
  '"model"',
  '"usage"',
  '"usage"',
  '"error"',
  '"id"',
  '"choices"',
  '"object"',
  '"mod\\u0065l"',
  '"us\\u0061ge"',
  '"modeL"',
  '"models"',
  '"x\\"model"',
  '"usag"',
  '"e"',
);
const text = fc.oneof(
  fc.string({ maxLength: 12 }).map((s) => JSON.stringify(s)),
  fc.constantFrom(
    '"gpt-4o-2024-08-06"',
    '"\\"model\\":\\"x\\""',
    '"{\\"usage\\":null}"',
    '"}"',
    '"]["',
    '"a\\\\"',
    '"\\u00e9t\\u00e9"',
    '"é\u2028"',
    '"line\nbreak"',
  ),
);
const literal = fc.constantFrom('null', 'null', 'nullx', 'true', 'false', '0', '-1.5e3', '17');
const value: fc.Arbitrary<string> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    text,
    literal,
    tie('object') as fc.Arbitrary<string>,
    tie('array') as fc.Arbitrary<string>,
  ),
  object: fc
    .array(fc.tuple(blank, name, blank, blank, tie('value') as fc.Arbitrary<string>, blank), { maxLength: 4 })
    .map((ms) => `{${ms.map(([a, n, b, c, v, d]) => `${a}${n}${b}:${c}${v}${d}`).join(',')}}`),
  array: fc.array(tie('value') as fc.Arbitrary<string>, { maxLength: 3 }).map((vs) => `[${vs.join(',')}]`),
})).value;

const member = fc
  .tuple(blank, name, blank, blank, value, blank)
  .map(([a, n, b, c, v, d]) => `${a}${n}${b}:${c}${v}${d}`);
const plainName = fc.constantFrom(
  '"model"',
  '"usage"',
  '"usage"',
  '"error"',
  '"id"',
  '"choices"',
  '"object"',
  '"models"',
);
const plainish = fc
  .tuple(fc.constantFrom('', '', ' '), plainName, fc.constantFrom('', ' '), value)
  .map(([a, n, b, v]) => `${a}${n}:${b}${v}`);
const members = fc.array(fc.oneof({ weight: 8, arbitrary: plainish }, { weight: 1, arbitrary: member }), {
  maxLength: 3,
});
/** Most chunks name their model once, as providers do; some twice or not at all (from `name`). */
const modelMember = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(fc.constantFrom('', ' '), value).map(([b, v]) => [`"model":${b}${v}`]) },
  { weight: 1, arbitrary: fc.constant([]) },
);
const object = fc
  .tuple(members, modelMember, members)
  .map(([before, model, after]) => `{${[...before, ...model, ...after].join(',')}}`);
const prefix = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('data: ', 'data:') },
  { weight: 1, arbitrary: fc.constantFrom('data:  ', 'data:\t', 'event: x\ndata: ', ': ping\ndata: ') },
);
const suffix = fc.oneof(
  { weight: 6, arbitrary: fc.constant('\n\n') },
  { weight: 1, arbitrary: fc.constantFrom('\r\n\r\n', ' \n\n', '\n\r\n', '\n\n\n') },
);
/** A byte broken at a place: removed, or replaced by one that matters to the structure. */
const breakage = fc.oneof(
  { weight: 4, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.tuple(fc.nat(), fc.constantFrom('', '{', '}', '[', ']', '"', ',', ':', '\\', '\n', ' ')) },
);

const event = fc.tuple(prefix, object, suffix, breakage).map(([p, o, s, broken]) => {
  let ev = p + o + s;
  if (broken !== null) {
    const at = broken[0] % ev.length;
    ev = ev.slice(0, at) + broken[1] + ev.slice(at + 1);
  }
  return Buffer.from(ev);
});

t.test('the plain path agrees with the general readers on every plain event', async (t) => {
  let plain = 0;
  let edited = 0;
  let total = 0;
  fc.assert(
    fc.property(event, fc.boolean(), (ev, unasked) => {
      total++;
      const mine = plainReading(ev, SLUG, unasked);
      if (mine === null) return true;
      plain++;
      if (mine.edit !== null) edited++;
      const disagreement = plainDisagreement(ev, SLUG, unasked);
      if (disagreement !== null) throw new Error(`the one-pass reader ${disagreement}`);
      return true;
    }),
    { numRuns: 20_000, seed: 20261128 },
  );
  // The generator must reach the plain path often, or the agreement above says little.
  t.ok(plain > total / 4, `${plain} of ${total} events were plain`);
  t.ok(edited > total / 5, `${edited} of ${total} events were rewritten on the plain path`);
});

t.test('the plain shape', async (t) => {
  const plain = (s: string) => new TopMembers().scan(Buffer.from(s));
  t.ok(plain('data: {"model":"m","choices":[]}\n\n'));
  t.ok(plain('data:{"model":"m"}\n\n'));
  t.ok(plain('data: {}\n\n'), 'an empty object');
  t.ok(plain('data: { "a" : 1 ,\t"b":[{"c":"\\"}"}] }\n\n'), 'blanks and nested strings');
  t.notOk(plain('data:  {"model":"m"}\n\n'), 'two spaces after data:');
  t.notOk(plain('event: x\ndata: {"model":"m"}\n\n'), 'another line first');
  t.notOk(plain('data: {"model":"m"}\r\n\r\n'), 'CRLF line ends');
  t.notOk(plain('data: {"model":"m"} \n\n'), 'a blank after the object');
  t.notOk(plain('data: {"mod\\u0065l":"m"}\n\n'), 'an escaped name');
  t.notOk(plain('data: {"model":\n"m"}\n\n'), 'a line break between members');
  t.notOk(plain('data: {"model":"m"\n\n'), 'cut short');
  t.notOk(plain('data: {"model":"m",}\n\n'), 'a trailing comma');
  t.notOk(plain('data: {"a":1 "b":2}\n\n'), 'a missing comma');
});

t.test('what the plain path reads and writes', async (t) => {
  const read = (s: string, unasked = true) => plainReading(Buffer.from(s), SLUG, unasked);
  t.same(read('data: {"id":"c","model":"gpt-4o","choices":[],"usage":null}\n\n'), {
    error: false,
    edit: { usage: false, reported: 'gpt-4o', out: 'data: {"id":"c","model":"openai/gpt-4o","choices":[]}\n\n' },
  });
  // The first member goes with the comma after it; the blank after that comma stays.
  t.same(read('data: {"usage":null, "model":"gpt-4o"}\n\n')?.edit?.out, 'data: { "model":"openai/gpt-4o"}\n\n');
  t.same(
    read('data: {"model":"gpt-4o","usage":null}\n\n', false)?.edit?.out,
    'data: {"model":"openai/gpt-4o","usage":null}\n\n',
    'usage asked for: the null stays',
  );
  t.same(read('data: {"model":"gpt-4o","usage":{"total_tokens":3}}\n\n')?.edit?.usage, true);
  t.same(read('data: {"model":"gpt-4o","error":{"message":"x"}}\n\n')?.error, true);
  t.same(read('data: {"model":"gpt-4o","error":null}\n\n')?.error, false);
  t.same(read('data: {"model":"a","model":"b"}\n\n'), { error: false, edit: null }, 'a repeated model: general path');
  t.same(read('data: {"choices":[]}\n\n'), { error: false, edit: null }, 'no model: general path');
});
