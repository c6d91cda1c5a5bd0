// The streamed image-edit upload: for any split of the same form, the body an attempt sends is the
// client's bytes with the first model value replaced, and the held prefix ends where the rules say
// (model read, then the text fields up to the first file part). A rule that refuses a part fails the
// upload before the chunk completing that part is forwarded, whatever the split; arbitrary bytes end
// in a GatewayError or a body, never anything else and never a hang. Bounded runs (about a second).
import t from 'tap';
import fc from 'fast-check';
import { Readable } from 'node:stream';
import { GatewayError } from '../../src/errors.ts';
import type { FormListener } from '../../src/protocols/form-parts.ts';
import { MultipartUpload } from '../../src/protocols/multipart-upload.ts';
import { cpuMsAsync, looksLinear } from '../helpers/linear-time.ts';
import { runs } from '../helpers/property-runs.ts';

const B = 'XyZ-boundary';

function textPart(name: string, value: string): string {
  return `--${B}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
}
function filePart(name: string, value: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="${name}"; filename="f.png"\r\n\r\n`),
    value,
    Buffer.from('\r\n'),
  ]);
}

/** `body` cut at the given points. */
function split(body: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const c of at) {
    if (c > prev) out.push(body.subarray(prev, c));
    prev = Math.max(prev, c);
  }
  if (prev < body.length) out.push(body.subarray(prev));
  return out;
}

/** Everything an attempt's body yields, and the error that ended it (if any). */
async function drain(r: Readable): Promise<{ bytes: Buffer; error: unknown }> {
  const got: Buffer[] = [];
  try {
    for await (const c of r) got.push(c as Buffer);
    return { bytes: Buffer.concat(got), error: null };
  } catch (err) {
    return { bytes: Buffer.concat(got), error: err };
  }
}

const NO_RULES: FormListener = { part: () => undefined };

const fieldArb = fc.oneof(
  fc.record({
    kind: fc.constant('text' as const),
    name: fc.constantFrom('prompt', 'n', 'size', 'user', 'quality'),
    value: fc.string({ maxLength: 20 }).filter((s) => !s.includes('\r\n--')),
  }),
  fc.record({
    kind: fc.constant('file' as const),
    name: fc.constantFrom('image', 'image[]', 'mask'),
    value: fc.uint8Array({ maxLength: 3000 }).map((a) => Buffer.from(a)),
  }),
);
const formArb = fc.record({
  before: fc.array(fieldArb, { maxLength: 3 }),
  after: fc.array(fieldArb, { maxLength: 4 }),
  model: fc.constantFrom('acme/painter', 'x', 'a-much-longer/model-name-v2'),
});

function formBody(f: {
  before: { kind: string; name: string; value: string | Buffer }[];
  after: { kind: string; name: string; value: string | Buffer }[];
  model: string;
}): Buffer {
  const part = (p: { kind: string; name: string; value: string | Buffer }) =>
    p.kind === 'text' ? Buffer.from(textPart(p.name, p.value as string)) : filePart(p.name, p.value as Buffer);
  return Buffer.concat([
    ...f.before.map(part),
    Buffer.from(textPart('model', f.model)),
    ...f.after.map(part),
    Buffer.from(`--${B}--\r\n`),
  ]);
}

t.test('any split: the model swapped, every other byte as the client sent it', async () => {
  await fc.assert(
    fc.asyncProperty(
      formArb,
      fc.array(fc.nat(), { maxLength: 10 }),
      fc.constantFrom('painter-v1', 'p'),
      async (f, cuts, upstreamModel) => {
        const body = formBody(f);
        const upload = new MultipartUpload(Readable.from(split(body, cuts)), B, 1 << 20, NO_RULES);
        if (!(await upload.readPrefix())) return false;
        if (upload.model !== f.model || !upload.replayable) return false;
        const sent = await drain(upload.body(upstreamModel));
        const expected = formBody({ ...f, model: upstreamModel });
        return sent.error === null && sent.bytes.equals(expected);
      },
    ),
    { numRuns: runs(300) },
  );
});

t.test('the held prefix: up to model, then on through text fields to the first file part', async (t) => {
  const file = filePart('image', Buffer.alloc(5000, 1));
  const body = Buffer.concat([
    Buffer.from(textPart('prompt', 'p') + textPart('model', 'm') + textPart('n', '2')),
    file,
    Buffer.from(textPart('size', 's') + `--${B}--`),
  ]);
  const seen: string[] = [];
  const upload = new MultipartUpload(
    Readable.from(
      split(
        body,
        Array.from({ length: 40 }, (_, i) => i * 97),
      ),
    ),
    B,
    1 << 20,
    { part: (p) => seen.push(p.name) },
  );
  t.equal(await upload.readPrefix(), true);
  t.strictSame(seen, ['prompt', 'model', 'n'], 'read before the hold: the fields up to the file');
  t.equal(upload.formComplete, false);
  t.equal(upload.replayable, true);
  await drain(upload.body('M'));
  t.strictSame(seen, ['prompt', 'model', 'n', 'image', 'size'], 'the rest as it streamed');
  t.equal(upload.replayable, false, 'live bytes went upstream: no second attempt');

  const whole = new MultipartUpload(
    Readable.from([Buffer.from(textPart('model', 'm') + textPart('prompt', 'p') + `--${B}--`)]),
    B,
    1 << 20,
    NO_RULES,
  );
  t.equal(await whole.readPrefix(), true);
  t.equal(whole.formComplete, true, 'a form of text fields only is read whole before the hold');
});

t.test('a refused part: never forwarded whole, for any split', async () => {
  const refusal = new GatewayError('validation_failed', 'n is wrong');
  const rules: FormListener = {
    part: (p) => {
      if (p.name === 'n' && p.value === 'bad') throw refusal;
    },
  };
  await fc.assert(
    fc.asyncProperty(formArb, fc.nat(), fc.array(fc.nat(), { maxLength: 10 }), async (f, where, cuts) => {
      const after = [...f.after];
      after.splice(where % (after.length + 1), 0, { kind: 'text', name: 'n', value: 'bad' });
      const body = formBody({ ...f, after });
      // The bad part is complete once the delimiter after its value has arrived.
      const bad = `name="n"\r\n\r\nbad\r\n--${B}`;
      const badEnd = body.indexOf(bad) + bad.length;
      const source = Readable.from(split(body, cuts));
      const upload = new MultipartUpload(source, B, 1 << 20, rules);
      const prefix = await upload.readPrefix().then(
        () => null,
        (err: unknown) => err,
      );
      if (prefix !== null) return prefix === refusal; // refused before anything was sent
      const sent = await drain(upload.body('M'));
      return sent.error === refusal && upload.refusal === refusal && sent.bytes.length < badEnd && source.destroyed;
    }),
    { numRuns: runs(300) },
  );
});

t.test('arbitrary bytes: a GatewayError or a body, never a throw of anything else, never a hang', async () => {
  const noise = fc.oneof(
    fc.uint8Array({ maxLength: 400 }).map((a) => Buffer.from(a)),
    fc
      .array(
        fc.constantFrom(
          `--${B}`,
          '\r\n',
          '--',
          `\r\n--${B}`,
          'Content-Disposition: form-data; name="model"',
          '; filename="x"',
          '\r\n\r\n',
          'acme/painter',
          `--${B}--`,
        ),
        { maxLength: 30 },
      )
      .map((p) => Buffer.from(p.join(''))),
  );
  await fc.assert(
    fc.asyncProperty(noise, fc.array(fc.nat(), { maxLength: 6 }), async (body, cuts) => {
      const upload = new MultipartUpload(Readable.from(split(body, cuts)), B, 4096, NO_RULES);
      const outcome = await Promise.race([
        (async () => {
          try {
            if (!(await upload.readPrefix())) return 'no model';
            const sent = await drain(upload.body('M'));
            return sent.error === null || sent.error instanceof GatewayError ? 'ok' : sent.error;
          } catch (err) {
            return err instanceof GatewayError ? 'refused' : err;
          }
        })(),
        new Promise((resolve) => setTimeout(() => resolve('hang'), 2000)),
      ]);
      return outcome === 'ok' || outcome === 'refused' || outcome === 'no model';
    }),
    { numRuns: runs(1000) },
  );
});

t.test('a file before model: the held prefix is read in linear time', async (t) => {
  const prefixMs = (mib: number): Promise<number> => {
    const body = Buffer.concat([
      filePart('image', Buffer.alloc(mib << 20, 7)),
      Buffer.from(textPart('model', 'm') + `--${B}--`),
    ]);
    const chunks = Array.from({ length: Math.ceil(body.length / 65536) }, (_, i) =>
      body.subarray(i * 65536, (i + 1) * 65536),
    );
    return cpuMsAsync(() => new MultipartUpload(Readable.from(chunks), B, 64 << 20, NO_RULES).readPrefix(), 3);
  };
  await prefixMs(1);
  const one = await prefixMs(1);
  const sixteen = await prefixMs(16);
  // Joined again on every chunk, the prefix cost ~40x more for 8x the bytes (a 32 MiB file: 7.6 s).
  t.ok(looksLinear(one, sixteen, 16), `1 MiB in ${one.toFixed(1)} ms, 16 MiB in ${sixteen.toFixed(1)} ms of CPU`);
});
