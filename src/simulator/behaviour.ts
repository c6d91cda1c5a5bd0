// Scripted upstream behaviour: the knobs, their validation, and which source applies to a request
// (script for the model, then the body's `sim` field, then the `x-sim` header, then defaults).

/** What one simulated upstream reply does. Every knob is optional; `{}` is a plain fast success. */
export interface Behaviour {
  /** Non-2xx answers with the wire's own error body and the request-id header. */
  status?: number;
  /** Replaces the error body verbatim (a string is sent as is, anything else as JSON). */
  errorBody?: unknown;
  /** Extra response headers (e.g. retry-after); they replace defaults of the same name. */
  headers?: Record<string, string>;
  /** Delay before the response head. */
  ttfbMs?: number;
  /** Stream: delay between the head and the first event (the head is flushed on its own). */
  firstEventDelayMs?: number;
  /** Stream: delay before each content event. */
  chunkDelayMs?: number;
  /** Number of content deltas (default 3). */
  chunks?: number;
  /** Reply text, split across the chunks; default a short deterministic sentence. */
  text?: string;
  /** Destroy the socket at this point. */
  reset?: 'before_head' | 'after_head' | 'after_preamble' | 'after_chunks';
  /** With `reset: 'after_chunks'` (or alone): reset after this many content events (default 1). */
  resetAfterChunks?: number;
  /** Stop sending after this many content events; the connection stays open. */
  stallAfterChunks?: number;
  /** Emit a broken SSE frame (invalid JSON data line) after this many content events, then continue. */
  malformedAfterChunks?: number;
  /** A 200 stream whose first event is an error event. */
  inbandError?: boolean;
  /** The stream sends only its preamble (every event before the first content delta), then ends. */
  preambleOnly?: boolean;
  /** Reported usage; each number goes verbatim into the wire's own field. */
  usage?: { prompt?: number; completion?: number; cached?: number; reasoning?: number; cacheWrite?: number };
  /** Model id reported in bodies and events (default: the requested upstream model; null omits it). */
  reportModel?: string | null;
  /** Provider request id header value (default generated; null omits the header). */
  requestId?: string | null;
  /** Omit the usage frame even if include_usage was requested. */
  noUsageInStream?: boolean;
  /** Reply text = JSON of the request body received. */
  echo?: boolean;
  /** Bedrock event stream: write the stream in pieces of at most this many bytes, 1 ms apart, so
   *  event-stream messages reach the client split across TCP reads. */
  splitFrameBytes?: number;
  /** Bedrock event stream: after this many content events, an `exception` message, then the end. */
  exceptionAfterChunks?: number;
  /** The exception name of `exceptionAfterChunks` and of `inbandError` on Bedrock (default
   *  modelStreamErrorException after chunks, throttlingException in-band). */
  exceptionType?: string;
}

export class BehaviourError extends Error {}

const RESETS = new Set(['before_head', 'after_head', 'after_preamble', 'after_chunks']);
const USAGE_KEYS = new Set(['prompt', 'completion', 'cached', 'reasoning', 'cacheWrite']);

type Check = (v: unknown) => boolean;
const isCount: Check = (v) => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const isMs: Check = (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 600_000;
const isBool: Check = (v) => typeof v === 'boolean';
const isStringOrNull: Check = (v) => v === null || typeof v === 'string';

const CHECKS: Record<keyof Behaviour, [Check, string]> = {
  status: [(v) => isCount(v) && (v as number) >= 100 && (v as number) <= 599, 'an HTTP status (100-599)'],
  errorBody: [() => true, ''],
  headers: [isHeaderMap, 'an object of string header values'],
  ttfbMs: [isMs, 'milliseconds (0-600000)'],
  firstEventDelayMs: [isMs, 'milliseconds (0-600000)'],
  chunkDelayMs: [isMs, 'milliseconds (0-600000)'],
  chunks: [(v) => isCount(v) && (v as number) <= 100_000, 'an integer 0-100000'],
  text: [(v) => typeof v === 'string', 'a string'],
  reset: [
    (v) => typeof v === 'string' && RESETS.has(v),
    'one of before_head, after_head, after_preamble, after_chunks',
  ],
  resetAfterChunks: [isCount, 'a non-negative integer'],
  stallAfterChunks: [isCount, 'a non-negative integer'],
  malformedAfterChunks: [isCount, 'a non-negative integer'],
  inbandError: [isBool, 'a boolean'],
  preambleOnly: [isBool, 'a boolean'],
  usage: [isUsage, 'an object of non-negative integers (prompt, completion, cached, reasoning, cacheWrite)'],
  reportModel: [isStringOrNull, 'a string or null'],
  requestId: [isStringOrNull, 'a string or null'],
  noUsageInStream: [isBool, 'a boolean'],
  echo: [isBool, 'a boolean'],
  splitFrameBytes: [(v) => isCount(v) && (v as number) >= 1, 'a positive integer'],
  exceptionAfterChunks: [isCount, 'a non-negative integer'],
  exceptionType: [
    (v) => typeof v === 'string' && /^[A-Za-z]+$/.test(v),
    'an exception name such as throttlingException',
  ],
};

function isHeaderMap(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k) || /[\r\n]/.test(x)) return false;
  }
  return true;
}

function isUsage(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  for (const [k, x] of Object.entries(v)) if (!USAGE_KEYS.has(k) || !isCount(x)) return false;
  return true;
}

/** Checks a behaviour object from any source; unknown keys and wrong types are errors naming `where`. */
export function parseBehaviour(value: unknown, where: string): Behaviour {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new BehaviourError(`${where} must be an object`);
  }
  for (const [k, v] of Object.entries(value)) {
    const check = CHECKS[k as keyof Behaviour];
    if (!check) throw new BehaviourError(`${where}: unknown key "${k}"`);
    if (!check[0](v)) throw new BehaviourError(`${where}.${k} must be ${check[1]}`);
  }
  return value as Behaviour;
}

/** Where a request's behaviour came from. */
export type BehaviourSource = 'script' | 'body' | 'header' | 'default';

const DEFAULT: Behaviour = Object.freeze({});

/**
 * The behaviour for one request, first match wins: the scripted one for the upstream model, the
 * body's `sim` field (its `by_model[model]` entry replaces it for that model), the `x-sim` header.
 */
export function selectBehaviour(
  scripted: Behaviour | undefined,
  bodySim: unknown,
  headerSim: string | undefined,
  model: string,
): { behaviour: Behaviour; source: BehaviourSource } {
  if (scripted) return { behaviour: scripted, source: 'script' };
  if (bodySim !== undefined) {
    if (typeof bodySim !== 'object' || bodySim === null || Array.isArray(bodySim)) {
      throw new BehaviourError('sim must be an object');
    }
    const { by_model: byModel, ...own } = bodySim as Record<string, unknown>;
    if (byModel !== undefined) {
      if (typeof byModel !== 'object' || byModel === null || Array.isArray(byModel)) {
        throw new BehaviourError('sim.by_model must be an object of model id → behaviour');
      }
      const entry = (byModel as Record<string, unknown>)[model];
      if (entry !== undefined) return { behaviour: parseBehaviour(entry, `sim.by_model["${model}"]`), source: 'body' };
    }
    return { behaviour: parseBehaviour(own, 'sim'), source: 'body' };
  }
  if (headerSim !== undefined && headerSim !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(headerSim);
    } catch {
      throw new BehaviourError('x-sim header is not valid JSON');
    }
    return { behaviour: parseBehaviour(parsed, 'x-sim'), source: 'header' };
  }
  return { behaviour: DEFAULT, source: 'default' };
}
