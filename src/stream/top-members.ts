// The members of a stream event's top-level JSON object that a tap acts on (`model`, `usage`,
// `error`), found in one pass over the event's bytes. The general readers (json-key.ts) search the
// event once per key with a native search and walk its bytes again for each candidate: three to five
// passes and a dozen native calls for every chunk of a stream. This reader handles the shape providers
// send — one `data:` line holding one object, member names without escapes, no raw line break, the
// event's blank line right after the object — and reports anything else as not plain, for the
// general path to read. For a plain event both paths see the same members: a name is a member's name
// exactly when the general readers find it as a key at depth 1.

import { BACKSLASH, CLOSE_ARR, CLOSE_OBJ, COLON, isNullAt, OPEN_ARR, OPEN_OBJ, QUOTE } from './json-key.ts';
import { asciiAt } from './sse-splitter.ts';

const COMMA = 0x2c;
const LF = 0x0a;
const CR = 0x0d;
const NOT_PLAIN = -1;

/** A line break ends the plain shape: inside the object it would be a second SSE line. */
function isBreak(c: number | undefined): boolean {
  return c === LF || c === CR;
}

function isBlank(c: number | undefined): boolean {
  return c === 0x20 || c === 0x09;
}

/**
 * What one scan found, reused from event to event (no allocation per event). Spans are byte
 * indices into the scanned event; a member seen more than once keeps its last span and its count.
 */
export class TopMembers {
  /** Index of the object's `{`. */
  open = 0;
  modelCount = 0;
  modelValueStart = 0;
  modelValueEnd = 0;
  usageCount = 0;
  /** Index of the opening quote of the `usage` member's name. */
  usageNameStart = 0;
  usageValueStart = 0;
  /** Some `error` member's value is not `null` (the general readers' rule: its first four bytes). */
  errorNonNull = false;

  private reset(): void {
    this.modelCount = 0;
    this.usageCount = 0;
    this.errorNonNull = false;
  }

  /** Reads `ev`; false when it is not plain (then the fields mean nothing). */
  scan(ev: Buffer): boolean {
    this.reset();
    const len = ev.length;
    // `data:` or `data: `, then the object at once.
    if (len < 8 || ev[0] !== 0x64 || ev[1] !== 0x61 || ev[2] !== 0x74 || ev[3] !== 0x61 || ev[4] !== COLON)
      return false;
    let i = ev[5] === 0x20 ? 6 : 5;
    if (ev[i] !== OPEN_OBJ) return false;
    this.open = i;
    i++;
    while (isBlank(ev[i])) i++;
    if (ev[i] !== CLOSE_OBJ) {
      for (;;) {
        if (ev[i] !== QUOTE) return false;
        const nameStart = i;
        let j = i + 1;
        for (;;) {
          const c = ev[j];
          if (c === QUOTE) break;
          // An escaped name (`"mod\u0065l"`), a line break or the end: not plain.
          if (c === undefined || c === BACKSLASH || isBreak(c)) return false;
          j++;
        }
        const nameLength = j - nameStart - 1;
        i = j + 1;
        while (isBlank(ev[i])) i++;
        if (ev[i] !== COLON) return false;
        i++;
        while (isBlank(ev[i])) i++;
        const valueStart = i;
        const valueEnd = plainValueEnd(ev, i);
        if (valueEnd === NOT_PLAIN) return false;
        if (nameLength === 5) this.note(ev, nameStart, valueStart, valueEnd);
        i = valueEnd;
        while (isBlank(ev[i])) i++;
        if (ev[i] === CLOSE_OBJ) break;
        if (ev[i] !== COMMA) return false;
        i++;
        while (isBlank(ev[i])) i++;
      }
    }
    // The object's `}` ends the event's only line: the blank line follows at once.
    return i + 3 === len && ev[i + 1] === LF && ev[i + 2] === LF;
  }

  /** A five-byte member name: one of the three this reader looks for, or another. */
  private note(ev: Buffer, nameStart: number, valueStart: number, valueEnd: number): void {
    const a = ev[nameStart + 1];
    if (a === 0x6d && asciiAt(ev, nameStart + 1, 'model')) {
      this.modelCount++;
      this.modelValueStart = valueStart;
      this.modelValueEnd = valueEnd;
    } else if (a === 0x75 && asciiAt(ev, nameStart + 1, 'usage')) {
      this.usageCount++;
      this.usageNameStart = nameStart;
      this.usageValueStart = valueStart;
    } else if (a === 0x65 && asciiAt(ev, nameStart + 1, 'error')) {
      if (!isNullAt(ev, valueStart)) this.errorNonNull = true;
    }
  }
}

/** Index just after the value starting at `i`, or NOT_PLAIN (cut short, or a literal with a byte no
 *  literal has). Values are skipped as the general readers skip them: strings to their closing
 *  quote, objects and arrays by counting brackets outside strings, anything else to the next
 *  delimiter. (A line break inside a nested value is read the same way by both paths.) */
function plainValueEnd(ev: Buffer, i: number): number {
  const len = ev.length;
  const first = ev[i];
  if (first === QUOTE) {
    for (let j = i + 1; j < len; j++) {
      const c = ev[j];
      if (c === QUOTE) return j + 1;
      if (c === BACKSLASH) j++;
    }
    return NOT_PLAIN;
  }
  if (first === OPEN_OBJ || first === OPEN_ARR) {
    let d = 0;
    for (let j = i; j < len; j++) {
      const c = ev[j] as number;
      if (c === QUOTE) {
        // A string inside: to its closing quote.
        for (j++; j < len; j++) {
          const s = ev[j];
          if (s === QUOTE) break;
          if (s === BACKSLASH) j++;
        }
      } else if (c === OPEN_OBJ || c === OPEN_ARR) d++;
      else if (c === CLOSE_OBJ || c === CLOSE_ARR) {
        d--;
        if (d === 0) return j + 1;
      }
    }
    return NOT_PLAIN;
  }
  // A number or a literal: letters, digits, `+`, `-` and `.` up to the next delimiter. Any other byte
  // (a quote, a bracket) would be read as structure by the general readers' walk.
  let j = i;
  for (; j < len; j++) {
    const c = ev[j] as number;
    if (c === COMMA || c === CLOSE_OBJ || isBlank(c)) break;
    if (!isLiteralByte(c)) return NOT_PLAIN;
  }
  return j > i && j < len ? j : NOT_PLAIN;
}

function isLiteralByte(c: number): boolean {
  return (
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x30 && c <= 0x39) ||
    (c >= 0x41 && c <= 0x5a) ||
    c === 0x2d ||
    c === 0x2b ||
    c === 0x2e
  );
}

/**
 * Where the `usage: null` member of a plain event goes when it is removed, as the general reader
 * (json-key.ts withoutNullMember) removes it: from the comma before it; for the first member, up to
 * and including the comma after it. Returns [start, end).
 */
export function nullMemberCut(ev: Buffer, nameStart: number, valueStart: number): [number, number] {
  const end = valueStart + 4;
  let before = nameStart - 1;
  while (isBlank(ev[before])) before--;
  if (ev[before] === COMMA) return [before, end];
  let after = end;
  while (isBlank(ev[after])) after++;
  return ev[after] === COMMA ? [nameStart, after + 1] : [nameStart, end];
}

/** A copy of `ev` with [aStart, aEnd) replaced by `insert` and, when `cutStart` ≥ 0, [cutStart,
 *  cutEnd) removed (the two ranges disjoint): one allocation. */
export function editEvent(
  ev: Buffer,
  aStart: number,
  aEnd: number,
  insert: Buffer,
  cutStart: number,
  cutEnd: number,
): Buffer {
  const cut = cutStart < 0 ? 0 : cutEnd - cutStart;
  const out = Buffer.allocUnsafe(ev.length - (aEnd - aStart) + insert.length - cut);
  let at: number;
  if (cutStart < 0) {
    at = ev.copy(out, 0, 0, aStart);
    at += insert.copy(out, at);
    ev.copy(out, at, aEnd);
  } else if (cutStart < aStart) {
    at = ev.copy(out, 0, 0, cutStart);
    at += ev.copy(out, at, cutEnd, aStart);
    at += insert.copy(out, at);
    ev.copy(out, at, aEnd);
  } else {
    at = ev.copy(out, 0, 0, aStart);
    at += insert.copy(out, at);
    at += ev.copy(out, at, aEnd, cutStart);
    ev.copy(out, at, cutEnd);
  }
  return out;
}
