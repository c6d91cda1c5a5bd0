// What the gateway adds to an answer's `usage` once the answer is settled: `cost`, the amount the
// wallet was charged for the request (the ledger's settlement, to the nano-dollar). The settlement is
// committed before the answer's last bytes go out (the JSON body; a stream's last usage event, held
// back until then), so the figure is the one actually charged, a capped or estimated charge included.
//
// `cost` is a JSON number written with the exact decimal digits of the integer nano-USD amount (never
// an exponent, at most nine decimals): no float is involved on the gateway's side, and it is the type
// OpenRouter-shaped clients read (their SDKs' schemas refuse a string `cost`). Every amount below
// $1,000,000 has at most 15 significant digits, so it survives a client's double unchanged.
import { nanoToDecimal } from '../money.ts';
import { memberValues, objectOpenAt, sseDataStart } from '../stream/json-key.ts';

const OPEN_OBJ = 0x7b;
const CLOSE_OBJ = 0x7d;

/** The members the gateway adds to the usage of an answer settled at `costNano` nano-USD. */
export function costMembers(costNano: bigint): Buffer {
  return Buffer.from(`"cost":${nanoToDecimal(costNano)}`);
}

/** Where an answer's usage object lies: a JSON body, or the data of one SSE event. `container`
 *  names the member holding it (the Responses `response` object of a streamed event); absent, it is
 *  a member of the top-level object. */
export interface UsagePlace {
  form: 'json' | 'event';
  container?: string;
}

/**
 * `buf` with `members` appended to its usage object (the last `usage` member, the one a JSON parser
 * reads), every other byte as it was. Unchanged when there is no usage object: none was sent, it is
 * null, or the bytes cannot be walked as one object (a frame the protocol reader let through).
 */
export function addToUsage(buf: Buffer, members: Buffer, place: UsagePlace): Buffer {
  const from = place.form === 'json' ? 0 : sseDataStart(buf);
  const open = from < 0 ? -1 : objectOpenAt(buf, from);
  if (open === -1) return buf;
  let holder = open;
  if (place.container !== undefined) {
    const boxes = memberValues(buf, open, place.container);
    const box = boxes?.at(-1);
    if (box === undefined || buf[box.start] !== OPEN_OBJ) return buf;
    holder = box.start;
  }
  const usage = memberValues(buf, holder, 'usage')?.at(-1);
  if (usage === undefined || buf[usage.start] !== OPEN_OBJ) return buf;
  const close = usage.end - 1;
  if (buf[close] !== CLOSE_OBJ) return buf;
  let k = close - 1;
  while (k > usage.start && isSpace(buf[k])) k--;
  const sep = buf[k] === OPEN_OBJ ? '' : ',';
  return Buffer.concat([buf.subarray(0, close), Buffer.from(sep), members, buf.subarray(close)]);
}

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
