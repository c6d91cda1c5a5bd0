// The upstream body of a JSON request, written from the client's own bytes: every top-level member
// the per-attempt rewrite left untouched (the same value, by identity, as the parsed request's) is
// copied from the request as it came, and only the members the rewrite changed or added (the model,
// the forced stream option, a reasoning field…) are serialised. A long conversation is never
// re-serialised whole, and its bytes reach the provider exactly as the client sent them. Members go
// out in the rewritten object's key order, as JSON.stringify would write them.
import type { JsonObject, JsonSource } from './types.ts';

/** Below this many bytes JSON.stringify of the whole body is cheaper than splicing (measured:
 *  equal near 1 KB; at 7 KB splicing takes half the time, at 70 KB a quarter). */
export const SPLICE_FROM_BYTES = 1024;

/** `"key":` of the keys requests use, encoded once (bounded: client-chosen keys are not kept). */
const KEY_HEADS = new Map<string, string>();
const KEY_HEADS_MAX = 256;

function keyHead(key: string): string {
  let h = KEY_HEADS.get(key);
  if (h === undefined) {
    h = `${JSON.stringify(key)}:`;
    if (KEY_HEADS.size < KEY_HEADS_MAX && key.length <= 64) KEY_HEADS.set(key, h);
  }
  return h;
}

/** `body` as JSON: the same document JSON.stringify(body) is, unchanged values byte for byte as the
 *  client sent them. Without a source (a body not read from bytes), or for a small body: JSON.stringify. */
export function upstreamJson(body: JsonObject, source: JsonSource | null): string | Buffer {
  if (source === null || source.raw.length < SPLICE_FROM_BYTES) return JSON.stringify(body);
  return spliced(body, source);
}

/** The splice itself (exported for tests: small bodies take it too there). */
export function spliced(body: JsonObject, source: JsonSource): Buffer {
  const { raw, members, original } = source;
  // Per member: the text to encode (separator, key, and the value when it changed), then the raw
  // span to copy after it ([-1, -1] when the value was serialised).
  const texts: string[] = [];
  const spans: number[] = [];
  let size = 1;
  let first = true;
  for (const key of Object.keys(body)) {
    const v = body[key];
    const span = members.get(key);
    let text: string;
    if (span !== undefined && v === original[key] && v !== undefined) {
      text = first ? `{${keyHead(key)}` : `,${keyHead(key)}`;
      spans.push(span[0], span[1]);
      size += span[1] - span[0];
    } else {
      // JSON.stringify leaves out members whose value has no JSON form (undefined, functions).
      const json = JSON.stringify(v) as string | undefined;
      if (json === undefined) continue;
      text = `${first ? '{' : ','}${keyHead(key)}${json}`;
      spans.push(-1, -1);
    }
    texts.push(text);
    size += Buffer.byteLength(text);
    first = false;
  }
  if (texts.length === 0) return Buffer.from('{}');
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (let i = 0; i < texts.length; i++) {
    at += out.write(texts[i] as string, at);
    const s = spans[2 * i] as number;
    if (s !== -1) at += raw.copy(out, at, s, spans[2 * i + 1] as number);
  }
  out[at++] = 0x7d; // }
  return at === out.length ? out : out.subarray(0, at);
}
