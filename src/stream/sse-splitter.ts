// Incremental SSE event splitter: feeds on upstream chunks at any boundary and hands out whole events
// (each with its terminating blank line). Scans only the new bytes, never the whole buffer again.
// Splitting raw bytes is safe for UTF-8: the newline byte never occurs inside a multi-byte character.

const LF = 0x0a;
const CR = 0x0d;

export class SseSplitter {
  private tail: Buffer | null = null;
  /** Where scanning resumes in `tail` (bytes before it hold no complete boundary). */
  private scanFrom = 0;

  /** Bytes held waiting for the end of an event. */
  get pendingBytes(): number {
    return this.tail ? this.tail.length : 0;
  }

  /** Feed a chunk; returns the complete events it finished (possibly none). */
  push(chunk: Buffer): Buffer[] {
    let buf: Buffer;
    if (this.tail) {
      buf = Buffer.concat([this.tail, chunk]);
    } else {
      buf = chunk;
      this.scanFrom = 0;
    }
    const out: Buffer[] = [];
    let start = 0;
    let i = this.scanFrom > 0 ? this.scanFrom - 1 : 0;
    for (;;) {
      const nl = buf.indexOf(LF, i);
      if (nl === -1) break;
      // An event ends at an empty line: "\n\n" or "\n\r\n" (CRLF streams), or "\r\r" (rare, CR-only).
      const next = buf[nl + 1];
      if (next === LF) {
        out.push(buf.subarray(start, nl + 2));
        start = nl + 2;
        i = start;
      } else if (next === CR && buf[nl + 2] === LF) {
        out.push(buf.subarray(start, nl + 3));
        start = nl + 3;
        i = start;
      } else {
        i = nl + 1;
      }
    }
    if (start >= buf.length) {
      this.tail = null;
      this.scanFrom = 0;
    } else {
      this.tail = start === 0 && buf === chunk ? Buffer.from(buf) : buf.subarray(start);
      // Resume one byte early so a boundary split across chunks ("\n" | "\n") is found.
      this.scanFrom = Math.max(0, buf.length - start - 1);
    }
    return out;
  }

  /** Bytes left when the stream ended without a final blank line (an unterminated event), or null. */
  flush(): Buffer | null {
    const t = this.tail;
    this.tail = null;
    this.scanFrom = 0;
    return t && t.length > 0 ? t : null;
  }
}

/** Bytes made only of blank lines or comment lines (": ping") carry no event. */
export function isBlankOrComment(ev: Buffer): boolean {
  // Fast answer for the usual event ("data: …", "event: …"): its first line already decides,
  // without walking it byte by byte.
  const first = ev[0];
  if (first !== undefined && first !== 0x3a && first !== LF && first !== CR) return false;
  let lineStart = 0;
  for (let i = 0; i <= ev.length; i++) {
    if (i === ev.length || ev[i] === LF) {
      let end = i;
      if (end > lineStart && ev[end - 1] === CR) end--;
      if (end > lineStart && ev[lineStart] !== 0x3a /* ':' */) return false;
      lineStart = i + 1;
    }
  }
  return true;
}

export interface SseFields {
  /** The `event:` name, or null when absent. */
  event: string | null;
  /** The `data:` lines joined with "\n", or null when the event has no data line. */
  data: string | null;
}

/** Parse one complete event's fields (per the SSE spec: one optional space after the colon). */
export function parseSseEvent(ev: Buffer): SseFields {
  const text = ev.toString('utf8');
  let event: string | null = null;
  let data: string | null = null;
  let pos = 0;
  while (pos < text.length) {
    let end = text.indexOf('\n', pos);
    if (end === -1) end = text.length;
    let line = text.slice(pos, end);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    pos = end + 1;
    if (line === '' || line.charCodeAt(0) === 0x3a) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data = data === null ? value : data + '\n' + value;
  }
  return { event, data };
}

/** The `event:` name of an event without decoding the rest (cheap check on the hot path). */
export function sseEventName(ev: Buffer): string | null {
  if (ev.length < 7 || !asciiAt(ev, 0, 'event:')) {
    const at = ev.indexOf('\nevent:');
    if (at === -1) return null;
    return lineValue(ev, at + 7);
  }
  return lineValue(ev, 6);
}

function lineValue(ev: Buffer, from: number): string {
  let s = from;
  if (ev[s] === 0x20) s++;
  let e = ev.indexOf(LF, s);
  if (e === -1) e = ev.length;
  if (e > s && ev[e - 1] === CR) e--;
  return ev.toString('utf8', s, e);
}

/**
 * Cheap structural check of an event's data once a stream is committed (no JSON parse on the hot
 * path): the data must be one whole JSON object, so it starts with `{` and its last non-blank byte
 * is `}`. A frame cut inside a string or an object fails it. Events without data pass.
 */
export function dataLooksWhole(ev: Buffer): boolean {
  let at: number;
  if (asciiAt(ev, 0, 'data:')) at = 5;
  else {
    const nl = ev.indexOf('\ndata:');
    if (nl === -1) return true;
    at = nl + 6;
  }
  while (ev[at] === 0x20 || ev[at] === 0x09) at++;
  if (ev[at] !== 0x7b) return false;
  let end = ev.length - 1;
  while (end > at && (ev[end] === LF || ev[end] === CR || ev[end] === 0x20 || ev[end] === 0x09)) end--;
  return ev[end] === 0x7d;
}

/** Whether `buf` holds the ASCII `text` at `at`: a byte comparison, no string made per event. */
export function asciiAt(buf: Buffer, at: number, text: string): boolean {
  const n = text.length;
  if (at + n > buf.length) return false;
  for (let i = 0; i < n; i++) if (buf[at + i] !== text.charCodeAt(i)) return false;
  return true;
}
