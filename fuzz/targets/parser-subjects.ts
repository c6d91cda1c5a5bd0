// The byte-level parsers the `parsers` target drives, each with its input generator, its mutator,
// the oracles it can be judged by without timing, and the input shapes its cost is measured on:
//   json-depth   nestsDeeperThan / jsonShape vs JSON.parse (depth, members and their value spans)
//   sse          SseSplitter: the same events whatever the split points; events + tail = input
//   json-key     the key scanner / rewriter vs JSON.parse (the `model` rewrite must leave the slug
//                as the only model a JSON parser reads; usage and error found as the parser sees them);
//                the stream taps' one-pass reader vs the key scanner on every event it calls plain
//   bedrock      BedrockStreamDecoder: the same output and failure whatever the split points; failures
//                reported through `failure`, never thrown
//   multipart    MultipartUpload: the same fields, model and forwarded body whatever the split points;
//                the only error thrown is its documented "model field not found within the upload limit"
import { Readable } from 'node:stream';
import { isDeepStrictEqual as deepEqualUnguarded } from 'node:util';
import { BedrockStreamDecoder } from '../../src/platforms/bedrock-event-stream.ts';
import { GatewayError } from '../../src/errors.ts';
import { slugModel } from '../../src/protocols/model-field.ts';
import { MultipartUpload } from '../../src/protocols/multipart-upload.ts';
import { chunkMessage, eventStreamMessage, exceptionMessage } from '../../src/simulator/event-stream-frames.ts';
import { jsonShape, nestsDeeperThan } from '../../src/stream/json-depth.ts';
import {
  findStringValue,
  findValueBytes,
  findValueStart,
  hasNonNullKey,
  insertMember,
  objectOpenAt,
  readString,
  replaceSpan,
  sseDataStart,
  valueEnd,
} from '../../src/stream/json-key.ts';
import {
  SseSplitter,
  dataLooksWhole,
  isBlankOrComment,
  parseSseEvent,
  sseEventName,
} from '../../src/stream/sse-splitter.ts';
import { mutateBytes } from '../lib/bytes-mutate.ts';
import { plainDisagreement } from '../lib/plain-event.ts';
import { fromValue, mutateJson, randomValue, serialise } from '../lib/json-mutate.ts';
import { type Rng, splitAt } from '../lib/rng.ts';

/**
 * Deep equality that survives values nested deeper than the comparison's own recursion can walk
 * (JSON.parse takes thousands of levels; the comparison overflows the stack first): such a pair is
 * not compared here — how deep input is handled is the depth scan's own oracle.
 */
function isDeepStrictEqual(a: unknown, b: unknown): boolean {
  try {
    return deepEqualUnguarded(a, b);
  } catch (err) {
    if (err instanceof RangeError) return true;
    throw err;
  }
}

export interface Problem {
  oracle: 'exception' | 'split-dependence' | 'disagreement';
  signature: string;
  detail: string;
}

export interface Shape {
  name: string;
  /** Sizes (bytes) the scaling check picks n from: it times n and 8 × n. */
  minSize: number;
  maxSize: number;
  /** The n of a bounded run: where a quadratic implementation costs a fraction of a second at 8 × n
   *  and a linear one milliseconds. */
  testSize: number;
  build(size: number): Buffer;
  /** Runs the subject on the input the way the gateway feeds it (in 4 KiB reads where it streams). */
  run(input: Buffer): Promise<void> | void;
}

export interface Subject {
  name: string;
  /** Source files whose block coverage guides the loop (path suffixes). */
  files: string[];
  generate(rng: Rng): Buffer;
  mutate(rng: Rng, input: Buffer): Buffer;
  /** Runs every oracle but timing; `cuts` are where a streaming parser's input is split. */
  check(input: Buffer, cuts: number[]): Promise<Problem[]>;
  shapes: Shape[];
}

const READ = 4096;

/** Split points every `READ` bytes (what a socket delivers a large body in). */
function reads(len: number): number[] {
  const out: number[] = [];
  for (let at = READ; at < len; at += READ) out.push(at);
  return out;
}

function errorName(err: unknown): string {
  return err instanceof Error ? `${err.constructor.name}: ${err.message.slice(0, 80)}` : String(err);
}

/** Runs `fn`; an exception becomes a problem named after `where`. */
function guard<T>(problems: Problem[], where: string, fn: () => T): T | undefined {
  try {
    return fn();
  } catch (err) {
    problems.push({
      oracle: 'exception',
      signature: `${where} threw ${err instanceof Error ? err.constructor.name : typeof err}`,
      detail: errorName(err),
    });
    return undefined;
  }
}

function parseJson(buf: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(buf.toString('utf8')) as unknown };
  } catch {
    return { ok: false };
  }
}

/**
 * Whether any object of a JSON text JSON.parse accepts has a key twice, or a key written with an
 * escape (so its bytes are not its name): the documents a byte scanner may read differently from a
 * parser. A plain scan with a stack of key sets; strings are read with JSON.parse.
 */
export function hasDuplicateOrEscapedKey(text: string): boolean {
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      if (expectKey && top) {
        const raw = text.slice(i, j + 1);
        if (raw.includes('\\')) return true;
        const key = raw.slice(1, -1);
        if (top.has(key)) return true;
        top.add(key);
      }
      expectKey = false;
      i = j;
    } else if (c === '{') {
      stack.push(new Set());
      expectKey = true;
    } else if (c === '[') {
      stack.push(null);
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',') {
      expectKey = stack[stack.length - 1] !== null && stack.length > 0;
    }
  }
  return false;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Nesting depth of a parsed value, without recursion (the top-level object is level 1). */
function depthOf(v: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[v, 1]];
  while (stack.length > 0) {
    const [x, d] = stack.pop() as [unknown, number];
    if (typeof x !== 'object' || x === null) continue;
    if (d > max) max = d;
    for (const y of Array.isArray(x) ? x : Object.values(x)) stack.push([y, d + 1]);
  }
  return max;
}

/** A JSON document: a random value, or a request/event-like object, sometimes mutated. */
function jsonDoc(rng: Rng): Buffer {
  const base = rng.chance(0.5)
    ? {
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        usage: { prompt_tokens: 3, completion_tokens: 5 },
        choices: [{ delta: { content: 'x' } }],
      }
    : randomValueJs(rng);
  const root = { node: fromValue(base) };
  if (rng.chance(0.7)) mutateJson(rng, root, { models: ['m', 'other'], platforms: ['p'], maxBytes: 64 * 1024 });
  let out = serialise(root.node);
  if (rng.chance(0.2)) out = mutateBytes(rng, out);
  return out;
}

function randomValueJs(rng: Rng): unknown {
  const text = serialise(randomValue(rng, 3)).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { v: text };
  }
}

// ---------------------------------------------------------------------------------------------
// json-depth

const MAX_DEPTH = 128;

export const jsonDepthSubject: Subject = {
  name: 'json-depth',
  files: ['src/stream/json-depth.ts'],
  generate: jsonDoc,
  mutate: (rng, input) =>
    rng.chance(0.5)
      ? mutateBytes(rng, input)
      : Buffer.concat([input.subarray(0, rng.int(0, input.length)), jsonDoc(rng)]),
  async check(input) {
    const problems: Problem[] = [];
    const deep = guard(problems, 'nestsDeeperThan', () => nestsDeeperThan(input, MAX_DEPTH));
    const shape = guard(problems, 'jsonShape', () => jsonShape(input, MAX_DEPTH));
    const parsed = parseJson(input);
    if (!parsed.ok || deep === undefined || shape === undefined) return problems;
    // With a key written twice, JSON.parse keeps the last value and drops the other, nesting and
    // all; a provider may keep the first. The scan judges the bytes, so the parse cannot referee.
    if (hasDuplicateOrEscapedKey(input.toString('utf8'))) return problems;
    const expectDeep = depthOf(parsed.value) > MAX_DEPTH;
    if (deep !== expectDeep)
      problems.push({
        oracle: 'disagreement',
        signature: 'nestsDeeperThan disagrees with the parsed depth',
        detail: `scan ${deep}, parsed depth ${depthOf(parsed.value)}`,
      });
    if (shape.tooDeep !== expectDeep)
      problems.push({
        oracle: 'disagreement',
        signature: 'jsonShape.tooDeep disagrees with the parsed depth',
        detail: `scan ${shape.tooDeep}, parsed depth ${depthOf(parsed.value)}`,
      });
    if (shape.members && isPlainObject(parsed.value)) {
      const obj = parsed.value;
      const keys = [...shape.members.keys()].sort();
      const want = Object.keys(obj).sort();
      if (!isDeepStrictEqual(keys, want))
        problems.push({
          oracle: 'disagreement',
          signature: 'jsonShape members are not the parsed keys',
          detail: `${JSON.stringify(keys).slice(0, 200)} vs ${JSON.stringify(want).slice(0, 200)}`,
        });
      else {
        for (const [k, [s, e]] of shape.members) {
          const v = parseJson(input.subarray(s, e));
          if (!v.ok || !isDeepStrictEqual(v.value, obj[k])) {
            problems.push({
              oracle: 'disagreement',
              signature: 'a member span does not hold the parsed value',
              detail: `key ${JSON.stringify(k).slice(0, 60)}`,
            });
            break;
          }
        }
      }
    }
    return problems;
  },
  // Test sizes small: a document of a few MB fills V8's young generation, and the promotions that
  // follow make even a linear scan's cost per byte jump by several times.
  shapes: [
    {
      name: 'many keys',
      minSize: 64 * 1024,
      maxSize: 512 * 1024,
      testSize: 32 * 1024,
      build: (n) =>
        Buffer.from(`{${Array.from({ length: Math.floor(n / 12) }, (_, i) => `"k${i}":${i % 10}`).join(',')}}`),
      run: (b) => void jsonShape(b, MAX_DEPTH),
    },
    {
      name: 'escaped quotes in one string',
      minSize: 64 * 1024,
      maxSize: 512 * 1024,
      testSize: 32 * 1024,
      build: (n) => Buffer.from(`{"a":"${'\\\\\\"'.repeat(Math.floor(n / 4))}"}`),
      run: (b) => void jsonShape(b, MAX_DEPTH),
    },
  ],
};

// ---------------------------------------------------------------------------------------------
// sse

function sseStream(rng: Rng): Buffer {
  const parts: string[] = [];
  const eol = (): string =>
    rng.weighted([
      ['\n', 70],
      ['\r\n', 25],
      ['\r', 5],
    ] as const);
  for (let i = rng.int(0, 12); i > 0; i--) {
    const kind = rng.int(0, 6);
    const e = eol();
    if (kind === 0) parts.push(`data: {"id":${i},"model":"m","choices":[{"delta":{"content":"w${i}"}}]}${e}${e}`);
    else if (kind === 1) parts.push(`event: message_start${e}data: {"type":"message_start"}${e}${e}`);
    else if (kind === 2) parts.push(`: ping${e}${e}`);
    else if (kind === 3) parts.push(`data: [DONE]${e}${e}`);
    else if (kind === 4) parts.push(`data: line1${e}data: line2${e}${e}`);
    else if (kind === 5) parts.push(`data:${'x'.repeat(rng.size(5000))}${e}`);
    else parts.push(`${e}`);
  }
  let out: Buffer = Buffer.from(parts.join(''));
  if (rng.chance(0.2)) out = mutateBytes(rng, out);
  return out;
}

function splitterRun(input: Buffer, cuts: number[]): { events: Buffer[]; tail: Buffer | null } {
  const s = new SseSplitter();
  const events: Buffer[] = [];
  for (const piece of splitAt(input, cuts)) for (const ev of s.push(piece)) events.push(Buffer.from(ev));
  return { events, tail: s.flush() };
}

export const sseSubject: Subject = {
  name: 'sse',
  files: ['src/stream/sse-splitter.ts'],
  generate: sseStream,
  mutate: (rng, input) => (rng.chance(0.5) ? mutateBytes(rng, input) : Buffer.concat([input, sseStream(rng)])),
  async check(input, cuts) {
    const problems: Problem[] = [];
    const whole = guard(problems, 'SseSplitter.push (one chunk)', () => splitterRun(input, []));
    const split = guard(problems, 'SseSplitter.push (split)', () => splitterRun(input, cuts));
    if (!whole || !split) return problems;
    const same =
      whole.events.length === split.events.length &&
      whole.events.every((e, i) => e.equals(split.events[i] as Buffer)) &&
      (whole.tail === null ? split.tail === null : split.tail !== null && whole.tail.equals(split.tail));
    if (!same)
      problems.push({
        oracle: 'split-dependence',
        signature: 'SseSplitter events depend on the split points',
        detail: `${whole.events.length} events whole, ${split.events.length} split`,
      });
    const rebuilt = Buffer.concat([...whole.events, whole.tail ?? Buffer.alloc(0)]);
    if (!rebuilt.equals(input))
      problems.push({
        oracle: 'disagreement',
        signature: 'SseSplitter events and tail are not the input',
        detail: `${rebuilt.length} of ${input.length} bytes`,
      });
    for (const ev of whole.events) {
      guard(problems, 'isBlankOrComment', () => isBlankOrComment(ev));
      guard(problems, 'parseSseEvent', () => parseSseEvent(ev));
      guard(problems, 'sseEventName', () => sseEventName(ev));
      guard(problems, 'dataLooksWhole', () => dataLooksWhole(ev));
    }
    return problems;
  },
  shapes: [
    {
      name: 'one data line without an event boundary',
      minSize: 64 * 1024,
      maxSize: 512 * 1024,
      testSize: 512 * 1024,
      build: (n) => Buffer.concat([Buffer.from('data: {"pad":"'), Buffer.alloc(n, 0x79)]),
      run: (b) => void splitterRun(b, reads(b.length)),
    },
    {
      name: 'many small events',
      minSize: 64 * 1024,
      maxSize: 512 * 1024,
      testSize: 256 * 1024,
      build: (n) => Buffer.from('data: {"a":1}\n\n'.repeat(Math.floor(n / 15))),
      run: (b) => void splitterRun(b, reads(b.length)),
    },
    {
      name: 'CR-only line ends',
      minSize: 64 * 1024,
      maxSize: 512 * 1024,
      testSize: 512 * 1024,
      build: (n) => Buffer.from('data: {"a":1}\r\r'.repeat(Math.floor(n / 15))),
      run: (b) => void splitterRun(b, reads(b.length)),
    },
  ],
};

// ---------------------------------------------------------------------------------------------
// json-key

const SLUG = Buffer.from('"vendor/slug"');

function eventDoc(rng: Rng): Buffer {
  const model = rng.pick([
    '"model":"up-1",',
    '"model":"up-1","model":"other",',
    '"mod\\u0065l":"up-1",',
    '"model":null,',
    '"model":12,',
    '',
    '"model":"a\\"b",',
    '"model":"\\u00e9",',
  ]);
  const usage = rng.pick([
    '',
    ',"usage":{"prompt_tokens":1,"completion_tokens":2}',
    ',"usage":null',
    ',"us\\u0061ge":{"a":1}',
    ',"usage":{"a":1},"usage":null',
  ]);
  const error = rng.pick(['', ',"error":{"message":"x"}', ',"error":null', ',"nested":{"error":1}']);
  let out: Buffer = Buffer.from(
    `{"id":"c",${model}"choices":[{"delta":{"content":"hi","model":"inner"}}]${usage}${error}}`,
  );
  if (rng.chance(0.3)) {
    const root = { node: fromValue(JSON.parse(out.toString('utf8')) as unknown) };
    mutateJson(rng, root, { models: ['up-1'], platforms: ['p'], maxBytes: 16 * 1024 });
    out = serialise(root.node);
  }
  if (rng.chance(0.15)) out = mutateBytes(rng, out);
  if (rng.chance(0.2)) out = Buffer.concat([Buffer.from('data: '), out]);
  return out;
}

/** The input as a stream event (its `data: ` line and blank line added when missing), read by the
 *  taps' one-pass reader and by the key scanner: they must agree wherever the first reads it. */
function checkOnePass(problems: Problem[], input: Buffer): void {
  const ev = Buffer.concat([
    input.subarray(0, 6).toString('latin1') === 'data: ' ? Buffer.alloc(0) : Buffer.from('data: '),
    input,
    input.subarray(-2).toString('latin1') === '\n\n' ? Buffer.alloc(0) : Buffer.from('\n\n'),
  ]);
  for (const unasked of [false, true]) {
    const disagreement = guard(problems, 'TopMembers', () => plainDisagreement(ev, SLUG, unasked));
    if (disagreement)
      problems.push({
        oracle: 'disagreement',
        signature: `the one-pass reader ${disagreement}`,
        detail: ev.toString('utf8').slice(0, 200),
      });
  }
}

export const jsonKeySubject: Subject = {
  name: 'json-key',
  files: ['src/stream/json-key.ts', 'src/protocols/model-field.ts', 'src/stream/top-members.ts'],
  generate: eventDoc,
  mutate: (rng, input) => (rng.chance(0.6) ? mutateBytes(rng, input) : eventDoc(rng)),
  async check(input) {
    const problems: Problem[] = [];
    const span = guard(problems, 'findStringValue', () => findStringValue(input, 'model', 1));
    guard(problems, 'findStringValue depth 2', () => findStringValue(input, 'model', 2));
    const read = span ? guard(problems, 'readString', () => readString(input, span)) : undefined;
    const rewritten = span ? guard(problems, 'replaceSpan', () => replaceSpan(input, span, SLUG)) : undefined;
    const usagePresent = guard(problems, 'hasNonNullKey', () => hasNonNullKey(input, 'usage', 1));
    guard(problems, 'hasNonNullKey', () => hasNonNullKey(input, 'error', 1));
    const usageBytes = guard(problems, 'findValueBytes', () => findValueBytes(input, 'usage', 1));
    const at = guard(problems, 'findValueStart', () => findValueStart(input, 'model', 1));
    if (at !== undefined && at !== -1) guard(problems, 'valueEnd', () => valueEnd(input, at));
    const open = guard(problems, 'objectOpenAt', () => objectOpenAt(input, 0));
    if (open !== undefined && open !== -1)
      guard(problems, 'insertMember', () => insertMember(input, open, 'model', SLUG));
    guard(problems, 'sseDataStart', () => sseDataStart(input));
    checkOnePass(problems, input);
    const parsed = parseJson(input);
    if (!parsed.ok || !isPlainObject(parsed.value)) return problems;
    const obj = parsed.value;
    if (hasDuplicateOrEscapedKey(input.toString('utf8'))) {
      // Which of two `usage` members counts is not specified; the `model` rule is: whatever the
      // client's JSON parser reads after the rewrite is the slug (or the answer is refused upstream
      // of this scanner — then this check must be narrowed to what the refusal lets through).
      // The gateway's rewrite (src/protocols/model-field.ts) walks the object's members: every member
      // named model, however spelled, becomes the slug.
      const whole = guard(problems, 'slugModel', () => slugModel(input, SLUG, 0, 1).out);
      const after = whole ? parseJson(whole) : null;
      const seen = after?.ok && isPlainObject(after.value) ? after.value['model'] : obj['model'];
      if (typeof seen === 'string' && seen !== 'vendor/slug')
        problems.push({
          oracle: 'disagreement',
          signature: 'with duplicate or escaped keys, JSON.parse reads a model that is not the slug after the rewrite',
          detail: input.toString('utf8').slice(0, 200),
        });
      return problems;
    }
    const model = obj['model'];
    if (typeof model === 'string' && span === null)
      problems.push({
        oracle: 'disagreement',
        signature: 'a string model JSON.parse reads is not found by the scanner',
        detail: input.toString('utf8').slice(0, 200),
      });
    if (span && read !== undefined && typeof model === 'string' && read !== model)
      problems.push({
        oracle: 'disagreement',
        signature: 'the scanner reads another model than JSON.parse',
        detail: `${read} vs ${model}`,
      });
    if (rewritten) {
      const after = parseJson(rewritten);
      if (after.ok && isPlainObject(after.value) && after.value['model'] !== 'vendor/slug')
        problems.push({
          oracle: 'disagreement',
          signature: 'after the rewrite JSON.parse still reads a model that is not the slug',
          detail: input.toString('utf8').slice(0, 200),
        });
    }
    const usage = obj['usage'];
    if (usagePresent !== undefined && usagePresent !== (usage !== undefined && usage !== null))
      problems.push({
        oracle: 'disagreement',
        signature: 'hasNonNullKey(usage) disagrees with JSON.parse',
        detail: input.toString('utf8').slice(0, 200),
      });
    if (usageBytes && usage !== undefined) {
      const u = parseJson(usageBytes);
      if (!u.ok || !isDeepStrictEqual(u.value, usage))
        problems.push({
          oracle: 'disagreement',
          signature: 'findValueBytes(usage) is not the usage JSON.parse reads',
          detail: input.toString('utf8').slice(0, 200),
        });
    }
    return problems;
  },
  shapes: [
    {
      name: 'many `error` keys one level down',
      minSize: 2 * 1024,
      maxSize: 8 * 1024,
      testSize: 4 * 1024,
      build: (n) =>
        Buffer.from(
          `{"a":[${Array(Math.floor(n / 12))
            .fill('{"error":1}')
            .join(',')}]}`,
        ),
      run: (b) => void hasNonNullKey(b, 'error', 1),
    },
    {
      name: 'many `model` keys one level down',
      minSize: 2 * 1024,
      maxSize: 8 * 1024,
      testSize: 4 * 1024,
      build: (n) =>
        Buffer.from(
          `{"a":[${Array(Math.floor(n / 12))
            .fill('{"model":1}')
            .join(',')}]}`,
        ),
      run: (b) => void findValueStart(b, 'model', 1),
    },
    {
      name: 'one long event',
      minSize: 64 * 1024,
      maxSize: 512 * 1024,
      testSize: 256 * 1024,
      build: (n) => Buffer.from(`{"id":"c","model":"m","choices":[{"delta":{"content":"${'x'.repeat(n)}"}}]}`),
      run: (b) => void findStringValue(b, 'model', 1),
    },
  ],
};

// ---------------------------------------------------------------------------------------------
// bedrock

function messagesEvent(rng: Rng, i: number): string {
  return rng.pick([
    '{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":3,"output_tokens":1}}}',
    `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"w${i}\\n"}}`,
    '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}',
    '{"type":"message_stop"}',
    '{\n"type":"ping"\n}',
    '{"type":"Bad-Type"}',
    'not json',
  ]);
}

function bedrockStream(rng: Rng): Buffer {
  const frames: Buffer[] = [];
  for (let i = rng.int(0, 8); i > 0; i--) {
    const kind = rng.int(0, 9);
    if (kind < 6) frames.push(chunkMessage(messagesEvent(rng, i)));
    else if (kind === 6)
      frames.push(
        exceptionMessage(
          rng.pick(['throttlingException', 'modelStreamErrorException', 'internalServerException']),
          'slow down',
        ),
      );
    else if (kind === 7)
      frames.push(
        eventStreamMessage(
          [
            [':message-type', 'event'],
            [':event-type', rng.pick(['chunk', 'metadata', 'other'])],
          ],
          Buffer.from(rng.pick(['{"bytes":12}', '{}', '{"bytes":"!!"}', 'x'])),
        ),
      );
    else
      frames.push(
        eventStreamMessage(
          [
            [':message-type', 'error'],
            [':error-code', 'E'],
            [':error-message', 'boom'],
          ],
          Buffer.alloc(0),
        ),
      );
  }
  let out: Buffer = Buffer.concat(frames);
  if (rng.chance(0.25)) out = mutateBytes(rng, out);
  return out;
}

function decoderRun(input: Buffer, cuts: number[]): { out: Buffer; failure: string | null } {
  const d = new BedrockStreamDecoder();
  const outs: Buffer[] = [];
  for (const piece of splitAt(input, cuts)) outs.push(Buffer.from(d.push(piece)));
  return { out: Buffer.concat(outs), failure: d.failure };
}

export const bedrockSubject: Subject = {
  name: 'bedrock',
  files: ['src/platforms/bedrock-event-stream.ts', 'src/platforms/bedrock-errors.ts'],
  generate: bedrockStream,
  mutate: (rng, input) => (rng.chance(0.5) ? mutateBytes(rng, input) : Buffer.concat([input, bedrockStream(rng)])),
  async check(input, cuts) {
    const problems: Problem[] = [];
    const whole = guard(problems, 'BedrockStreamDecoder.push (one chunk)', () => decoderRun(input, []));
    const split = guard(problems, 'BedrockStreamDecoder.push (split)', () => decoderRun(input, cuts));
    if (!whole || !split) return problems;
    if (!whole.out.equals(split.out) || (whole.failure === null) !== (split.failure === null)) {
      problems.push({
        oracle: 'split-dependence',
        signature: 'the Bedrock decoder output depends on the split points',
        detail: `${whole.out.length} bytes / failure ${whole.failure} whole; ${split.out.length} bytes / failure ${split.failure} split`,
      });
    }
    return problems;
  },
  shapes: [
    {
      name: 'one large message',
      minSize: 64 * 1024,
      maxSize: 512 * 1024,
      testSize: 256 * 1024,
      build: (n) =>
        chunkMessage(
          `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"${'x'.repeat(n)}"}}`,
        ),
      run: (b) => void decoderRun(b, reads(b.length)),
    },
    {
      name: 'many small messages',
      minSize: 64 * 1024,
      maxSize: 512 * 1024,
      testSize: 256 * 1024,
      build: (n) =>
        Buffer.concat(
          Array(Math.floor(n / 200)).fill(
            chunkMessage('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"w"}}'),
          ),
        ),
      run: (b) => void decoderRun(b, reads(b.length)),
    },
  ],
};

// ---------------------------------------------------------------------------------------------
// multipart

export const BOUNDARY = 'fzB0und';
/** The documented refusal of readUntilModel. */
const NOT_FOUND = 'model field not found within the upload limit';

function multipart(rng: Rng): Buffer {
  const parts: Buffer[] = [];
  if (rng.chance(0.1)) parts.push(Buffer.from('preamble\r\n'));
  const fields: [string, Buffer, string | null][] = [
    ['prompt', Buffer.from('edit'), null],
    ['image', Buffer.alloc(rng.size(20_000), 1), 'a.png'],
    ['model', Buffer.from(rng.pick(['acme/painter', '', 'x'.repeat(70_000), 'a\r\n--fzB0und'])), null],
    ['n', Buffer.from('2'), null],
  ];
  for (let i = rng.int(0, 3); i > 0; i--) {
    const a = rng.int(0, fields.length - 1);
    const b = rng.int(0, fields.length - 1);
    [fields[a], fields[b]] = [
      fields[b] as [string, Buffer, string | null],
      fields[a] as [string, Buffer, string | null],
    ];
  }
  if (rng.chance(0.1)) fields.splice(rng.int(0, fields.length - 1), 1);
  for (const [name, value, filename] of fields) {
    parts.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ''}\r\n\r\n`,
      ),
      value,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  let out: Buffer = Buffer.concat(parts);
  if (rng.chance(0.25)) out = mutateBytes(rng, out);
  return out;
}

interface UploadResult {
  found: boolean | string;
  model: string | null;
  fields: [string, string][];
  files: number;
  ended: boolean;
  body: Buffer | null;
}

async function uploadRun(input: Buffer, cuts: number[], maxPrefix: number): Promise<UploadResult> {
  const source = Readable.from(splitAt(input, cuts).filter((p) => p.length > 0));
  // Records every part the reader reports (no field rules: the reader itself is under test).
  const fields: [string, string][] = [];
  let files = 0;
  const u = new MultipartUpload(source, BOUNDARY, maxPrefix, {
    part: (part) => {
      if (part.filename !== null) files++;
      else fields.push([part.name, part.value ?? `<${part.size} bytes>`]);
    },
  });
  let found: boolean | string;
  try {
    found = await u.readPrefix();
  } catch (err) {
    if (err instanceof Error && err.message === NOT_FOUND) found = 'not found within the limit';
    else if (err instanceof GatewayError) found = `refused: ${err.message}`;
    else throw err;
  }
  let body: Buffer | null = null;
  if (found === true) {
    const chunks: Buffer[] = [];
    try {
      for await (const c of u.body('upstream/model')) chunks.push(c as Buffer);
      body = Buffer.concat(chunks);
    } catch (err) {
      // A part after the held prefix broke the form's rules (or the form was cut): the upload's
      // documented refusal, as the attempt reads it.
      if (!(err instanceof GatewayError)) throw err;
      found = `refused while streaming: ${err.message}`;
    }
  }
  return { found, model: u.model, fields, files, ended: u.formComplete, body };
}

export const multipartSubject: Subject = {
  name: 'multipart',
  files: ['src/protocols/multipart-upload.ts'],
  generate: multipart,
  mutate: (rng, input) => (rng.chance(0.6) ? mutateBytes(rng, input) : multipart(rng)),
  async check(input, cuts) {
    const problems: Problem[] = [];
    let whole: UploadResult | null = null;
    let split: UploadResult | null = null;
    try {
      whole = await uploadRun(input, [], 256 * 1024);
      split = await uploadRun(input, cuts, 256 * 1024);
    } catch (err) {
      problems.push({
        oracle: 'exception',
        signature: `MultipartUpload threw ${err instanceof Error ? err.constructor.name : typeof err}`,
        detail: errorName(err),
      });
      return problems;
    }
    // A refusal is the whole result: what was scanned before the limit was passed depends on where
    // the reads ended, and nothing reads it after the refusal.
    // `ended` (the whole form was in the held prefix) depends on how much the reads brought by design.
    // A refusal is the same verdict whether it came while the prefix was held or while the rest
    // streamed: which of the two depends on how far the reads had got by design.
    const strip = (r: UploadResult): unknown =>
      r.found === true || r.found === false
        ? { ...r, ended: undefined, body: r.body?.toString('base64') ?? null }
        : { found: r.found.replace(/^refused while streaming: /, 'refused: ') };
    if (!isDeepStrictEqual(strip(whole), strip(split))) {
      const diff = Object.keys(whole).filter(
        (k) =>
          !isDeepStrictEqual(
            (strip(whole) as Record<string, unknown>)[k],
            (strip(split) as Record<string, unknown>)[k],
          ),
      );
      problems.push({
        oracle: 'split-dependence',
        signature: `MultipartUpload ${diff.join(', ')} depend on the split points`,
        detail: JSON.stringify({
          whole: { ...whole, body: whole.body?.length },
          split: { ...split, body: split.body?.length },
        }).slice(0, 400),
      });
    }
    return problems;
  },
  shapes: [
    {
      name: 'model after a large file',
      minSize: 64 * 1024,
      maxSize: 512 * 1024,
      testSize: 256 * 1024,
      build: (n) =>
        Buffer.concat([
          Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n\r\n`),
          Buffer.alloc(n, 1),
          Buffer.from(
            `\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nacme/painter\r\n--${BOUNDARY}--\r\n`,
          ),
        ]),
      run: async (b) => void (await uploadRun(b, reads(b.length), 64 * 1024 * 1024)),
    },
  ],
};

export const SUBJECTS: readonly Subject[] = [
  jsonDepthSubject,
  sseSubject,
  jsonKeySubject,
  bedrockSubject,
  multipartSubject,
];
