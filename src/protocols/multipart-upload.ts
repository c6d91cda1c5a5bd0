// The /v1/images/edits upload: multipart, streamed through rather than buffered whole. Only the bytes
// up to the end of the `model` field are held (routing needs the model before anything is sent);
// the rest flows from the client to the upstream with backpressure. An attempt may be retried only
// while no byte past that held prefix has been handed to an upstream (a connect failure, say).
import { Readable } from 'node:stream';

const CRLF_CRLF = Buffer.from('\r\n\r\n');

export function boundaryOf(contentType: string | undefined): string | null {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return null;
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return m ? (m[1] ?? m[2] ?? null) : null;
}

interface FieldSpan {
  name: string;
  filename: string | null;
  /** Value bytes [start, end) inside the prefix. */
  start: number;
  end: number;
}

export class MultipartUpload {
  /** Small text fields seen in the prefix (model, prompt, n, stream, …). */
  readonly fields = new Map<string, string>();
  /** File parts seen in the prefix (count only; later ones are not inspected). */
  filesInPrefix = 0;
  /** The whole body was read while looking for `model` (every field is then in `fields`). */
  ended = false;
  private readonly delimiter: Buffer;
  private chunks: Buffer[] = [];
  private prefix = Buffer.alloc(0);
  private cursor = 0;
  private modelSpan: FieldSpan | null = null;
  private liveTaken = false;
  private iterator: AsyncIterator<Buffer> | null = null;

  constructor(
    private readonly source: Readable,
    boundary: string,
    private readonly maxPrefixBytes: number,
  ) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`);
  }

  /** Reads until the `model` field is complete. Resolves false when the body ended without one. */
  async readUntilModel(): Promise<boolean> {
    this.iterator = this.source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    for (;;) {
      const next = await this.iterator.next();
      if (next.done) {
        this.ended = true;
        this.joinPrefix();
        this.scan(true);
        return this.modelSpan !== null;
      }
      this.chunks.push(next.value);
      this.joinPrefix();
      if (this.prefix.length > this.maxPrefixBytes) throw new Error('model field not found within the upload limit');
      if (this.scan(false)) return true;
    }
  }

  get model(): string | null {
    return this.fields.get('model') ?? null;
  }

  /** True while no live byte has gone to an upstream: a new attempt can still send the whole body. */
  get replayable(): boolean {
    return !this.liveTaken;
  }

  /** A fresh request body for one attempt: the held prefix with `model` replaced, then the live rest. */
  body(upstreamModel: string): Readable {
    const span = this.modelSpan;
    const head = span
      ? Buffer.concat([this.prefix.subarray(0, span.start), Buffer.from(upstreamModel), this.prefix.subarray(span.end)])
      : this.prefix;
    const it = this.iterator;
    let sentHead = false;
    const self = this;
    return new Readable({
      async read() {
        if (!sentHead) {
          sentHead = true;
          this.push(head);
          return;
        }
        if (!it) {
          this.push(null);
          return;
        }
        try {
          self.liveTaken = true;
          const next = await it.next();
          this.push(next.done ? null : next.value);
        } catch (err) {
          this.destroy(err instanceof Error ? err : new Error(String(err)));
        }
      },
    });
  }

  private joinPrefix(): void {
    if (this.chunks.length === 0) return;
    this.prefix = Buffer.concat([this.prefix, ...this.chunks]);
    this.chunks = [];
  }

  /** Parses complete parts from the cursor on; true once the model field is complete. */
  private scan(atEnd: boolean): boolean {
    const buf = this.prefix;
    const dashBoundary = this.delimiter.subarray(2); // "--boundary"
    if (this.cursor === 0) {
      const first = buf.indexOf(dashBoundary);
      if (first === -1) return false;
      this.cursor = first;
    }
    for (;;) {
      // At this.cursor: "--boundary" then "\r\n" (a part follows) or "--" (the end).
      const afterDelim = this.cursor + dashBoundary.length;
      if (buf.length < afterDelim + 2) return false;
      if (buf[afterDelim] === 0x2d && buf[afterDelim + 1] === 0x2d) return this.modelSpan !== null;
      const headersStart = afterDelim + 2;
      const headersEnd = buf.indexOf(CRLF_CRLF, headersStart);
      if (headersEnd === -1) return false;
      const bodyStart = headersEnd + 4;
      const bodyEnd = buf.indexOf(this.delimiter, bodyStart);
      if (bodyEnd === -1) return atEnd ? this.modelSpan !== null : false;
      const headers = buf.toString('utf8', headersStart, headersEnd);
      const name = /name="([^"]*)"/i.exec(headers)?.[1] ?? '';
      const filename = /filename="([^"]*)"/i.exec(headers)?.[1] ?? null;
      if (filename === null) {
        if (bodyEnd - bodyStart <= 64 * 1024) this.fields.set(name, buf.toString('utf8', bodyStart, bodyEnd));
        if (name === 'model') this.modelSpan = { name, filename, start: bodyStart, end: bodyEnd };
      } else {
        this.filesInPrefix++;
      }
      this.cursor = bodyEnd + 2; // skip the CRLF before "--boundary"
      if (this.modelSpan) return true;
    }
  }
}
