// The simulator's own HTTP endpoints under /_sim/, so a separately running simulator can be
// inspected and scripted: GET|DELETE /_sim/requests, POST|DELETE /_sim/script, GET /_sim/health.
import { BehaviourError, parseBehaviour } from './behaviour.ts';
import type { SimState } from './state.ts';

export interface ControlReply {
  status: number;
  body: string;
}

const ok = (body: unknown): ControlReply => ({ status: 200, body: JSON.stringify(body) });
const problem = (status: number, message: string): ControlReply => ({
  status,
  body: JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: null } }),
});

/** Whether the control request needs its body before it can be answered. */
export function controlNeedsBody(method: string, name: string): boolean {
  return method === 'POST' && name === 'script';
}

export function controlReply(state: SimState, method: string, name: string, raw?: Buffer): ControlReply {
  if (name === 'health' && method === 'GET') return ok({ ok: true });
  if (name === 'requests') {
    if (method === 'GET') return { status: 200, body: state.recorder.toJson() };
    if (method === 'DELETE') return ok({ cleared: state.recorder.clear() });
  }
  if (name === 'script') {
    if (method === 'DELETE') {
      state.scripts.clear();
      return ok({ ok: true });
    }
    if (method === 'POST') return script(state, raw ?? Buffer.alloc(0));
  }
  return problem(404, `Invalid URL (${method} /_sim/${name})`);
}

function script(state: SimState, raw: Buffer): ControlReply {
  let input: unknown;
  try {
    input = JSON.parse(raw.toString('utf8'));
  } catch {
    return problem(400, 'body must be JSON: {model, behaviour, times?}');
  }
  if (typeof input !== 'object' || input === null)
    return problem(400, 'body must be an object: {model, behaviour, times?}');
  const { model, behaviour, times } = input as Record<string, unknown>;
  if (typeof model !== 'string' || model === '') return problem(400, 'model must be a non-empty string');
  if (times !== undefined && (typeof times !== 'number' || !Number.isInteger(times) || times < 1)) {
    return problem(400, 'times must be a positive integer');
  }
  try {
    state.scripts.add(model, parseBehaviour(behaviour, 'behaviour'), times);
  } catch (err) {
    if (err instanceof BehaviourError) return problem(400, err.message);
    throw err;
  }
  return ok({ ok: true });
}
