// An incremental multipart/form-data reader: bytes go in as they arrive, in chunks of any size, and
// each part comes out once its closing delimiter has been seen — a text field with its value, a file
// with its size only. File bytes are never kept: between chunks the reader holds at most a delimiter's
// length of a file, a part's headers (bounded) and a text value (bounded). Every byte is looked at a
// bounded number of times, so its cost is linear in the body whatever the split.

/** One part of the form, reported when its closing delimiter has arrived. */
export interface FormPart {
  /** The `name` parameter of its Content-Disposition ('' when there is none). */
  name: string;
  /** The `filename` parameter, or null: a text field. */
  filename: string | null;
  /** A text field's value (UTF-8) when it is at most `TEXT_VALUE_MAX` bytes; null for a file or a longer value. */
  value: string | null;
  /** Bytes of the value. */
  size: number;
  /** Where the value lies in the whole body: [start, end). */
  start: number;
  end: number;
}

/** Hears the form as it is read; a listener that throws stops the reader (the error propagates from `push`). */
export interface FormListener {
  /** A part's headers were read; its value follows. */
  partStart?(name: string, filename: string | null): void;
  /** A part is complete. */
  part(part: FormPart): void;
  /** The closing delimiter (`--boundary--`) arrived. */
  end?(): void;
}

/** Longest text value kept whole; a longer one is reported with its size only. */
export const TEXT_VALUE_MAX = 64 * 1024;
/** Longest header block of one part. */
const HEADERS_MAX = 16 * 1024;

const CRLF = Buffer.from('\r\n');
const CRLF_CRLF = Buffer.from('\r\n\r\n');

/** Thrown for bytes that are not a multipart body this reader can follow. */
export class MalformedForm extends Error {}

type State = 'preamble' | 'after-delimiter' | 'headers' | 'value' | 'end';

export class FormReader {
  private state: State = 'preamble';
  /** Unclassified bytes carried to the next push, and the body offset of their first byte. */
  private carry: Buffer;
  private base: number;
  /** The part being read. */
  private name = '';
  private filename: string | null = null;
  private valueStart = 0;
  private valueSize = 0;
  private valueChunks: Buffer[] = [];
  /** Header bytes of the part being read that were searched already (all but the carried tail). */
  private headerChunks: Buffer[] = [];
  private headerSize = 0;
  private readonly delimiter: Buffer;

  private readonly listener: FormListener;
  constructor(boundary: string, listener: FormListener) {
    this.listener = listener;
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
    // The body starts as if after a line break, so the first delimiter may open it (RFC 2046).
    this.carry = CRLF;
    this.base = -2;
  }

  /** The closing delimiter was read: the form is complete. */
  get ended(): boolean {
    return this.state === 'end';
  }

  /** Reading a file part's value (its bytes pass without being kept). */
  get inFile(): boolean {
    return this.state === 'value' && this.filename !== null;
  }

  /** Reads the next bytes of the body. Throws MalformedForm, or what the listener throws. */
  push(chunk: Buffer): void {
    if (this.ended || chunk.length === 0) return;
    const buf = this.carry.length === 0 ? chunk : Buffer.concat([this.carry, chunk]);
    let at = 0;
    this.needMore = false;
    while (!this.needMore && !this.ended) at = this.step(buf, at);
    if (this.ended) {
      // The epilogue after the closing delimiter is not read.
      this.carry = Buffer.alloc(0);
      return;
    }
    // Only what is still unclassified is carried: at most a delimiter's length, or a header block's
    // last three bytes.
    this.base += at;
    this.carry = Buffer.from(buf.subarray(at));
  }

  /** Set by a step that cannot go on without more bytes. */
  private needMore = false;

  /** One step of the state machine from `at`: the position it read up to. */
  private step(buf: Buffer, at: number): number {
    switch (this.state) {
      case 'preamble':
      case 'value':
        return this.value(buf, at);
      case 'after-delimiter':
        return this.afterDelimiter(buf, at);
      case 'headers':
        return this.headers(buf, at);
      case 'end':
        return at;
    }
  }

  /** Waits for more bytes, keeping what is from `at` on. */
  private wait(at: number): number {
    this.needMore = true;
    return at;
  }

  /** A value (or the preamble) up to the next delimiter. */
  private value(buf: Buffer, at: number): number {
    const k = buf.indexOf(this.delimiter, at);
    if (k === -1) {
      // All but a delimiter's possible start at the end is value.
      const stop = Math.max(at, buf.length - this.delimiter.length + 1);
      if (this.state === 'value') this.take(buf, at, stop);
      return this.wait(stop);
    }
    if (this.state === 'value') {
      this.take(buf, at, k);
      this.finishPart(this.base + k);
    }
    this.state = 'after-delimiter';
    return k + this.delimiter.length;
  }

  /** After `--boundary`: `--` ends the form, optional spaces then CRLF begin a part. */
  private afterDelimiter(buf: Buffer, at: number): number {
    let i = at;
    if (buf.length - i < 2) return this.wait(at);
    if (buf[i] === 0x2d && buf[i + 1] === 0x2d) {
      this.state = 'end';
      this.listener.end?.();
      return i + 2;
    }
    while (i < buf.length && (buf[i] === 0x20 || buf[i] === 0x09)) i++;
    if (i - at > 64) throw new MalformedForm('a multipart delimiter line is not followed by a line break');
    if (buf.length - i < 2) return this.wait(at);
    if (buf[i] !== 0x0d || buf[i + 1] !== 0x0a)
      throw new MalformedForm('a multipart delimiter line is not followed by a line break');
    this.state = 'headers';
    return i + 2;
  }

  /** A part's header block, up to the blank line. The bytes searched already are set aside (all but
   *  the last three, where a blank line may begin), so a block arriving in many small pieces is not
   *  copied again with each one. */
  private headers(buf: Buffer, at: number): number {
    let end: number;
    let valueAt: number;
    if (this.headerSize === 0 && buf.length - at >= 2 && buf[at] === 0x0d && buf[at + 1] === 0x0a) {
      end = at;
      valueAt = at + 2;
    } else {
      end = buf.indexOf(CRLF_CRLF, at);
      if (end === -1) {
        // No blank line starts within the bound even with its four bytes here: the block is too long.
        if (this.headerSize + buf.length - at >= HEADERS_MAX + 4)
          throw new MalformedForm(`a multipart part's headers are longer than ${HEADERS_MAX} bytes`);
        const keep = Math.max(at, buf.length - 3);
        if (keep > at) {
          this.headerChunks.push(Buffer.from(buf.subarray(at, keep)));
          this.headerSize += keep - at;
        }
        return this.wait(keep);
      }
      valueAt = end + 4;
    }
    // Judged on the block, not on how much of it had arrived: the same verdict for any split.
    if (this.headerSize + end - at > HEADERS_MAX)
      throw new MalformedForm(`a multipart part's headers are longer than ${HEADERS_MAX} bytes`);
    const block = Buffer.concat([...this.headerChunks, buf.subarray(at, end)]).toString('utf8');
    this.headerChunks = [];
    this.headerSize = 0;
    const disposition = dispositionOf(block);
    this.name = disposition.name;
    this.filename = disposition.filename;
    this.valueStart = this.base + valueAt;
    this.valueSize = 0;
    this.valueChunks = [];
    this.state = 'value';
    this.listener.partStart?.(this.name, this.filename);
    return valueAt;
  }

  /** Counts (and for a text field keeps, up to its bound) value bytes [from, to) of `buf`. */
  private take(buf: Buffer, from: number, to: number): void {
    if (to <= from) return;
    const before = this.valueSize;
    this.valueSize += to - from;
    if (this.filename === null && before <= TEXT_VALUE_MAX) {
      if (this.valueSize <= TEXT_VALUE_MAX) this.valueChunks.push(Buffer.from(buf.subarray(from, to)));
      else this.valueChunks = [];
    }
  }

  private finishPart(end: number): void {
    const text = this.filename === null && this.valueSize <= TEXT_VALUE_MAX;
    const part: FormPart = {
      name: this.name,
      filename: this.filename,
      value: text ? Buffer.concat(this.valueChunks).toString('utf8') : null,
      size: this.valueSize,
      start: this.valueStart,
      end,
    };
    this.valueChunks = [];
    this.listener.part(part);
  }
}

/** `name` and `filename` of a part's Content-Disposition header (quoted or plain values). */
function dispositionOf(headerBlock: string): { name: string; filename: string | null } {
  for (const line of headerBlock.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon === -1 || line.slice(0, colon).trim().toLowerCase() !== 'content-disposition') continue;
    const value = line.slice(colon + 1);
    return { name: parameter(value, 'name') ?? '', filename: parameter(value, 'filename') };
  }
  return { name: '', filename: null };
}

function parameter(header: string, key: string): string | null {
  const m = new RegExp(`(?:^|;)\\s*${key}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, 'i').exec(header);
  if (m === null) return null;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? '');
}
