// Bedrock's InvokeModelWithResponseStream answer (`application/vnd.amazon.eventstream`) as the
// Messages protocol's SSE. The answer is a sequence of binary event-stream messages: a 12-byte prelude
// (total length, headers length, prelude CRC), headers, payload, message CRC. This file only finds
// where each message ends (they arrive split at any byte boundary); the AWS SDK's codec
// (@smithy/core's EventStreamCodec) checks both CRCs and reads the headers. A `chunk` event's payload
// is `{"bytes": "<base64>"}` holding one Anthropic Messages event JSON: it goes out byte for byte as
// `event: <its type>\ndata: <the JSON>\n\n`. An `exception` (or `error`) message — throttling, an
// internal or model-stream error — becomes a Messages `error` event, which the stream tap reads as an
// in-band error: before the commit the gateway fails over, after it the client gets the error event.
import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/core/serde';
import { anthropicErrorType, bedrockMessage, messagesError } from './bedrock-errors.ts';
import type { StreamDecoder } from './types.ts';

/** Bedrock's media type for event streams. */
export const EVENT_STREAM_TYPE = 'application/vnd.amazon.eventstream';

const PRELUDE = 12;
/** Prelude + message CRC: the smallest message. */
const MIN_MESSAGE = 16;
/** Far above any real chunk (Bedrock's own limit for a message is 16 MiB). */
const MAX_MESSAGE = 16 * 1024 * 1024;
const NOTHING = Buffer.alloc(0);

type Message = ReturnType<EventStreamCodec['decode']>;
type MessageHeaders = Message['headers'];

function header(headers: MessageHeaders, name: string): string | null {
  const h = headers[name];
  return h && h.type === 'string' ? h.value : null;
}

export class BedrockStreamDecoder implements StreamDecoder {
  private readonly codec = new EventStreamCodec(toUtf8, fromUtf8);
  /** The unfinished message's bytes, in the chunks they came in: joined once, when it is whole. */
  private held: Buffer[] = [];
  private heldBytes = 0;
  failure: string | null = null;

  get pendingBytes(): number {
    return this.heldBytes;
  }

  push(chunk: Buffer): Buffer {
    if (this.failure) return NOTHING;
    let buf: Buffer;
    if (this.heldBytes === 0) buf = chunk;
    else {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      // A large message arrives in many reads: wait until it is whole (or its length is refused)
      // instead of joining everything held on every read.
      const total = this.heldBytes >= 4 ? this.heldLength() : -1;
      if (total === -1 || (total >= MIN_MESSAGE && total <= MAX_MESSAGE && this.heldBytes < total)) return NOTHING;
      buf = Buffer.concat(this.held, this.heldBytes);
      this.held = [];
      this.heldBytes = 0;
    }
    const out: Buffer[] = [];
    while (buf.length >= PRELUDE) {
      const total = buf.readUInt32BE(0);
      if (total < MIN_MESSAGE || total > MAX_MESSAGE) {
        this.fail(`an event-stream message claims ${total} bytes`);
        buf = NOTHING;
        break;
      }
      if (buf.length < total) break;
      const frame = buf.subarray(0, total);
      buf = buf.subarray(total);
      let message: Message;
      try {
        message = this.codec.decode(frame);
      } catch (err) {
        this.fail(err instanceof Error ? err.message : String(err));
        buf = NOTHING;
        break;
      }
      const sse = this.toSse(message);
      if (sse === null) {
        buf = NOTHING;
        break;
      }
      if (sse.length > 0) out.push(sse);
    }
    // Keep only the bytes of the unfinished message, never the whole chunk it came in.
    if (buf.length > 0) {
      this.held = [Buffer.from(buf)];
      this.heldBytes = buf.length;
    }
    return out.length === 0 ? NOTHING : out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out);
  }

  /** The held message's declared length (its first four bytes, which may span chunks). */
  private heldLength(): number {
    const first = this.held[0] as Buffer;
    if (first.length >= 4) return first.readUInt32BE(0);
    const joined = Buffer.concat(this.held, this.heldBytes);
    this.held = [joined];
    return joined.readUInt32BE(0);
  }

  private fail(why: string): void {
    this.failure = why;
    this.held = [];
    this.heldBytes = 0;
  }

  /** One message as SSE bytes: an event, an error event, nothing (an event we do not relay), or
   *  null when it is unreadable (the decoder has failed). */
  private toSse(message: Message): Buffer | null {
    const kind = header(message.headers, ':message-type');
    const payload = Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength);
    if (kind === 'exception') {
      const name = header(message.headers, ':exception-type') ?? 'exception';
      const text = bedrockMessage(payload) ?? `Amazon Bedrock reported ${name} in the stream`;
      return errorEvent(anthropicErrorType(name, null), text);
    }
    if (kind === 'error') {
      const code = header(message.headers, ':error-code') ?? 'error';
      const text = header(message.headers, ':error-message') ?? `Amazon Bedrock reported ${code} in the stream`;
      return errorEvent(anthropicErrorType(code, null), text);
    }
    if (kind !== 'event' || header(message.headers, ':event-type') !== 'chunk') return NOTHING;
    return this.chunkEvent(payload);
  }

  private chunkEvent(payload: Buffer): Buffer | null {
    let bytes: unknown;
    try {
      bytes = (JSON.parse(payload.toString('utf8')) as Record<string, unknown>)['bytes'];
    } catch {
      bytes = undefined;
    }
    if (typeof bytes !== 'string') {
      this.fail('a chunk event without its "bytes" field');
      return null;
    }
    const data = Buffer.from(bytes, 'base64');
    let type: unknown;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data.toString('utf8'));
      type = (parsed as Record<string, unknown>)['type'];
    } catch {
      type = undefined;
    }
    if (typeof type !== 'string' || !/^[a-z_]+$/.test(type)) {
      this.fail('a chunk whose bytes are not a Messages event');
      return null;
    }
    // An SSE data line cannot hold a line break: JSON with one (only ever as whitespace between
    // tokens) goes out re-serialised; every other event byte for byte.
    const line = data.includes(0x0a) || data.includes(0x0d) ? Buffer.from(JSON.stringify(parsed)) : data;
    return Buffer.concat([Buffer.from(`event: ${type}\ndata: `), line, Buffer.from('\n\n')]);
  }
}

function errorEvent(type: string, message: string): Buffer {
  return Buffer.from(`event: error\ndata: ${messagesError(type, message)}\n\n`);
}
