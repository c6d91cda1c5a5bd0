// How deeply a JSON text nests, found by one forward scan of its bytes: no recursion and no parse, so
// a client cannot make the gateway's stack depth depend on what it sends (V8's JSON.parse is
// iterative, but JSON.stringify and any walk over the parsed value recurse once per level).

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const CLOSE_OBJ = 0x7d;
const OPEN_ARR = 0x5b;
const CLOSE_ARR = 0x5d;

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
