// Writes AWS event-stream messages (what Bedrock streams) by hand:
// prelude (total length, headers length), its CRC32, string headers, payload, the message CRC32.
// Deliberately not the SDK's codec the gateway decodes with, so a shared framing bug cannot pass.

const CRC_TABLE = new Uint32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_TABLE[n] = c >>> 0;
}

/** CRC-32 (IEEE 802.3), the checksum event-stream messages carry. */
export function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = (CRC_TABLE[(c ^ (buf[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** One event-stream message with string headers (type 7), in the order given. */
export function eventStreamMessage(headers: [string, string][], payload: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of headers) {
    const n = Buffer.from(name, 'utf8');
    const v = Buffer.from(value, 'utf8');
    const head = Buffer.alloc(1 + n.length + 1 + 2);
    head.writeUInt8(n.length, 0);
    n.copy(head, 1);
    head.writeUInt8(7, 1 + n.length);
    head.writeUInt16BE(v.length, 2 + n.length);
    parts.push(head, v);
  }
  const headerBytes = Buffer.concat(parts);
  const total = 12 + headerBytes.length + payload.length + 4;
  const out = Buffer.alloc(total);
  out.writeUInt32BE(total, 0);
  out.writeUInt32BE(headerBytes.length, 4);
  out.writeUInt32BE(crc32(out.subarray(0, 8)), 8);
  headerBytes.copy(out, 12);
  payload.copy(out, 12 + headerBytes.length);
  out.writeUInt32BE(crc32(out.subarray(0, total - 4)), total - 4);
  return out;
}

/** A `chunk` event carrying one Messages event JSON base64-encoded, with Bedrock's `p` padding. */
export function chunkMessage(eventJson: string): Buffer {
  const bytes = Buffer.from(eventJson, 'utf8').toString('base64');
  const payload = JSON.stringify({
    bytes,
    p: 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ'.slice(0, 4 + (bytes.length % 30)),
  });
  return eventStreamMessage(
    [
      [':event-type', 'chunk'],
      [':content-type', 'application/json'],
      [':message-type', 'event'],
    ],
    Buffer.from(payload, 'utf8'),
  );
}

/** An `exception` message (e.g. throttlingException) with Bedrock's `{"message": …}` payload. */
export function exceptionMessage(type: string, message: string): Buffer {
  return eventStreamMessage(
    [
      [':exception-type', type],
      [':content-type', 'application/json'],
      [':message-type', 'exception'],
    ],
    Buffer.from(JSON.stringify({ message }), 'utf8'),
  );
}
