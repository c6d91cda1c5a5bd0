// Incremental SSE event splitter: feeds on upstream chunks at any boundary and hands out whole events
// (each with its terminating blank line). Linear in the bytes fed, whatever the chunking: each byte is
// scanned once, the chunks of an unfinished event are kept in a list (never re-concatenated per chunk)
// and joined once, when the event ends. An event may hold at most `maxEventBytes`: past that the
// splitter stops (`tooLarge`), so a provider that never ends an event costs bounded memory and CPU.
// Splitting raw bytes is safe for UTF-8: the newline byte never occurs inside a multi-byte character.
// Events end at a blank line of LF or CRLF line ends; CR-only line ends, which the SSE format allows
// and no provider sends, are not split: such a stream meets the event bound and fails as oversized.

const LF = 0x0a;
const CR = 0x0d;
const NONE = -1;

export class SseSplitter {
  /** The chunks (views) of the event not finished yet, in order. */
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** The last two bytes held (NONE when absent): a boundary may begin there and end in the next chunk. */
  private last = NONE;
  private beforeLast = NONE;
  private over = false;

  readonly maxEventBytes: number;
  /** `maxEventBytes`: the most bytes one event may hold (its blank line included). */
  constructor(maxEventBytes = Number.POSITIVE_INFINITY) {
    this.maxEventBytes = maxEventBytes;
  }

  /** Bytes held waiting for the end of an event. */
  get pendingBytes(): number {
    return this.heldBytes;
  }

  /** An event went past `maxEventBytes`: it and everything after it were dropped. */
  get tooLarge(): boolean {
    return this.over;
  }

  /** Feed a chunk; returns the complete events it finished (possibly none), in order. Once an event
   *  is too large, returns the events before it and then nothing more. */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    if (this.over) return out;
    let start = 0;
    let end = this.heldBytes > 0 ? this.endAcross(chunk) : NONE;
    for (;;) {
      if (end === NONE) end = boundaryEnd(chunk, start);
      if (end === NONE) break;
      const event = this.heldBytes > 0 ? this.joined(chunk.subarray(0, end)) : chunk.subarray(start, end);
      if (event.length > this.maxEventBytes) return this.stop(out);
      out.push(event);
      start = end;
      end = NONE;
    }
    if (start < chunk.length) {
      if (this.heldBytes + chunk.length - start > this.maxEventBytes) return this.stop(out);
      this.hold(chunk.subarray(start));
    }
    return out;
  }

  /** Bytes left when the stream ended without a final blank line (an unterminated event), or null. */
  flush(): Buffer | null {
    const t = this.heldBytes > 0 ? this.joined(Buffer.alloc(0)) : null;
    return t && t.length > 0 ? t : null;
  }

  /** Where an event ends in `chunk` when its blank line began in the held bytes ("\n" | "\n",
   *  "\n" | "\r\n", "\n\r" | "\n"), or NONE. */
  private endAcross(chunk: Buffer): number {
    const first = chunk[0];
    if (this.last === LF) {
      if (first === LF) return 1;
      if (first === CR && chunk[1] === LF) return 2;
    } else if (this.last === CR && this.beforeLast === LF && first === LF) return 1;
    return NONE;
  }

  private hold(part: Buffer): void {
    this.held.push(part);
    this.heldBytes += part.length;
    if (part.length >= 2) {
      this.beforeLast = part[part.length - 2] as number;
      this.last = part[part.length - 1] as number;
    } else {
      this.beforeLast = this.last;
      this.last = part[0] as number;
    }
  }

  /** The held bytes followed by `tail`, in one buffer; nothing is held afterwards. */
  private joined(tail: Buffer): Buffer {
    const parts = this.held;
    parts.push(tail);
    const event = Buffer.concat(parts, this.heldBytes + tail.length);
    this.held = [];
    this.heldBytes = 0;
    this.last = NONE;
    this.beforeLast = NONE;
    return event;
  }

  private stop(out: Buffer[]): Buffer[] {
    this.over = true;
    this.held = [];
    this.heldBytes = 0;
    return out;
  }
}

/** Index just after the first blank line ("\n\n" or "\n\r\n") wholly inside `buf` from `from`, or NONE. */
function boundaryEnd(buf: Buffer, from: number): number {
  let i = from;
  for (;;) {
    const nl = buf.indexOf(LF, i);
    if (nl === -1) return NONE;
    const next = buf[nl + 1];
    if (next === LF) return nl + 2;
    if (next === CR && buf[nl + 2] === LF) return nl + 3;
    i = nl + 1;
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
