// The interface each simulated API ("wire") implements: request checks, and the bytes of its JSON
// reply, its SSE events (split into preamble / content deltas / tail), in-band errors and broken frames.
import type { Behaviour } from './behaviour.ts';
import type { PlannedText } from './reply-text.ts';
import type { InferenceRoute } from './routes.ts';
import type { UsageNumbers } from './usage.ts';
import type { ErrorDetails } from './wire-errors.ts';
import type { Family } from './wire-headers.ts';

export type Body = Record<string, unknown>;

/** Everything a wire needs to render one reply. */
export interface ReplyContext {
  /** Upstream model id the request named (URL for Azure/Vertex forms, else the body). */
  model: string;
  /** Model id to report in bodies and events; null omits the field. */
  reportModel: string | null;
  requestId: string | null;
  /** Unix seconds. */
  created: number;
  text: PlannedText;
  usage: UsageNumbers;
  body: Body;
  route: InferenceRoute;
  behaviour: Behaviour;
  /** Number of file parts received (image edits). */
  files: number;
}

/** A stream's events, each a complete SSE frame ending in a blank line. */
export interface StreamEvents {
  /** Everything before the first content delta (role chunk; message_start…ping;
   *  response.created…content_part.added). */
  preamble: string[];
  /** One event per content delta. */
  content: string[];
  /** Everything after the last content delta (finish, usage, [DONE] / message_stop / response.completed). */
  tail: string[];
}

export interface Wire {
  readonly family: Family;
  /** The 400 the real API gives when a required field is missing, else null. */
  validate(body: Body, route: InferenceRoute): ErrorDetails | null;
  isStream(body: Body, route: InferenceRoute): boolean;
  /** The output cap the request asks for (max_tokens & co.), if any. */
  maxTokens(body: Body): number | undefined;
  json(ctx: ReplyContext): string;
  events(ctx: ReplyContext): StreamEvents;
  /** A 200 stream whose first event is an error (the scripted errorBody replaces the error data). */
  inbandError(ctx: ReplyContext): string[];
  /** A frame whose data line is not valid JSON. */
  malformed(ctx: ReplyContext): string;
}

/** A non-negative integer field, else undefined. */
export function intField(body: Body, key: string): number | undefined {
  const v = body[key];
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  if (typeof v === 'string' && /^[0-9]+$/.test(v)) return Number(v);
  return undefined;
}

export function objectField(body: Body, key: string): Body | undefined {
  const v = body[key];
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Body) : undefined;
}

/** The 400 OpenAI gives for a missing required parameter. */
export function missingParameter(name: string): ErrorDetails {
  return {
    message: `Missing required parameter: '${name}'.`,
    type: 'invalid_request_error',
    param: name,
    code: 'missing_required_parameter',
  };
}
