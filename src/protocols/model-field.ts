// The response `model` rule shared by the protocol modules (docs/api.md: "model → slug in the JSON body and
// every SSE event"; X-Pi-Model equals the body's model): the provider's value is replaced by the
// slug, and when the provider sent no `model` at all the member is added, so the client always reads
// the slug. Every member named `model` is rewritten, however the provider spelled the name
// (`"mod\u0065l"` included) and however many times it sent it: a JSON parser keeps the last one,
// another parser may keep the first, and each must read the slug. Only the reported value (never the
// added one) feeds X-Pi-Upstream-Model: the last string value, the one a JSON parser reads.
import {
  findStringValue,
  findValueStart,
  insertMember,
  memberValues,
  objectOpenAt,
  readString,
  replaceSpan,
  type ValueSpan,
  valueEnd,
} from '../stream/json-key.ts';
import type { JsonObject } from './types.ts';

export interface ModelRewrite {
  out: Buffer;
  /** The model the provider reported (a string `model` found), else null. */
  reported: string | null;
}

const OPEN_OBJ = 0x7b;
const MODEL_NAME = Buffer.from('"model"');
const UNICODE_ESCAPE = Buffer.from('\\u');

/**
 * `buf` holds one JSON object starting at `from` (0 for a body, the data start for an SSE event).
 * `model` is looked up at `depth` (1 = that object); at depth 2 it lives in the object value of
 * `container` (message_start's `message`, the Responses `response`), where it is added when absent.
 * `add: false` rewrites the members that exist and adds none. Bytes whose members cannot be walked
 * (not one well-formed object, or an SSE event whose JSON runs over several `data:` lines) get the
 * first `model` found by key scan rewritten, as far as a scan can tell one.
 */
export function slugModel(
  buf: Buffer,
  slugJson: Buffer,
  from: number,
  depth: 1 | 2,
  container?: string,
  add = true,
): ModelRewrite {
  const open = from < 0 ? -1 : objectOpenAt(buf, from);
  if (open === -1) return { out: buf, reported: null };
  const holders = modelHolders(buf, open, depth, container);
  const spans: ValueSpan[] = [];
  for (const holder of holders ?? []) {
    const found = memberValues(buf, holder, 'model');
    if (found === null) return firstModelOnly(buf, slugJson, from, depth);
    spans.push(...found);
  }
  if (holders === null) return firstModelOnly(buf, slugJson, from, depth);
  if (spans.length === 0) {
    const last = holders.at(-1);
    return { out: last === undefined || !add ? buf : insertMember(buf, last, 'model', slugJson), reported: null };
  }
  const final = spans[spans.length - 1] as ValueSpan;
  const reported = buf[final.start] === 0x22 ? readString(buf, final) : null;
  return { out: replaceAll(buf, spans, slugJson), reported };
}

/** The `{` of each object whose `model` members are the answer's: the object itself at depth 1, the
 *  object values of `container` at depth 2; null when the members cannot be walked. */
function modelHolders(buf: Buffer, open: number, depth: 1 | 2, container: string | undefined): number[] | null {
  if (depth === 1) return [open];
  const boxes = container === undefined ? [] : memberValues(buf, open, container);
  return boxes === null ? null : boxes.map((b) => b.start).filter((at) => buf[at] === OPEN_OBJ);
}

/** The scan's answer where members cannot be walked: the first `"model"` key at `depth`. */
function firstModelOnly(buf: Buffer, slugJson: Buffer, from: number, depth: 1 | 2): ModelRewrite {
  const span = findStringValue(buf, 'model', depth, Math.max(0, from));
  if (span) return { out: replaceSpan(buf, span, slugJson), reported: readString(buf, span) };
  const at = findValueStart(buf, 'model', depth);
  const end = at === -1 ? -1 : valueEnd(buf, at);
  return { out: end === -1 ? buf : replaceSpan(buf, { start: at, end }, slugJson), reported: null };
}

/** `buf` with every span (in order, disjoint) replaced by `insert`, in one allocation. */
function replaceAll(buf: Buffer, spans: ValueSpan[], insert: Buffer): Buffer {
  let size = buf.length;
  for (const s of spans) size += insert.length - (s.end - s.start);
  const out = Buffer.allocUnsafe(size);
  let from = 0;
  let at = 0;
  for (const s of spans) {
    at += buf.copy(out, at, from, s.start);
    at += insert.copy(out, at);
    from = s.end;
  }
  buf.copy(out, at, from);
  return out;
}

/**
 * `slugModel(body, slugJson, 0, 1)` for a whole body already parsed as `parsed`, settled by two
 * native searches when it can be: a body whose `model` is a string, that holds the bytes `"model"`
 * exactly once and no `\u` escape, spells its top-level member's name only that way (no escape can
 * spell `model` otherwise, and a JSON string cannot hold an unescaped quote), so that one place is the
 * member, and the walk over every member of the body is not needed. Anything else takes the walk.
 */
export function slugParsedModel(body: Buffer, slugJson: Buffer, parsed: JsonObject): ModelRewrite {
  const model = parsed['model'];
  if (typeof model === 'string') {
    const at = body.indexOf(MODEL_NAME);
    if (at !== -1 && body.indexOf(MODEL_NAME, at + 1) === -1 && body.indexOf(UNICODE_ESCAPE) === -1) {
      const start = findValueStartAfterName(body, at + MODEL_NAME.length);
      const end = start === -1 ? -1 : valueEnd(body, start);
      if (end !== -1) return { out: replaceSpan(body, { start, end }, slugJson), reported: model };
    }
  }
  return slugModel(body, slugJson, 0, 1);
}

/** The first byte of a string value after a member name ending at `i` (`: "`), or -1. */
function findValueStartAfterName(body: Buffer, i: number): number {
  let j = i;
  while (isJsonSpace(body[j])) j++;
  if (body[j] !== 0x3a) return -1;
  j++;
  while (isJsonSpace(body[j])) j++;
  return body[j] === 0x22 ? j : -1;
}

function isJsonSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
