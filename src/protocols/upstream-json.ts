// The upstream body of a JSON request, written from the client's own bytes: every top-level member
// the per-attempt rewrite left untouched (the same value, by identity, as the parsed request's) is
// copied from the request as it came, and only the members the rewrite changed or added (the model,
// the forced stream option, a reasoning field…) are serialised. A long conversation is never
// re-serialised whole, and its bytes reach the provider exactly as the client sent them. Members go
// out in the rewritten object's key order, as JSON.stringify would write them.
import type { JsonObject, JsonSource } from './types.ts';

/** `body` as JSON bytes; the same document JSON.stringify(body) is, unchanged values byte for byte
 *  as the client sent them. Without a source (a body not read from bytes): JSON.stringify. */
export function upstreamJson(body: JsonObject, source: JsonSource | null): string | Buffer {
  if (source === null) return JSON.stringify(body);
  const { raw, members, original } = source;
  // Pieces: a string to encode, or the index of a raw span (its start; the end follows).
  const texts: string[] = [];
  const spans: number[] = [];
  let size = 1;
  let sep = '{';
  for (const key of Object.keys(body)) {
    const v = body[key];
    const span = members.get(key);
    if (span !== undefined && v === original[key] && v !== undefined) {
      const head = `${sep}${JSON.stringify(key)}:`;
      texts.push(head);
      spans.push(span[0], span[1]);
      size += Buffer.byteLength(head) + (span[1] - span[0]);
    } else {
      // JSON.stringify leaves out members whose value has no JSON form (undefined, functions).
      const json = JSON.stringify(v) as string | undefined;
      if (json === undefined) continue;
      const text = `${sep}${JSON.stringify(key)}:${json}`;
      texts.push(text);
      spans.push(-1, -1);
      size += Buffer.byteLength(text);
    }
    sep = ',';
  }
  if (texts.length === 0) return '{}';
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
