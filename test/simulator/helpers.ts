// Shared helpers for the simulator tests: start one on port 0 with teardown, post JSON, parse SSE.
import { startSimulator, type Simulator, type SimulatorOptions } from '../../src/simulator/server.ts';

export interface TapLike {
  teardown(fn: () => unknown): void;
}

export async function startSim(t: TapLike, opts: SimulatorOptions = {}): Promise<Simulator> {
  const sim = await startSimulator(opts);
  t.teardown(() => sim.close());
  return sim;
}

export function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  const init: RequestInit = {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
  if (signal) init.signal = signal;
  return fetch(url, init);
}

export interface SseEvent {
  event: string | undefined;
  data: string;
}

/** Splits an SSE body into events (blank-line separated; `event:` and `data:` lines). */
export function parseSse(text: string): SseEvent[] {
  const out: SseEvent[] = [];
  for (const block of text.split('\n\n')) {
    if (block === '') continue;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    out.push({ event, data: data.join('\n') });
  }
  return out;
}

/** The JSON data of each event, skipping `[DONE]`. */
export function sseJson(text: string): Record<string, unknown>[] {
  return parseSse(text)
    .filter((e) => e.data !== '[DONE]')
    .map((e) => JSON.parse(e.data) as Record<string, unknown>);
}

/** The code of the socket error under a fetch failure (undici wraps it in `cause`). */
export function socketErrorCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e instanceof Error; i++) {
    const code = (e as Error & { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'ABORT_ERR') return code;
    e = (e as Error & { cause?: unknown }).cause;
  }
  return undefined;
}

/** Reads a body chunk by chunk, noting when each chunk arrived (ms since `t0`). */
export async function readTimed(res: Response, t0: number): Promise<{ at: number; text: string }[]> {
  const out: { at: number; text: string }[] = [];
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return out;
    out.push({ at: performance.now() - t0, text: dec.decode(value, { stream: true }) });
  }
}

interface UserTurn {
  role: 'user';
  content: string;
}
export const CHAT: { model: string; messages: UserTurn[] } = {
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: 'Say hello' }],
};
export const MESSAGES: { model: string; max_tokens: number; messages: UserTurn[] } = {
  model: 'claude-sim-1',
  max_tokens: 256,
  messages: [{ role: 'user', content: 'Say hello' }],
};
