// The one forward scan that judges a JSON text before anything parses it. The nesting check agrees
// with the parsed value's real depth for any JSON, ignores brackets inside strings (escaped quotes and
// backslash runs included), and never recurses: 1,000,000 levels are judged as quickly as 10. The
// shape limits: on any JSON the verdict is the parsed value's (depth, members per object, elements
// per array, values in all, member-name bytes), whatever the limits; the scan never throws on any
// bytes; and its time is linear in the bytes whatever they hold. Bounded runs (a second or two).
import t from 'tap';
import fc from 'fast-check';
import { depthOnly, jsonShape, type JsonLimit, type JsonLimits, nestsDeeperThan } from '../../src/stream/json-depth.ts';
import { JSON_LIMITS } from '../../src/protocols/json-request.ts';
import { cpuMs, looksLinear } from '../helpers/linear-time.ts';
import { runs } from '../helpers/property-runs.ts';

/** Depth of a parsed value without recursion (objects and arrays count one level each). */
function depthOf(value: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop() as [unknown, number];
    if (typeof v !== 'object' || v === null) continue;
    const here = d + 1;
    if (here > max) max = here;
    for (const child of Object.values(v)) stack.push([child, here]);
  }
  return max;
}

t.test('agrees with the parsed depth for any JSON value', async (t) => {
  const tricky = fc.constantFrom('[', ']', '{', '}', '"', '\\', '\\"', '\\\\', 'é', '\n');
  const str = fc.array(fc.oneof(fc.string(), tricky), { maxLength: 6 }).map((parts) => parts.join(''));
  const value = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      fc.integer(),
      str,
      fc.constant(null),
      fc.array(tie('node'), { maxLength: 3 }),
      fc.dictionary(str, tie('node'), { maxKeys: 3 }),
    ),
  })).node;
  fc.assert(
    fc.property(value, fc.integer({ min: 0, max: 8 }), (v, max) => {
      const text = JSON.stringify(v);
      return nestsDeeperThan(Buffer.from(text), max) === depthOf(v) > max;
    }),
    { numRuns: runs(2000) },
  );
  t.pass('2000 random values');
});

t.test('brackets inside strings do not count', async (t) => {
  t.equal(nestsDeeperThan(Buffer.from('{"a":"[[[[{{{{"}'), 1), false);
  t.equal(nestsDeeperThan(Buffer.from('{"a":"\\"[[[["}'), 1), false, 'after an escaped quote');
  t.equal(
    nestsDeeperThan(Buffer.from('{"a":"\\\\","b":[[1]]}'), 2),
    true,
    'an escaped backslash ends before the quote',
  );
  t.equal(
    nestsDeeperThan(Buffer.from('{"a":"\\\\\\"[[","b":[1]}'), 2),
    false,
    'three backslashes then a quote: still inside',
  );
});

t.test('the limit is inclusive and malformed text is left to the parser', async (t) => {
  t.equal(nestsDeeperThan(Buffer.from('[[[]]]'), 3), false);
  t.equal(nestsDeeperThan(Buffer.from('[[[]]]'), 2), true);
  t.equal(nestsDeeperThan(Buffer.from('{"a":"[[[['), 1), false, 'unterminated string');
  t.equal(nestsDeeperThan(Buffer.from(''), 0), false);
});

t.test('a million levels: one linear pass, no recursion', async (t) => {
  const deep = Buffer.from('['.repeat(1_000_000) + ']'.repeat(1_000_000));
  const start = performance.now();
  t.equal(nestsDeeperThan(deep, 128), true);
  t.equal(nestsDeeperThan(Buffer.from('{"x":' + '"a",'.repeat(250_000) + '"b"}'), 128), false);
  t.ok(performance.now() - start < 1000, 'well under a second');
});

type Stats = JsonLimits;

/** The shape of a parsed value, walked without recursion (the text is JSON.stringify's, so names are
 *  sent as JSON.stringify escapes them and no key is repeated). */
function statsOf(value: unknown): Stats {
  const s: Stats = { depth: 0, members: 0, elements: 0, values: 0, nameBytes: 0 };
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop() as [unknown, number];
    if (typeof v !== 'object' || v === null) continue;
    s.depth = Math.max(s.depth, d + 1);
    if (Array.isArray(v)) {
      s.elements = Math.max(s.elements, v.length);
      s.values += v.length;
      for (const c of v) stack.push([c, d + 1]);
    } else {
      const keys = Object.keys(v);
      s.members = Math.max(s.members, keys.length);
      s.values += keys.length;
      for (const k of keys) {
        s.nameBytes = Math.max(s.nameBytes, Buffer.byteLength(JSON.stringify(k)) - 2);
        stack.push([(v as Record<string, unknown>)[k], d + 1]);
      }
    }
  }
  return s;
}

const LIMIT_NAMES: JsonLimit[] = ['depth', 'members', 'elements', 'values', 'nameBytes'];

const trickyText = fc.constantFrom(
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
  '\u2028',
  '\u0000',
);
const anyText = fc.array(fc.oneof(fc.string({ maxLength: 6 }), trickyText), { maxLength: 4 }).map((p) => p.join(''));
const anyValue = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    anyText,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('node'), { maxLength: 5 }),
    fc.dictionary(anyText, tie('node'), { maxKeys: 5 }),
  ),
})).node;
const limits = fc.record({
  depth: fc.integer({ min: 0, max: 6 }),
  members: fc.integer({ min: 0, max: 5 }),
  elements: fc.integer({ min: 0, max: 5 }),
  values: fc.integer({ min: 0, max: 30 }),
  nameBytes: fc.integer({ min: 0, max: 12 }),
});

t.test("on any JSON the verdict is the parsed value's, whatever the limits and spacing", async (t) => {
  fc.assert(
    fc.property(anyValue, limits, fc.constantFrom(0, 2), (v, lim, indent) => {
      const raw = Buffer.from(JSON.stringify(v, null, indent));
      const stats = statsOf(v);
      const over = LIMIT_NAMES.filter((k) => stats[k] > lim[k]);
      const { exceeded, tooDeep } = jsonShape(raw, lim);
      if (tooDeep !== (exceeded === 'depth')) return false;
      // Within every limit ⇔ nothing reported; otherwise the limit reported is one the text passes.
      return over.length === 0 ? exceeded === null : exceeded !== null && over.includes(exceeded);
    }),
    { numRuns: runs(3000) },
  );
  t.pass('3000 random values');
});

t.test('the member spans under every limit are those of the depth scan alone', async (t) => {
  fc.assert(
    fc.property(fc.dictionary(anyText, anyValue, { maxKeys: 6 }), (v) => {
      const raw = Buffer.from(JSON.stringify(v));
      const all = jsonShape(raw, JSON_LIMITS).members;
      const depth = jsonShape(raw, depthOnly(JSON_LIMITS.depth)).members;
      if (all === null || depth === null) return false;
      return JSON.stringify([...all]) === JSON.stringify([...depth]) && all.size === Object.keys(v).length;
    }),
    { numRuns: runs(500) },
  );
  t.equal(jsonShape(Buffer.from('{"a":1}'), JSON_LIMITS, false).members, null, 'not asked for');
  t.equal(jsonShape(Buffer.from('{"a":1}}'), JSON_LIMITS).members, null, 'a stray closing bracket: not one object');
  t.equal(
    jsonShape(Buffer.from('{"a":[1,2,3]}'), { ...JSON_LIMITS, elements: 2 }).members,
    null,
    'stopped at a limit: no spans',
  );
});

t.test('any bytes: never throws, always a verdict', async () => {
  const jsonish = fc
    .array(
      fc.oneof(
        fc.constantFrom('{', '}', '[', ']', '"', '\\', ':', ',', ' ', '\n', 'a', '1', '-', 'é', 'true', '"k":'),
        fc.string({ maxLength: 3 }),
      ),
      { maxLength: 60 },
    )
    .map((p) => Buffer.from(p.join('')));
  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
    jsonish,
  );
  fc.assert(
    fc.property(bytes, limits, fc.boolean(), (buf, lim, want) => {
      const r = jsonShape(buf, lim, want);
      return (
        (r.exceeded === null || LIMIT_NAMES.includes(r.exceeded)) && (r.members === null || r.members instanceof Map)
      );
    }),
    { numRuns: runs(5000) },
  );
  // Mutations of valid JSON: a byte removed, inserted or replaced anywhere.
  fc.assert(
    fc.property(
      anyValue,
      fc.nat(),
      fc.integer({ min: 0, max: 255 }),
      fc.constantFrom('drop', 'insert', 'replace'),
      (v, at, byte, how) => {
        const raw = Buffer.from(JSON.stringify(v));
        const i = raw.length === 0 ? 0 : at % raw.length;
        const b = Buffer.from([byte]);
        const mutated =
          how === 'drop'
            ? Buffer.concat([raw.subarray(0, i), raw.subarray(i + 1)])
            : Buffer.concat([raw.subarray(0, i), b, raw.subarray(how === 'insert' ? i : i + 1)]);
        jsonShape(mutated, JSON_LIMITS);
        jsonShape(mutated, 3);
        return true;
      },
    ),
    { numRuns: runs(3000) },
  );
});

t.test('linear time: 16× the bytes cost about 16× the CPU, for the shapes that stress each step', async (t) => {
  const unbounded: JsonLimits = { ...depthOnly(JSON_LIMITS.depth) };
  const shapes: [string, (n: number) => string][] = [
    ['one string of backslash runs', (n) => `["${'\\\\'.repeat(n / 2)}"]`],
    ['escaped quotes', (n) => `["${'\\"'.repeat(n / 2)}"]`],
    ['many short strings', (n) => `[${'"a",'.repeat(n / 4)}"b"]`],
    ['many numbers', (n) => `[${'12,'.repeat(n / 3)}1]`],
    ['top-level members', (n) => `{${'"k":0,'.repeat(n / 6)}"z":1}`],
    ['long member names', (n) => `{${`"${'n'.repeat(1000)}":0,`.repeat(n / 1006)}"z":1}`],
    ['nesting at the bound', (n) => `[${`${'['.repeat(100)}${']'.repeat(100)},`.repeat(n / 201)}0]`],
    ['an unterminated string', (n) => `{"a":"${'x\\"'.repeat(n / 3)}`],
  ];
  const small = 64 * 1024;
  for (const [label, make] of shapes) {
    const a = Buffer.from(make(small));
    const b = Buffer.from(make(16 * small));
    for (const [which, lim] of [
      ['production limits', JSON_LIMITS],
      ['depth only', unbounded],
    ] as const) {
      cpuMs(() => jsonShape(a, lim)); // warm
      const ta = cpuMs(() => jsonShape(a, lim));
      const tb = cpuMs(() => jsonShape(b, lim));
      t.ok(
        looksLinear(ta, tb, 16),
        `${label} (${which}): ${(a.length / 1024) | 0} KiB in ${ta.toFixed(2)} ms, ${(b.length / 1024) | 0} KiB in ${tb.toFixed(2)} ms of CPU`,
      );
    }
  }
});
