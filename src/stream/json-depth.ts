// The shape of a JSON text, found by one forward scan of its bytes before anything parses it: how
// deeply it nests, how many members its objects and elements its arrays hold, how many values it has
// in all and how long its member names are. No recursion and no parse, so what a client sends cannot
// choose the gateway's stack depth (V8's JSON.parse is iterative, but JSON.stringify and any walk over
// the parsed value recurse once per level) nor make the parse, and every later step that touches
// each value, cost more than the limits allow. The same scan can note where each top-level member's
// value lies, so a rewritten body reuses those bytes.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const CLOSE_OBJ = 0x7d;
const OPEN_ARR = 0x5b;
const CLOSE_ARR = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;

/** What a JSON text may hold. Counts are of values as written (a key sent twice counts twice). */
export interface JsonLimits {
  /** Deepest nesting of objects and arrays (the top-level value is level 1). */
  depth: number;
  /** Most members in one object. */
  members: number;
  /** Most elements in one array. */
  elements: number;
  /** Most values in the whole text: object members and array elements at every level. */
  values: number;
  /** Longest member name, in bytes between its quotes as sent (escapes not decoded). */
  nameBytes: number;
}

/** Which limit a text went beyond. */
export type JsonLimit = keyof JsonLimits;

/** Limits on depth alone. */
export function depthOnly(max: number): JsonLimits {
  return { depth: max, members: Infinity, elements: Infinity, values: Infinity, nameBytes: Infinity };
}

/**
 * True when objects and arrays in `buf` nest more than `max` levels deep (the top-level object is
 * level 1). Malformed JSON (an unterminated string, unbalanced brackets) is not judged here: the
 * parser reports it.
 */
export function nestsDeeperThan(buf: Buffer, max: number): boolean {
  return jsonShape(buf, max, false).tooDeep;
}

/** Where each top-level member's value lies in the bytes: [start, end), whitespace excluded. A key
 *  sent twice keeps its last value, as JSON.parse does. */
export type MemberSpans = Map<string, readonly [number, number]>;

export interface JsonShape {
  /** Objects and arrays nest more than the bound allowed (`exceeded` is then 'depth'). */
  tooDeep: boolean;
  /** The first limit the text went beyond, in the order the scan met it; null when within all. */
  exceeded: JsonLimit | null;
  /** The top-level members of an object document; null when the bytes are not one well-formed
   *  object as far as this scan can tell (the parser then decides), when it stopped early at a
   *  limit, or when they were not asked for. */
  members: MemberSpans | null;
}

const OBJECT = 1;
const ARRAY = 2;

/**
 * One forward scan of `buf` against `limits` (a number: a depth bound alone). Strings are skipped
 * with native `indexOf`, every other byte is looked at once, and the scan stops at the first limit
 * passed, so its cost is at most one pass over the bytes whatever they are. A limit is judged on the
 * bytes as they come: text that would not parse may be refused by a limit before the parser sees it.
 * With `wantMembers`, also records the top-level members of an object document; the spans are only
 * meaningful for text JSON.parse accepts: callers parse too.
 */
export function jsonShape(buf: Buffer, limits: number | JsonLimits, wantMembers = true): JsonShape {
  const lim = typeof limits === 'number' ? depthOnly(limits) : limits;
  // Per open container, by level (1 = the top-level value): object or array, items begun so far, and
  // whether the next token at that level begins a new item (just opened, or after a comma).
  const size = Math.min(lim.depth, buf.length) + 2;
  const kind = new Uint8Array(size);
  const items = new Float64Array(size);
  const fresh = new Uint8Array(size);
  let values = 0;
  const top = wantMembers ? new TopMembers(buf) : null;
  let depth = 0;
  const n = buf.length;
  for (let i = 0; i < n; i++) {
    const c = buf[i] as number;
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    if (c === CLOSE_OBJ || c === CLOSE_ARR) {
      if (depth === 1) top?.close(i);
      if (depth === 0) top?.spoil();
      else depth--;
      continue;
    }
    if (c === COMMA || c === COLON) {
      if (c === COMMA && depth > 0) fresh[depth] = 1;
      if (depth === 1) top?.punctuation(c, i);
      continue;
    }
    // Any other byte begins a token at this level or continues one (a number, a literal); a string
    // is skipped whole.
    const end = c === QUOTE ? closingQuote(buf, i) : i;
    if (end === -1) return { tooDeep: false, exceeded: null, members: null };
    if (fresh[depth] === 1) {
      fresh[depth] = 0;
      const isObject = kind[depth] === OBJECT;
      const count = (items[depth] as number) + 1;
      items[depth] = count;
      if (count > (isObject ? lim.members : lim.elements)) return refused(isObject ? 'members' : 'elements');
      if (++values > lim.values) return refused('values');
      if (isObject && c === QUOTE && end - i - 1 > lim.nameBytes) return refused('nameBytes');
    }
    if (c === QUOTE) {
      if (depth === 1) top?.string(i, end);
      i = end;
    } else if (c === OPEN_OBJ || c === OPEN_ARR) {
      if (++depth > lim.depth) return refused('depth');
      kind[depth] = c === OPEN_OBJ ? OBJECT : ARRAY;
      items[depth] = 0;
      fresh[depth] = 1;
      if (depth === 1) top?.open(c);
    }
  }
  return { tooDeep: false, exceeded: null, members: top !== null && depth === 0 ? top.result() : null };
}

function refused(limit: JsonLimit): JsonShape {
  return { tooDeep: limit === 'depth', exceeded: limit, members: null };
}

/** The top-level members of an object document, read from the tokens the scan meets at level 1. */
class TopMembers {
  /** Null once the bytes stop looking like one object. */
  private members: MemberSpans | null = new Map();
  private closed = false;
  // The member being read: its key's quotes, and where its value starts (after the colon).
  private keyStart = -1;
  private keyEnd = -1;
  private valueStart = -1;

  private readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }

  /** A closing bracket with nothing open: not one document. */
  spoil(): void {
    this.members = null;
  }

  open(c: number): void {
    if (c !== OPEN_OBJ || this.closed) this.members = null;
  }

  string(open: number, close: number): void {
    if (this.valueStart !== -1 || this.members === null) return;
    if (this.keyStart !== -1) this.members = null;
    this.keyStart = open;
    this.keyEnd = close;
  }

  punctuation(c: number, at: number): void {
    if (this.members === null) return;
    if (c === COLON) {
      if (this.keyStart === -1 || this.valueStart !== -1) this.members = null;
      this.valueStart = at + 1;
    } else {
      this.addMember(at);
      this.keyStart = this.valueStart = -1;
    }
  }

  close(at: number): void {
    if (this.members !== null && this.keyStart !== -1) this.addMember(at);
    this.keyStart = this.valueStart = -1;
    this.closed = true;
  }

  result(): MemberSpans | null {
    return this.closed ? this.members : null;
  }

  /** Records the member ending at `valueEnd`; forgets every member when the bytes do not form `"key": value`. */
  private addMember(valueEnd: number): void {
    const { buf, keyStart, keyEnd, valueStart } = this;
    if (this.members === null) return;
    if (keyStart === -1 || valueStart === -1) {
      this.members = null;
      return;
    }
    let s = valueStart;
    let e = valueEnd;
    while (s < e && isSpace(buf[s])) s++;
    while (e > s && isSpace(buf[e - 1])) e--;
    const key = s === e ? null : keyText(buf, keyStart, keyEnd);
    if (key === null) this.members = null;
    else this.members.set(key, [s, e]);
  }
}

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
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
