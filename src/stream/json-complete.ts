// Whether bytes are exactly one complete JSON value (RFC 8259), found by one forward scan that builds
// nothing: no string is decoded and no object made, so a multi-megabyte answer (base64 images) is
// checked in one pass over its bytes instead of a decode and a parse. A body cut short (a missing
// closing brace, an unterminated string), a syntax error anywhere, or trailing bytes make it false.
// Bytes are not checked as UTF-8: JSON.parse of their UTF-8 decoding would accept what this accepts.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const CLOSE_OBJ = 0x7d;
const OPEN_ARR = 0x5b;
const CLOSE_ARR = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const FAIL = -1;

const IN_OBJECT = 1;
const IN_ARRAY = 2;

/** Escapes allowed after a backslash besides `u`: " \ / b f n r t. */
const SIMPLE_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(buf: Buffer, i: number): number {
  while (isSpace(buf[i])) i++;
  return i;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= ZERO && c <= NINE;
}

function isHex(c: number | undefined): boolean {
  return c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
}

/** Index just after the string whose opening quote is at `i`, or FAIL. */
function stringEnd(buf: Buffer, i: number): number {
  const n = buf.length;
  for (let k = i + 1; k < n; k++) {
    const b = buf[k] as number;
    if (b === QUOTE) return k + 1;
    if (b < 0x20) return FAIL;
    if (b === BACKSLASH) {
      const e = buf[k + 1];
      if (e === 0x75) {
        if (!(isHex(buf[k + 2]) && isHex(buf[k + 3]) && isHex(buf[k + 4]) && isHex(buf[k + 5]))) return FAIL;
        k += 5;
      } else if (e !== undefined && SIMPLE_ESCAPES.has(e)) k++;
      else return FAIL;
    }
  }
  return FAIL;
}

/** Index just after the number starting at `i`, or FAIL. */
function numberEnd(buf: Buffer, i: number): number {
  let k = i;
  if (buf[k] === MINUS) k++;
  if (buf[k] === ZERO) k++;
  else if (isDigit(buf[k])) while (isDigit(buf[k])) k++;
  else return FAIL;
  if (buf[k] === DOT) {
    k++;
    if (!isDigit(buf[k])) return FAIL;
    while (isDigit(buf[k])) k++;
  }
  if (buf[k] === 0x65 || buf[k] === 0x45) {
    k++;
    if (buf[k] === PLUS || buf[k] === MINUS) k++;
    if (!isDigit(buf[k])) return FAIL;
    while (isDigit(buf[k])) k++;
  }
  return k;
}

function literalEnd(buf: Buffer, i: number): number {
  for (const word of ['true', 'false', 'null']) {
    if (buf[i] !== word.charCodeAt(0)) continue;
    for (let k = 1; k < word.length; k++) if (buf[i + k] !== word.charCodeAt(k)) return FAIL;
    return i + word.length;
  }
  return FAIL;
}

/** Index just after a scalar (string, number, literal) starting at `i`, or FAIL. */
function scalarEnd(buf: Buffer, i: number): number {
  const c = buf[i];
  if (c === QUOTE) return stringEnd(buf, i);
  if (c === MINUS || isDigit(c)) return numberEnd(buf, i);
  return literalEnd(buf, i);
}

/** Index after `"key":` (and the space after it) starting at `i`, or FAIL. */
function memberValueStart(buf: Buffer, i: number): number {
  if (buf[i] !== QUOTE) return FAIL;
  const k = skipSpace(buf, stringEnd(buf, i));
  if (k === FAIL || buf[k] !== COLON) return FAIL;
  return skipSpace(buf, k + 1);
}

/** Whether `buf` is exactly one JSON value, surrounded by whitespace at most. */
export function isCompleteJson(buf: Buffer): boolean {
  // What each open container is; grown on demand (the depth is bounded by the body's size).
  let stack = new Uint8Array(64);
  let depth = 0;
  let i = skipSpace(buf, 0);
  let wantValue = true;
  while (i !== FAIL) {
    if (wantValue) {
      const c = buf[i];
      if (c === OPEN_OBJ || c === OPEN_ARR) {
        if (depth === stack.length) {
          const grown = new Uint8Array(stack.length * 2);
          grown.set(stack);
          stack = grown;
        }
        stack[depth++] = c === OPEN_OBJ ? IN_OBJECT : IN_ARRAY;
        i = skipSpace(buf, i + 1);
        if (buf[i] === (c === OPEN_OBJ ? CLOSE_OBJ : CLOSE_ARR)) {
          depth--;
          i++;
          wantValue = false;
        } else if (c === OPEN_OBJ) i = memberValueStart(buf, i);
        continue;
      }
      i = scalarEnd(buf, i);
      wantValue = false;
      continue;
    }
    i = skipSpace(buf, i);
    if (depth === 0) return i === buf.length;
    const inside = stack[depth - 1];
    const c = buf[i];
    if (c === COMMA) {
      i = skipSpace(buf, i + 1);
      if (inside === IN_OBJECT) i = memberValueStart(buf, i);
      wantValue = true;
    } else if ((c === CLOSE_OBJ && inside === IN_OBJECT) || (c === CLOSE_ARR && inside === IN_ARRAY)) {
      depth--;
      i++;
    } else return false;
  }
  return false;
}
