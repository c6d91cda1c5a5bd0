// The response `model` rule shared by the protocol modules (spec: "model → slug in the JSON body and
// every SSE event"; X-Pi-Model equals the body's model): the provider's value is replaced by the
// slug, and when the provider sent no `model` at all the member is added, so the client always reads
// the slug. Only the reported value (never the added one) feeds X-Pi-Upstream-Model.
import { findStringValue, findValueStart, insertMember, objectOpenAt, readString, replaceSpan, valueEnd } from '../stream/json-key.ts';

export interface ModelRewrite {
  out: Buffer;
  /** The model the provider reported (a string `model` found), else null. */
  reported: string | null;
}

/**
 * `buf` holds one JSON object starting at `from` (0 for a body, the data start for an SSE event).
 * `model` is looked up at `depth` (1 = that object); at depth 2 it lives in the object value of
 * `container` (message_start's `message`, the Responses `response`), where it is added when absent.
 */
export function slugModel(buf: Buffer, slugJson: Buffer, from: number, depth: 1 | 2, container?: string): ModelRewrite {
  const span = findStringValue(buf, 'model', depth, Math.max(0, from));
  if (span) return { out: replaceSpan(buf, span, slugJson), reported: readString(buf, span) };
  const at = findValueStart(buf, 'model', depth);
  if (at !== -1) {
    // Present but not a string (null): still the slug for the client; nothing was reported.
    const end = valueEnd(buf, at);
    return { out: end === -1 ? buf : replaceSpan(buf, { start: at, end }, slugJson), reported: null };
  }
  let open: number;
  if (depth === 1) open = from < 0 ? -1 : objectOpenAt(buf, from);
  else {
    const v = container === undefined ? -1 : findValueStart(buf, container, 1);
    open = v !== -1 && buf[v] === 0x7b ? v : -1;
  }
  return { out: open === -1 ? buf : insertMember(buf, open, 'model', slugJson), reported: null };
}
