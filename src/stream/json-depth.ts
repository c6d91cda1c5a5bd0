// How deeply a JSON text nests, found by one forward scan of its bytes: no recursion and no parse, so
// a client cannot make the gateway's stack depth depend on what it sends (V8's JSON.parse is
// iterative, but JSON.stringify and any walk over the parsed value recurse once per level). The same
// scan can note where each top-level member's value lies, so a rewritten body reuses those bytes.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const CLOSE_OBJ = 0x7d;
const OPEN_ARR = 0x5b;
const CLOSE_ARR = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;

/**
 * True when objects and arrays in `buf` nest more than `max` levels deep (the top-level object is
 * level 1). Strings are skipped with native `indexOf`, so the cost is one pass over the structural
 * bytes. Malformed JSON (an unterminated string, unbalanced brackets) is not judged here: the parser
 * reports it.
 */
export function nestsDeeperThan(buf: Buffer, max: number): boolean {
  let depth = 0;
  const n = buf.length;
  for (let i = 0; i < n; i++) {
    const c = buf[i];
    if (c === QUOTE) {
      const end = closingQuote(buf, i);
      if (end === -1) return false;
      i = end;
    } else if (c === OPEN_OBJ || c === OPEN_ARR) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJ || c === CLOSE_ARR) {
      depth--;
    }
  }
  return false;
}

/** Where each top-level member's value lies in the bytes: [start, end), whitespace excluded. A key
 *  sent twice keeps its last value, as JSON.parse does. */
export type MemberSpans = Map<string, readonly [number, number]>;

export interface JsonShape {
  /** Objects and arrays nest more than the bound allowed. */
  tooDeep: boolean;
  /** The top-level members of an object document; null when the bytes are not one well-formed
   *  object as far as this scan can tell (the parser then decides) or when it stopped early. */
  members: MemberSpans | null;
}

/**
 * One forward scan that does what nestsDeeperThan does and also records the top-level members of
 * an object document. The spans are only meaningful for text JSON.parse accepts: callers parse too.
 */
export function jsonShape(buf: Buffer, max: number): JsonShape {
  // Null once the bytes stop looking like one object; the depth scan goes on regardless.
  let members: MemberSpans | null = new Map();
  let depth = 0;
  let closed = false;
  // The member being read at depth 1: its key's quotes, and where its value starts (after the colon).
  let keyStart = -1;
  let keyEnd = -1;
  let valueStart = -1;
  const n = buf.length;
  for (let i = 0; i < n; i++) {
    const c = buf[i];
    if (c === QUOTE) {
      const end = closingQuote(buf, i);
      if (end === -1) return { tooDeep: false, members: null };
      if (depth === 1 && valueStart === -1 && members !== null) {
        if (keyStart !== -1) members = null;
        keyStart = i;
        keyEnd = end;
      }
      i = end;
    } else if (c === OPEN_OBJ || c === OPEN_ARR) {
      if (++depth > max) return { tooDeep: true, members: null };
      if (depth === 1 && (c !== OPEN_OBJ || closed)) members = null;
    } else if (c === CLOSE_OBJ || c === CLOSE_ARR) {
      if (depth === 1 && members !== null) {
        if (keyStart !== -1 && !addMember(buf, members, keyStart, keyEnd, valueStart, i)) members = null;
        keyStart = valueStart = -1;
        closed = true;
      }
      depth--;
    } else if (depth === 1 && members !== null) {
      if (c === COLON) {
        if (keyStart === -1 || valueStart !== -1) members = null;
        valueStart = i + 1;
      } else if (c === COMMA) {
        if (!addMember(buf, members, keyStart, keyEnd, valueStart, i)) members = null;
        keyStart = valueStart = -1;
      }
    }
  }
  return { tooDeep: false, members: closed && depth === 0 ? members : null };
}

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Records one member; false when the bytes do not form `"key": value`. */
function addMember(buf: Buffer, members: MemberSpans, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number): boolean {
  if (keyStart === -1 || valueStart === -1) return false;
  let s = valueStart;
  let e = valueEnd;
  while (s < e && isSpace(buf[s])) s++;
  while (e > s && isSpace(buf[e - 1])) e--;
  if (s === e) return false;
  const key = keyText(buf, keyStart, keyEnd);
  if (key === null) return false;
  members.set(key, [s, e]);
  return true;
}

/** The key between the quotes at `open` and `close`: a key with an escape is decoded as the parser
 *  decodes it (null when it cannot be); most keys are plain bytes. */
function keyText(buf: Buffer, open: number, close: number): string | null {
  for (let i = open + 1; i < close; i++) {
    if (buf[i] !== BACKSLASH) continue;
    try {
      const v: unknown = JSON.parse(buf.toString('utf8', open, close + 1));
      return typeof v === 'string' ? v : null;
    } catch {
      return null;
    }
  }
  return buf.toString('utf8', open + 1, close);
}

/** Index of the quote closing the string opened at `open`, or -1: the next quote preceded by an even
 *  number of backslashes (each run of backslashes is counted once, so this stays linear). */
function closingQuote(buf: Buffer, open: number): number {
  let j = open;
  for (;;) {
    j = buf.indexOf(QUOTE, j + 1);
    if (j === -1) return -1;
    let k = j - 1;
    while (k > open && buf[k] === BACKSLASH) k--;
    if ((j - 1 - k) % 2 === 0) return j;
  }
}
