// Byte-level mutation, blind to structure: flips, inserts, deletions, repeats, truncation and the
// byte sequences UTF-8 decoders and line parsers disagree on.
import type { Rng } from './rng.ts';

/** Byte runs that are invalid or ambiguous UTF-8, or that end lines and strings. */
export const TRICKY_BYTES: readonly Buffer[] = [
  Buffer.from([0x00]),
  Buffer.from([0xff]),
  Buffer.from([0xfe, 0xff]),
  Buffer.from([0xef, 0xbb, 0xbf]),
  Buffer.from([0xc0, 0x80]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xf4, 0x90, 0x80, 0x80]),
  Buffer.from([0xe2, 0x80, 0xa8]),
  Buffer.from('\r'),
  Buffer.from('\n'),
  Buffer.from('\r\n'),
  Buffer.from('\n\n'),
  Buffer.from('"'),
  Buffer.from('\\'),
  Buffer.from('{'),
  Buffer.from('}'),
  Buffer.from('['),
  Buffer.from(']'),
  Buffer.from(':'),
  Buffer.from(','),
];

export type ByteMutation = (rng: Rng, b: Buffer) => Buffer;

const flip: ByteMutation = (rng, b) => {
  if (b.length === 0) return b;
  const out = Buffer.from(b);
  for (let i = rng.int(1, 8); i > 0; i--) {
    const at = rng.int(0, out.length - 1);
    out[at] = (out[at] as number) ^ (1 << rng.int(0, 7));
  }
  return out;
};

const setByte: ByteMutation = (rng, b) => {
  if (b.length === 0) return b;
  const out = Buffer.from(b);
  out[rng.int(0, out.length - 1)] = rng.int(0, 255);
  return out;
};

const insert: ByteMutation = (rng, b) => {
  const at = rng.int(0, b.length);
  const what = rng.chance(0.6) ? rng.pick(TRICKY_BYTES) : rng.bytes(rng.int(1, 16));
  return Buffer.concat([b.subarray(0, at), what, b.subarray(at)]);
};

const remove: ByteMutation = (rng, b) => {
  if (b.length === 0) return b;
  const at = rng.int(0, b.length - 1);
  const n = rng.int(1, Math.min(64, b.length - at));
  return Buffer.concat([b.subarray(0, at), b.subarray(at + n)]);
};

const repeat: ByteMutation = (rng, b) => {
  if (b.length === 0) return b;
  const at = rng.int(0, b.length - 1);
  const n = rng.int(1, Math.min(256, b.length - at));
  const times = rng.int(1, rng.chance(0.1) ? 2000 : 8);
  const run = b.subarray(at, at + n);
  return Buffer.concat([b.subarray(0, at + n), ...Array.from({ length: times }, () => run), b.subarray(at + n)]);
};

const truncate: ByteMutation = (rng, b) => b.subarray(0, rng.int(0, b.length));

export const BYTE_MUTATIONS: readonly (readonly [ByteMutation, number])[] = [
  [flip, 3],
  [setByte, 3],
  [insert, 4],
  [remove, 3],
  [repeat, 2],
  [truncate, 2],
];

/** Applies 1–3 byte mutations. */
export function mutateBytes(rng: Rng, b: Buffer): Buffer {
  let out = b;
  for (let i = rng.int(1, 3); i > 0; i--) out = rng.weighted(BYTE_MUTATIONS)(rng, out);
  return out;
}
