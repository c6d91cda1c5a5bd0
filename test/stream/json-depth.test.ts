// The nesting check agrees with the parsed value's real depth for any JSON, ignores brackets inside
// strings (escaped quotes and backslash runs included), and never recurses: 1,000,000 levels are
// judged as quickly as 10.
import t from 'tap';
import fc from 'fast-check';
import { nestsDeeperThan } from '../../src/stream/json-depth.ts';

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
    node: fc.oneof({ depthSize: 'small' }, fc.integer(), str, fc.constant(null), fc.array(tie('node'), { maxLength: 3 }), fc.dictionary(str, tie('node'), { maxKeys: 3 })),
  })).node;
  fc.assert(
    fc.property(value, fc.integer({ min: 0, max: 8 }), (v, max) => {
      const text = JSON.stringify(v);
      return nestsDeeperThan(Buffer.from(text), max) === depthOf(v) > max;
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 random values');
});

t.test('brackets inside strings do not count', async (t) => {
  t.equal(nestsDeeperThan(Buffer.from('{"a":"[[[[{{{{"}'), 1), false);
  t.equal(nestsDeeperThan(Buffer.from('{"a":"\\"[[[["}'), 1), false, 'after an escaped quote');
  t.equal(nestsDeeperThan(Buffer.from('{"a":"\\\\","b":[[1]]}'), 2), true, 'an escaped backslash ends before the quote');
  t.equal(nestsDeeperThan(Buffer.from('{"a":"\\\\\\"[[","b":[1]}'), 2), false, 'three backslashes then a quote: still inside');
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
