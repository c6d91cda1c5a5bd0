// The incremental multipart reader: any form reads as the parts it was built from (names, file names,
// text values, sizes and where each value lies in the body), whatever bytes the values hold short of
// the delimiter itself; any split of the same bytes gives the same parts, end and error; arbitrary
// bytes never throw anything but MalformedForm; and the time is linear in the bytes, for any split.
// Bounded runs (about a second).
import t from 'tap';
import fc from 'fast-check';
import { type FormPart, FormReader, MalformedForm, TEXT_VALUE_MAX } from '../../src/protocols/form-parts.ts';
import { cpuMs, looksLinear } from '../helpers/linear-time.ts';
import { runs } from '../helpers/property-runs.ts';

interface Read {
  parts: FormPart[];
  starts: [string, string | null][];
  ended: boolean;
  error: string | null;
}

/** Reads `body` in the given chunks, recording everything the reader reports. */
function readForm(boundary: string, chunks: Buffer[]): Read {
  const r: Read = { parts: [], starts: [], ended: false, error: null };
  const reader = new FormReader(boundary, {
    partStart: (name, filename) => r.starts.push([name, filename]),
    part: (p) => r.parts.push(p),
    end: () => (r.ended = true),
  });
  try {
    for (const c of chunks) reader.push(c);
  } catch (err) {
    if (!(err instanceof MalformedForm)) throw err;
    r.error = err.message;
  }
  if (r.ended !== reader.ended) throw new Error('end reported and ended disagree');
  return r;
}

/** `body` cut at the given points (sorted, deduplicated, within the body). */
function split(body: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const c of at) {
    out.push(body.subarray(prev, c));
    prev = c;
  }
  out.push(body.subarray(prev));
  return out;
}

const boundaryArb = fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,40}$/);
const fieldName = fc.stringMatching(/^[A-Za-z0-9_[\] .-]{0,12}$/);

interface Spec {
  name: string;
  filename: string | null;
  value: Buffer;
}

/** Value bytes that hold every near miss of the delimiter (line breaks, dashes, a cut boundary). */
function valueArb(boundary: string): fc.Arbitrary<Buffer> {
  const pieces = fc.oneof(
    fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
    fc.constantFrom('\r\n', '\r', '\n', '--', '\r\n--', `--${boundary}`, `\r\n-${boundary}`).map((s) => Buffer.from(s)),
    fc.nat({ max: boundary.length - 1 }).map((k) => Buffer.from(`\r\n--${boundary.slice(0, k)}`)),
  );
  return fc
    .array(pieces, { maxLength: 6 })
    .map((p) => Buffer.concat(p))
    .filter(
      (v) => !v.includes(`\r\n--${boundary}`) && !Buffer.concat([v, Buffer.from('\r\n')]).includes(`\r\n--${boundary}`),
    );
}

const formArb = boundaryArb.chain((boundary) =>
  fc.record({
    boundary: fc.constant(boundary),
    // A preamble never holds the delimiter (the body reads as if a line break came before it).
    preamble: fc
      .constantFrom('', 'preamble text', 'x\r\n--not-it')
      .filter((p) => !`\r\n${p}`.includes(`\r\n--${boundary}`)),
    parts: fc.array(
      fc.record({ name: fieldName, filename: fc.option(fieldName, { nil: null }), value: valueArb(boundary) }),
      { maxLength: 5 },
    ),
    epilogue: fc.constantFrom('', '\r\n', `\r\n--${boundary}\r\nstray`),
    contentType: fc.boolean(),
  }),
);

/** The form's bytes and the parts a correct reader reports. */
function build(f: { boundary: string; preamble: string; parts: Spec[]; epilogue: string; contentType: boolean }): {
  body: Buffer;
  expected: Omit<FormPart, 'start' | 'end'>[];
  spans: [number, number][];
} {
  const chunks: Buffer[] = [];
  let size = 0;
  const push = (b: Buffer | string) => {
    const buf = typeof b === 'string' ? Buffer.from(b) : b;
    chunks.push(buf);
    size += buf.length;
  };
  push(f.preamble === '' ? '' : `${f.preamble}\r\n`);
  const spans: [number, number][] = [];
  for (const p of f.parts) {
    const disposition =
      p.filename === null ? `form-data; name="${p.name}"` : `form-data; name="${p.name}"; filename="${p.filename}"`;
    push(
      `--${f.boundary}\r\nContent-Disposition: ${disposition}\r\n${f.contentType ? 'Content-Type: application/octet-stream\r\n' : ''}\r\n`,
    );
    spans.push([size, size + p.value.length]);
    push(p.value);
    push('\r\n');
  }
  push(`--${f.boundary}--${f.epilogue}`);
  const expected = f.parts.map((p) => ({
    name: p.name,
    filename: p.filename,
    value: p.filename === null && p.value.length <= TEXT_VALUE_MAX ? p.value.toString('utf8') : null,
    size: p.value.length,
  }));
  return { body: Buffer.concat(chunks), expected, spans };
}

t.test('any form reads as the parts it was built from, for any split', async (t) => {
  fc.assert(
    fc.property(formArb, fc.array(fc.nat(), { maxLength: 12 }), (f, cuts) => {
      const { body, expected, spans } = build(f);
      const whole = readForm(f.boundary, [body]);
      const pieces = readForm(f.boundary, split(body, cuts));
      const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
      return (
        same(
          whole.parts.map(({ start, end, ...rest }) => rest),
          expected,
        ) &&
        // Where each value lies in the body.
        same(
          whole.parts.map((p) => [p.start, p.end]),
          spans,
        ) &&
        whole.ended &&
        whole.error === null &&
        // The same parts, end and error in pieces.
        same(pieces, whole)
      );
    }),
    { numRuns: runs(400) },
  );
  t.pass('400 random forms');
});

t.test('one byte at a time reads the same', async () => {
  fc.assert(
    fc.property(formArb, (f) => {
      const { body } = build(f);
      const bytes = [...body].map((b) => Buffer.from([b]));
      return JSON.stringify(readForm(f.boundary, bytes)) === JSON.stringify(readForm(f.boundary, [body]));
    }),
    { numRuns: runs(150) },
  );
});

t.test('a text value longer than the kept bound is reported with its size only', async (t) => {
  const big = Buffer.alloc(TEXT_VALUE_MAX + 1, 0x61);
  const body = Buffer.concat([
    Buffer.from('--b\r\nContent-Disposition: form-data; name="prompt"\r\n\r\n'),
    big,
    Buffer.from('\r\n--b--'),
  ]);
  const r = readForm('b', split(body, [10, 1000, 70_000]));
  t.equal(r.parts[0]?.value, null);
  t.equal(r.parts[0]?.size, big.length);
  const exact = Buffer.concat([
    Buffer.from('--b\r\nContent-Disposition: form-data; name=prompt\r\n\r\n'),
    big.subarray(1),
    Buffer.from('\r\n--b--'),
  ]);
  t.equal(
    readForm('b', [exact]).parts[0]?.value?.length,
    TEXT_VALUE_MAX,
    'at the bound: kept (an unquoted name read too)',
  );
});

t.test('the Content-Disposition parameters, wherever they are', async (t) => {
  const form = (disposition: string) =>
    Buffer.from(
      `--b\r\ncontent-type: text/plain; name="not-this"\r\nContent-Disposition: ${disposition}\r\n\r\nv\r\n--b--`,
    );
  const one = (d: string) => readForm('b', [form(d)]).parts[0];
  t.match(one('form-data; filename="a.png"; name="image"'), { name: 'image', filename: 'a.png' }, 'filename first');
  t.match(
    one('form-data; name="model"'),
    { name: 'model', filename: null },
    'another header naming a name is not read',
  );
  t.match(one('form-data; name="a\\"b"'), { name: 'a"b' }, 'an escaped quote');
  t.match(one('form-data;name=n'), { name: 'n' }, 'a plain token');
  t.match(
    readForm('b', [Buffer.from('--b\r\n\r\nv\r\n--b--')]).parts[0],
    { name: '', filename: null, value: 'v' },
    'a part without headers',
  );
});

t.test('malformed forms: MalformedForm, the same for any split', async (t) => {
  const cases: [string, string][] = [
    ['--b\r\nContent-Disposition: form-data; name="a"\r\n\r\nv\r\n--bX\r\n', 'not followed by a line break'],
    [`--b\r\n${'X-Long: y\r\n'.repeat(2000)}\r\nv\r\n--b--`, 'headers are longer than'],
    [`--b${' '.repeat(70)}\r\n\r\nv\r\n--b--`, 'not followed by a line break'],
  ];
  for (const [text, message] of cases) {
    const body = Buffer.from(text);
    const whole = readForm('b', [body]);
    t.match(whole.error, message, message);
    for (const cuts of [[1], [5, 6, 7], [body.length - 3], [16 * 1024], [16 * 1024 + 2]])
      t.strictSame(readForm('b', split(body, cuts)), whole, `${message}: cut at ${cuts.join(',')}`);
  }
  // A header block of exactly the bound is read, whatever the split.
  const header = `Content-Disposition: form-data; name="a"\r\nX-Pad: ${'p'.repeat(16 * 1024 - 50)}`;
  const exact = Buffer.from(`--b\r\n${header.padEnd(16 * 1024, 'p')}\r\n\r\nv\r\n--b--`);
  const whole = readForm('b', [exact]);
  t.equal(whole.error, null, 'a block of exactly the bound');
  for (let cut = 16 * 1024; cut < 16 * 1024 + 12; cut++)
    t.strictSame(readForm('b', split(exact, [cut])), whole, `cut at ${cut}`);
});

t.test('arbitrary bytes: only MalformedForm, the same for any split', async () => {
  const noise = fc.oneof(
    fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
    fc
      .array(
        fc.constantFrom(
          '--b',
          '\r\n',
          '--',
          '\r\n--b',
          'Content-Disposition: form-data; name="m"',
          '\r\n\r\n',
          'x',
          ' ',
        ),
        { maxLength: 40 },
      )
      .map((p) => Buffer.from(p.join(''))),
  );
  fc.assert(
    fc.property(noise, fc.array(fc.nat(), { maxLength: 8 }), (body, cuts) => {
      const whole = readForm('b', [body]);
      return JSON.stringify(readForm('b', split(body, cuts))) === JSON.stringify(whole);
    }),
    { numRuns: runs(3000) },
  );
  // Mutations of valid forms.
  fc.assert(
    fc.property(
      formArb,
      fc.nat(),
      fc.integer({ min: 0, max: 255 }),
      fc.array(fc.nat(), { maxLength: 6 }),
      (f, at, byte, cuts) => {
        const { body } = build(f);
        const i = at % body.length;
        const mutated = Buffer.concat([body.subarray(0, i), Buffer.from([byte]), body.subarray(i + 1)]);
        return (
          JSON.stringify(readForm(f.boundary, split(mutated, cuts))) === JSON.stringify(readForm(f.boundary, [mutated]))
        );
      },
    ),
    { numRuns: runs(500) },
  );
});

t.test('linear time: 16× the bytes cost about 16× the CPU, in large chunks or small', async (t) => {
  const boundary = '----WebKitFormBoundary7MA4YWxkTrZu0gW';
  const near = `\r\n--${boundary.slice(0, -1)}`;
  const shapes: [string, (n: number) => Buffer][] = [
    [
      'a file of near-delimiters',
      (n) =>
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a"\r\n\r\n${near.repeat(n / near.length)}\r\n--${boundary}--`,
        ),
    ],
    [
      'many small parts',
      (n) =>
        Buffer.from(
          `${`--${boundary}\r\nContent-Disposition: form-data; name="k"\r\n\r\nv\r\n`.repeat(n / 80)}--${boundary}--`,
        ),
    ],
    [
      'a long text value',
      (n) =>
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\n${'\r\n-'.repeat(n / 3)}\r\n--${boundary}--`,
        ),
    ],
  ];
  // A header block (bounded at 16 KiB) arriving a few bytes at a time is not copied again per piece.
  const headerBlock = (n: number) =>
    Buffer.from(
      `${`--${boundary}\r\nContent-Disposition: form-data; name="k"\r\nX-Pad: ${'p'.repeat(n)}\r\n\r\nv\r\n`.repeat(8)}--${boundary}--`,
    );
  const small = headerBlock(900);
  const large = headerBlock(16 * 900);
  const pieces = (body: Buffer) => Array.from({ length: body.length }, (_, i) => body.subarray(i, i + 1));
  const read = (chunks: Buffer[]) => () => readForm(boundary, chunks);
  cpuMs(read(pieces(small)));
  const ts = cpuMs(read(pieces(small)));
  const tl = cpuMs(read(pieces(large)));
  t.ok(
    looksLinear(ts, tl, 16),
    `header blocks one byte at a time: ${small.length} bytes in ${ts.toFixed(2)} ms, ${large.length} in ${tl.toFixed(2)} ms of CPU`,
  );
  for (const [label, make] of shapes) {
    for (const chunk of [64 * 1024, 512]) {
      const a = make(32 * 1024);
      const b = make(16 * 32 * 1024);
      const pieces = (body: Buffer) =>
        Array.from({ length: Math.ceil(body.length / chunk) }, (_, i) => body.subarray(i * chunk, (i + 1) * chunk));
      cpuMs(read(pieces(a)));
      const ta = cpuMs(read(pieces(a)));
      const tb = cpuMs(read(pieces(b)));
      t.ok(
        looksLinear(ta, tb, 16),
        `${label}, ${chunk}-byte chunks: ${a.length} bytes in ${ta.toFixed(2)} ms, ${b.length} in ${tb.toFixed(2)} ms of CPU`,
      );
    }
  }
});
