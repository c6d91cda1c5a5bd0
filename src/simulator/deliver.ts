// Plays a planned reply on an exchange with the scripted timing and faults: ttfb, reset points,
// first-event delay, per-chunk delay, stalls and a malformed frame. Content events with no delay
// between them go out in one corked batch.
import type { Behaviour } from './behaviour.ts';
import type { Exchange } from './exchange.ts';
import type { StreamEvents } from './wire.ts';
import type { HeaderList } from './wire-headers.ts';

export type Plan =
  | { kind: 'json'; status: number; headers: HeaderList; body: string }
  | { kind: 'stream'; status: number; headers: HeaderList; events: StreamEvents; malformed: string };

function resetPoint(b: Behaviour): Behaviour['reset'] {
  return b.reset ?? (b.resetAfterChunks !== undefined ? 'after_chunks' : undefined);
}

export function deliver(ex: Exchange, plan: Plan, b: Behaviour): void {
  ex.after(b.ttfbMs ?? 0, () => {
    if (resetPoint(b) === 'before_head') ex.reset();
    else if (plan.kind === 'json') deliverJson(ex, plan, b);
    else deliverStream(ex, plan, b);
  });
}

/**
 * JSON replies: a reset after the head sends the head (plus half the body for the later reset
 * points) then destroys the socket; a stall after 0 chunks never answers, after more sends the head
 * and half the body; `malformedAfterChunks` sends a complete response whose body is cut in half.
 */
function deliverJson(ex: Exchange, plan: Extract<Plan, { kind: 'json' }>, b: Behaviour): void {
  const reset = resetPoint(b);
  if (reset !== undefined || b.stallAfterChunks !== undefined) {
    if (reset === undefined && b.stallAfterChunks === 0) return;
    const bytes = Buffer.from(plan.body);
    ex.beginSized(plan.status, plan.headers, bytes.length);
    if (reset !== 'after_head') ex.writeBytes(bytes.subarray(0, bytes.length >> 1));
    if (reset !== undefined) ex.reset();
    return;
  }
  if (b.malformedAfterChunks !== undefined) {
    const bytes = Buffer.from(plan.body);
    ex.sendWhole(plan.status, plan.headers, bytes.subarray(0, bytes.length >> 1));
    return;
  }
  ex.sendWhole(plan.status, plan.headers, plan.body);
}

function deliverStream(ex: Exchange, plan: Extract<Plan, { kind: 'stream' }>, b: Behaviour): void {
  const { preamble, content, tail } = plan.events;
  const n = content.length;
  const reset = resetPoint(b);
  const clamp = (v: number | undefined) => (v === undefined ? undefined : Math.min(v, n));
  const resetAt =
    reset === 'after_preamble' ? 0 : reset === 'after_chunks' ? clamp(b.resetAfterChunks ?? 1) : undefined;
  const stallAt = clamp(b.stallAfterChunks);
  const malformedAt = clamp(b.malformedAfterChunks);
  const delay = b.chunkDelayMs ?? 0;
  const firstDelay = b.firstEventDelayMs ?? 0;

  const pump = (start: number, batch: string[]): void => {
    for (let i = start; ; i++) {
      if (malformedAt === i) batch.push(plan.malformed);
      if (resetAt === i) {
        ex.write(batch);
        ex.reset();
        return;
      }
      if (stallAt === i) {
        ex.write(batch);
        return;
      }
      if (i === n) {
        for (const e of tail) batch.push(e);
        ex.write(batch, true);
        return;
      }
      if (delay > 0) {
        ex.write(batch);
        ex.after(delay, () => pump(i + 1, [content[i] as string]));
        return;
      }
      batch.push(content[i] as string);
    }
  };

  const sized = firstDelay > 0 || reset === 'after_head';
  if (!sized) {
    ex.beginChunked(plan.status, plan.headers);
    pump(0, preamble.slice());
    return;
  }
  let total = 0;
  for (const list of [preamble, content, tail]) for (const e of list) total += Buffer.byteLength(e);
  if (malformedAt !== undefined) total += Buffer.byteLength(plan.malformed);
  ex.beginSized(plan.status, plan.headers, total);
  if (reset === 'after_head') {
    ex.reset();
    return;
  }
  ex.after(firstDelay, () => pump(0, preamble.slice()));
}
