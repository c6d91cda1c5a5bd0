// Finds a key's string value inside JSON bytes at a given object depth without parsing the whole
// document, so `model` can be rewritten in every stream event at the cost of a short scan.
// Correct for any valid JSON: a `"model"` followed by `:` can only be a key, never inside a string
// (quotes inside strings are escaped), and the depth walk skips strings properly.
import { asciiAt } from './sse-splitter.ts';

/** JSON's structural bytes, shared with the one-pass reader (top-members.ts). */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_OBJ = 0x7b;
export const CLOSE_OBJ = 0x7d;
export const OPEN_ARR = 0x5b;
export const CLOSE_ARR = 0x5d;
export const COLON = 0x3a;

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** `"key"` as bytes, encoded once per key: Buffer.indexOf re-encodes a string needle on every call. */
const NEEDLES = new Map<string, Buffer>();
function keyNeedle(key: string): Buffer {
  let n = NEEDLES.get(key);
  if (!n) NEEDLES.set(key, (n = Buffer.from(`"${key}"`)));
  return n;
}

/** Span [start, end) of the string value's contents (between the quotes), plus the raw JSON string. */
export interface ValueSpan {
  /** Index of the opening quote. */
  start: number;
  /** Index just after the closing quote. */
  end: number;
}

/**
 * Locate `"<key>": "<string>"` at object depth `depth` (1 = top-level object) searching from `from`.
 * Returns null when absent or when the value is not a string.
 */
export function findStringValue(buf: Buffer, key: string, depth: number, from = 0): ValueSpan | null {
  const j = nextKeyValue(buf, keyNeedle(key), depth, from);
  if (j === -1 || buf[j] !== QUOTE) return null;
  let k = j + 1;
  while (k < buf.length && buf[k] !== QUOTE) k += buf[k] === BACKSLASH ? 2 : 1;
  if (k >= buf.length) return null;
  return { start: j, end: k + 1 };
}

/**
 * The first byte of the value of the first `needle` key (`"key"`) at `depth` at or after `from`, or
 * -1. One depth walk from the start of the buffer, advanced to each candidate in turn: however many
 * times the needle occurs (in keys at other depths, or inside strings), the bytes are walked once.
 */
function nextKeyValue(buf: Buffer, needle: Buffer, depth: number, from: number): number {
  let at = buf.indexOf(needle, from);
  let pos = 0;
  let d = 0;
  let inString = false;
  while (at !== -1) {
    while (pos < at) {
      const c = buf[pos];
      if (inString) {
        if (c === BACKSLASH) pos++;
        else if (c === QUOTE) inString = false;
      } else if (c === QUOTE) inString = true;
      else if (c === OPEN_OBJ || c === OPEN_ARR) d++;
      else if (c === CLOSE_OBJ || c === CLOSE_ARR) d--;
      pos++;
    }
    // pos > at means the candidate's quote was escaped (inside a string): not a key.
    if (pos === at && !inString && d === depth) {
      let j = at + needle.length;
      while (isSpace(buf[j])) j++;
      if (buf[j] === COLON && isObjectLevel(buf, at)) {
        j++;
        while (isSpace(buf[j])) j++;
        return j;
      }
    }
    at = buf.indexOf(needle, Math.max(at + 1, pos));
  }
  return -1;
}

/** A key at `depth` could also sit in an array at that depth; keys only follow `{` or `,` inside objects. */
function isObjectLevel(buf: Buffer, at: number): boolean {
  let k = at - 1;
  while (k >= 0 && isSpace(buf[k])) k--;
  return buf[k] === OPEN_OBJ || buf[k] === 0x2c;
}

/** The decoded string at a span returned by `findStringValue`. */
export function readString(buf: Buffer, span: ValueSpan): string {
  const raw = buf.toString('utf8', span.start, span.end);
  if (raw.indexOf('\\') === -1) return raw.slice(1, -1);
  try {
    return JSON.parse(raw) as string;
  } catch {
    // An escape JSON does not have (`\q`): the provider's bytes as they are, never an exception.
    return raw.slice(1, -1);
  }
}

/** A copy of `buf` with the string at `span` replaced by the JSON string `jsonString` (already quoted). */
export function replaceSpan(buf: Buffer, span: ValueSpan, jsonString: Buffer): Buffer {
  return spliceBytes(buf, span.start, span.end, jsonString);
}

/** A copy of `buf` with bytes [start, end) replaced by `insert`: one allocation and three copies
 *  (Buffer.concat would also build an array and two views for it). */
export function spliceBytes(buf: Buffer, start: number, end: number, insert: Buffer): Buffer {
  const out = Buffer.allocUnsafe(buf.length - (end - start) + insert.length);
  buf.copy(out, 0, 0, start);
  insert.copy(out, start);
  buf.copy(out, start + insert.length, end);
  return out;
}

/**
 * Whether `"<key>"` appears as a key at `depth` with a non-null value. Cheap pre-check before
 * parsing an event for usage.
 */
export function hasNonNullKey(buf: Buffer, key: string, depth: number): boolean {
  const needle = keyNeedle(key);
  // JSON keeps the last of two equal keys, but any non-null one is worth the parse this guards.
  for (let j = nextKeyValue(buf, needle, depth, 0); j !== -1; j = nextKeyValue(buf, needle, depth, j)) {
    if (!(buf[j] === 0x6e && buf[j + 1] === 0x75 && buf[j + 2] === 0x6c && buf[j + 3] === 0x6c)) return true;
  }
  return false;
}

/**
 * `buf` without the `"<key>": null` members at `depth` (and one comma beside each), every other byte
 * kept; `buf` itself when it has none. For a stream the gateway asked usage of on the client's
 * behalf: its chunks then carry `"usage": null`, which a client that never asked does not expect.
 */
export function withoutNullMember(buf: Buffer, key: string, depth: number): Buffer {
  const needle = keyNeedle(key);
  let out = buf;
  for (let j = nextKeyValue(out, needle, depth, 0); j !== -1; j = nextKeyValue(out, needle, depth, j)) {
    if (!isNullAt(out, j)) continue;
    // The key's opening quote: back over the value's separator to the name's closing quote.
    let k = j - 1;
    while (isSpace(out[k]) || out[k] === COLON) k--;
    const nameStart = k - needle.length + 1;
    let start = nameStart;
    let end = j + 4;
    let before = nameStart - 1;
    while (isSpace(out[before])) before--;
    if (out[before] === 0x2c) start = before;
    else {
      // The first member: the comma after it goes instead (none when it is the only member).
      let after = end;
      while (isSpace(out[after])) after++;
      if (out[after] === 0x2c) end = after + 1;
    }
    out = spliceBytes(out, start, end, EMPTY);
    j = start;
  }
  return out;
}

const EMPTY = Buffer.alloc(0);

/** Whether the value at `j` is `null` (its first four bytes: what a tap needs to know of it). */
export function isNullAt(buf: Buffer, j: number): boolean {
  return buf[j] === 0x6e && buf[j + 1] === 0x75 && buf[j + 2] === 0x6c && buf[j + 3] === 0x6c;
}

/** Object/array depth at byte `at` (outside strings). */
export function depthAt(buf: Buffer, at: number): number {
  let d = 0;
  let inString = false;
  for (let i = 0; i < at; i++) {
    const c = buf[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJ || c === OPEN_ARR) d++;
    else if (c === CLOSE_OBJ || c === CLOSE_ARR) d--;
  }
  return d;
}

/**
 * The raw bytes of the value of `"<key>"` at `depth` (object, array, string, number or literal), or
 * null. Lets a large body (base64 images) yield its small `usage` object without parsing the rest.
 */
export function findValueBytes(buf: Buffer, key: string, depth: number): Buffer | null {
  const start = findValueStart(buf, key, depth);
  if (start === -1) return null;
  const end = valueEnd(buf, start);
  return end === -1 ? null : buf.subarray(start, end);
}

/** Index of the first byte of the value of `"<key>"` at `depth` (whatever its type), or -1 when the key is absent. */
export function findValueStart(buf: Buffer, key: string, depth: number): number {
  return nextKeyValue(buf, keyNeedle(key), depth, 0);
}

/**
 * The value spans of every member of the object whose `{` is at `open` whose name is `key`, however
 * the name is spelled (`"mod\u0065l"` is `model`), in order of appearance; null when the object is cut
 * short or is not well formed. A provider may send a key twice: a JSON parser keeps the last value,
 * so a rewrite must see every one. Values are skipped, not parsed: one pass over the object's bytes.
 */
export function memberValues(buf: Buffer, open: number, key: string): ValueSpan[] | null {
  const spans: ValueSpan[] = [];
  let i = open + 1;
  while (isSpace(buf[i])) i++;
  if (buf[i] === CLOSE_OBJ) return spans;
  for (;;) {
    if (buf[i] !== QUOTE) return null;
    const nameEnd = valueEnd(buf, i);
    if (nameEnd === -1) return null;
    const named = nameIs(buf, i, nameEnd, key);
    i = nameEnd;
    while (isSpace(buf[i])) i++;
    if (buf[i] !== COLON) return null;
    i++;
    while (isSpace(buf[i])) i++;
    const end = valueEnd(buf, i);
    if (end === -1) return null;
    if (named) spans.push({ start: i, end });
    i = end;
    while (isSpace(buf[i])) i++;
    if (buf[i] === CLOSE_OBJ) return spans;
    if (buf[i] !== 0x2c) return null;
    i++;
    while (isSpace(buf[i])) i++;
  }
}

/** Whether the JSON string at [start, end) (quotes included) is `key`, escapes decoded. */
function nameIs(buf: Buffer, start: number, end: number, key: string): boolean {
  if (buf.subarray(start, end).indexOf(BACKSLASH) === -1)
    return end - start - 2 === key.length && asciiAt(buf, start + 1, key);
  try {
    return JSON.parse(buf.toString('utf8', start, end)) === key;
  } catch {
    return false;
  }
}

/** Index of the `{` of the first JSON object at or after `from` (whitespace skipped), or -1. */
export function objectOpenAt(buf: Buffer, from: number): number {
  let j = from;
  while (isSpace(buf[j])) j++;
  return buf[j] === OPEN_OBJ ? j : -1;
}

/**
 * A copy of `buf` with `"<key>":<jsonValue>` added as the first member of the object whose `{` is at
 * `open`. Used when a provider omits `model`: the answer must still name the slug (X-Pi-Model equals
 * the body's model), and adding one member keeps every other byte as the provider sent it.
 */
export function insertMember(buf: Buffer, open: number, key: string, jsonValue: Buffer): Buffer {
  let j = open + 1;
  while (isSpace(buf[j])) j++;
  const sep = buf[j] === CLOSE_OBJ ? '' : ',';
  return Buffer.concat([
    buf.subarray(0, open + 1),
    Buffer.from(`${JSON.stringify(key)}:`),
    jsonValue,
    Buffer.from(sep),
    buf.subarray(open + 1),
  ]);
}

/** Where the data of an SSE event starts (after the first `data:` and its optional space), or -1. */
export function sseDataStart(ev: Buffer): number {
  let at: number;
  if (asciiAt(ev, 0, 'data:')) at = 0;
  else {
    const nl = ev.indexOf('\ndata:');
    if (nl === -1) return -1;
    at = nl + 1;
  }
  at += 5;
  if (ev[at] === 0x20) at++;
  return at;
}

/** Index just after the JSON value starting at `i`, or -1 when it is cut off. */
export function valueEnd(buf: Buffer, i: number): number {
  const c = buf[i];
  if (c === QUOTE) {
    let j = i + 1;
    while (j < buf.length && buf[j] !== QUOTE) j += buf[j] === BACKSLASH ? 2 : 1;
    return j < buf.length ? j + 1 : -1;
  }
  if (c === OPEN_OBJ || c === OPEN_ARR) {
    let d = 0;
    let inString = false;
    for (let j = i; j < buf.length; j++) {
      const b = buf[j];
      if (inString) {
        if (b === BACKSLASH) j++;
        else if (b === QUOTE) inString = false;
      } else if (b === QUOTE) inString = true;
      else if (b === OPEN_OBJ || b === OPEN_ARR) d++;
      else if (b === CLOSE_OBJ || b === CLOSE_ARR) {
        d--;
        if (d === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < buf.length && buf[j] !== 0x2c && buf[j] !== CLOSE_OBJ && buf[j] !== CLOSE_ARR && !isSpace(buf[j])) j++;
  return j > i ? j : -1;
}
