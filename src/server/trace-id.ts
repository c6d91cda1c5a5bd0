// Request ids (X-Pi-Trace-Id): UUIDv7 — a millisecond timestamp then random bits — so ids sort by
// time and the ledger's and request log's trace-id indexes grow at their end instead of taking
// inserts on random pages. Random bytes come from a pool refilled in bulk.
import { randomFillSync } from 'node:crypto';

const POOL = Buffer.allocUnsafe(10 * 512);
let at = POOL.length;

export function newTraceId(nowMs: number = Date.now()): string {
  if (at + 10 > POOL.length) {
    randomFillSync(POOL);
    at = 0;
  }
  const r = POOL.subarray(at, at + 10);
  at += 10;
  r[0] = ((r[0] as number) & 0x0f) | 0x70; // version 7
  r[2] = ((r[2] as number) & 0x3f) | 0x80; // RFC 9562 variant
  const ts = nowMs.toString(16).padStart(12, '0');
  const rand = r.toString('hex');
  return `${ts.slice(0, 8)}-${ts.slice(8, 12)}-${rand.slice(0, 4)}-${rand.slice(4, 8)}-${rand.slice(8, 20)}`;
}
