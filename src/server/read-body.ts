// Reads a whole request body from uWS with a size cap, copying every chunk (uWS neuters the
// ArrayBuffer once the onData callback returns). Shared by the gateway and the simulator.
import type { HttpResponse } from 'uWebSockets.js';

const EMPTY = Buffer.alloc(0);

/**
 * Calls `done(body)` once the body is complete, or `tooLarge()` as soon as it passes `cap` bytes.
 * `answered()` says the response already went out (aborted, or answered early): stop collecting.
 */
export function readBody(res: HttpResponse, cap: number, answered: () => boolean, done: (body: Buffer) => void, tooLarge: () => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  res.onData((chunk, isLast) => {
    if (over || answered()) return;
    size += chunk.byteLength;
    if (size > cap) {
      over = true;
      tooLarge();
      return;
    }
    if (chunk.byteLength > 0) chunks.push(Buffer.from(chunk.slice(0)));
    if (!isLast) return;
    done(chunks.length === 0 ? EMPTY : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
  });
}
