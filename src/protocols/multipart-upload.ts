// The /v1/images/edits upload: multipart, streamed through rather than buffered whole. Only a prefix
// is held — up to the end of the `model` field (routing needs the model before anything is sent) and
// the text fields right after it, until the first file part begins — and the rest flows from the
// client to the upstream with backpressure. An attempt may be retried only while no byte past that
// held prefix has been handed to an upstream (a connect failure, say).
//
// Every part, held or streamed, goes through one FormReader and the request's field rules. A field
// the rules refuse after the prefix (it came after a file: reading it first would mean holding the
// file) fails the upload as it passes: the chunk that completes it is never forwarded, the upstream
// body ends in an error (undici aborts the exchange, so no provider ever receives the whole form and
// cannot act on it), the client's body stream is let go, and `refusal` tells the attempt loop that the
// client's input, not the provider, ended the attempt.
import { Readable } from 'node:stream';
import { GatewayError } from '../errors.ts';
import { type FormListener, type FormPart, FormReader, MalformedForm } from './form-parts.ts';

/** Text read ahead past `model` while looking for the first file part, at most (the rest is checked as it streams). */
const READ_AHEAD_MAX = 64 * 1024;

export function boundaryOf(contentType: string | undefined): string | null {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return null;
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return m ? (m[1] ?? m[2] ?? null) : null;
}

export class MultipartUpload {
  /** The whole form was read while holding the prefix: every field is known. */
  formComplete = false;
  /** The first `model` text field, once read. */
  model: string | null = null;
  /** Why the gateway refused the upload part-way (a field after the prefix broke a rule), or null. */
  refusal: GatewayError | null = null;
  private readonly reader: FormReader;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private prefix = Buffer.alloc(0);
  private modelSpan: FormPart | null = null;
  private liveTaken = false;
  private iterator: AsyncIterator<Buffer> | null = null;

  private readonly source: Readable;
  private readonly maxPrefixBytes: number;
  constructor(source: Readable, boundary: string, maxPrefixBytes: number, rules: FormListener) {
    this.source = source;
    this.maxPrefixBytes = maxPrefixBytes;
    this.reader = new FormReader(boundary, {
      partStart: (name, filename) => rules.partStart?.(name, filename),
      part: (part) => {
        rules.part(part);
        if (this.modelSpan === null && part.name === 'model' && part.filename === null) {
          this.modelSpan = part;
          this.model = part.value;
        }
      },
      end: () => rules.end?.(),
    });
  }

  /**
   * Reads and holds the prefix: until the `model` field is complete and then on through the text
   * fields that follow it, stopping where a file part begins, the form ends or READ_AHEAD_MAX bytes
   * were read past the model. Resolves false when the form ended without a model. Throws GatewayError
   * for a form the rules or the reader refuse.
   */
  async readPrefix(): Promise<boolean> {
    this.iterator = this.source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    try {
      for (;;) {
        const span = this.modelSpan;
        if (span !== null && (this.reader.ended || this.reader.inFile || this.size - span.end > READ_AHEAD_MAX)) break;
        const next = await this.iterator.next();
        if (next.done) {
          if (!this.reader.ended) throw new MalformedForm('the multipart body ended before its closing boundary');
          break;
        }
        this.chunks.push(next.value);
        this.size += next.value.length;
        this.reader.push(next.value);
        // Judged on where the model ends, not on how the bytes were read: one large read and many
        // small ones give the same verdict.
        const found = this.modelSpan as FormPart | null;
        if (found === null ? this.size > this.maxPrefixBytes : found.end > this.maxPrefixBytes)
          throw new GatewayError('invalid_request', 'model field not found within the upload limit');
      }
    } catch (err) {
      throw refusalOf(err);
    }
    this.formComplete = this.reader.ended;
    this.prefix = Buffer.concat(this.chunks);
    this.chunks.length = 0;
    return this.modelSpan !== null;
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
    let sentHead = false;
    const self = this;
    return new Readable({
      async read() {
        if (!sentHead) {
          sentHead = true;
          this.push(head);
          return;
        }
        try {
          const chunk = await self.nextLive();
          this.push(chunk);
        } catch (err) {
          this.destroy(err instanceof Error ? err : new Error(String(err)));
        }
      },
    });
  }

  /** The next chunk of the live rest after the rules have seen it, or null at its end. A refused
   *  chunk is never returned: the upload fails with the refusal instead. */
  private async nextLive(): Promise<Buffer | null> {
    const it = this.iterator;
    if (it === null) return null;
    if (this.refusal !== null) throw this.refusal;
    this.liveTaken = true;
    const next = await it.next();
    try {
      if (next.done) {
        if (!this.reader.ended) throw new MalformedForm('the multipart body ended before its closing boundary');
        return null;
      }
      this.reader.push(next.value);
      return next.value;
    } catch (err) {
      this.refusal = refusalOf(err);
      // Let the client's body go: nothing more of it is read or forwarded.
      void it.return?.();
      throw this.refusal;
    }
  }
}

/** The client's error for a form that could not be read or broke a rule. */
function refusalOf(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof MalformedForm)
    return new GatewayError('invalid_request', `the multipart body is malformed: ${err.message}`);
  throw err;
}
