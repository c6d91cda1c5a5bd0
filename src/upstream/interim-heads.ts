// Drops unsolicited `100 Continue` heads from the start of an upstream answer. HTTP lets a server send
// any number of interim (1xx) responses before its final one, and a client must read past them even
// when it asked for none (RFC 9110 §15.2). undici reads 102/103 that way, but refuses a 100 it did
// not ask for by dropping the connection ("bad response"); the gateway never sends
// `Expect: 100-continue`, so such a 100 carries no meaning and is removed before undici's parser
// sees it. Everything from the first head that is not a 100 on passes through untouched.

const LF = 0x0a;
const CR = 0x0d;

/** A 1xx head longer than this is not held back (undici's own header limit then judges it). */
export const MAX_INTERIM_HEAD_BYTES = 16 * 1024;

/** `HTTP/1.x 1`: the bytes that make a head interim, compared as far as they have arrived. */
const INTERIM_PREFIX = Buffer.from('HTTP/1.x 1', 'latin1');
const VERSION_DIGIT_AT = 7;

export class InterimHeadFilter {
  /** Looking at the start of an answer (between a request and its final head). */
  private active = false;
  /** The start of a 1xx head that has not fully arrived. */
  private pending: Buffer | null = null;

  /** A request was written: the next bytes are the start of its answer. */
  start(): void {
    this.active = true;
    this.pending = null;
  }

  /** The bytes of `chunk` the HTTP parser gets (null when all of it is held or dropped). */
  push(chunk: Buffer): Buffer | null {
    if (!this.active) return chunk;
    const buf = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = null;
    const out: Buffer[] = [];
    let at = 0;
    while (at < buf.length) {
      const prefix = interimPrefix(buf, at);
      if (prefix === 'no') {
        // A final head (or bytes that are no head at all, which undici refuses): the rest is its.
        this.active = false;
        out.push(buf.subarray(at));
        break;
      }
      const end = prefix === 'yes' ? headEnd(buf, at) : -1;
      if (end === -1) {
        if (buf.length - at > MAX_INTERIM_HEAD_BYTES) {
          this.active = false;
          out.push(buf.subarray(at));
        } else {
          this.pending = Buffer.from(buf.subarray(at));
        }
        break;
      }
      // `HTTP/1.x 100 `: dropped. Other interim heads (102, 103) undici reads and reports itself.
      if (!isContinue(buf, at)) out.push(buf.subarray(at, end));
      at = end;
    }
    if (out.length === 0) return null;
    return out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out);
  }
}

/** Whether the bytes at `at` start an interim head: yes, no, or not known until more arrive. */
function interimPrefix(buf: Buffer, at: number): 'yes' | 'no' | 'maybe' {
  const n = Math.min(INTERIM_PREFIX.length, buf.length - at);
  for (let i = 0; i < n; i++) {
    const c = buf[at + i] as number;
    const ok = i === VERSION_DIGIT_AT ? c === 0x30 || c === 0x31 : c === INTERIM_PREFIX[i];
    if (!ok) return 'no';
  }
  return n === INTERIM_PREFIX.length ? 'yes' : 'maybe';
}

/** `HTTP/1.x 100` followed by a space or the end of the status line. */
function isContinue(buf: Buffer, at: number): boolean {
  const after = buf[at + 12];
  return buf[at + 10] === 0x30 && buf[at + 11] === 0x30 && (after === 0x20 || after === CR || after === LF);
}

/** Index just after the blank line that ends the head starting at `at` (CRLF or bare LF lines), or -1. */
function headEnd(buf: Buffer, at: number): number {
  let nl = buf.indexOf(LF, at);
  while (nl !== -1) {
    const next = buf[nl + 1];
    if (next === LF) return nl + 2;
    if (next === CR && buf[nl + 2] === LF) return nl + 3;
    if (next === undefined || (next === CR && nl + 2 >= buf.length)) return -1;
    nl = buf.indexOf(LF, nl + 1);
  }
  return -1;
}
