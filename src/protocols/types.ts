// The inbound protocol interface: request validation and rewriting, and how to read the provider's
// answer (commit point, usage, reported model, error events) for one wire format. One instance of a
// StreamTap is created per attempt and is not shared.
import type { CompiledDeployment, CompiledModel, CompiledPlatform, Vocabularies } from '../config/compiled.ts';
import type { Usage } from '../billing/usage.ts';

export type JsonObject = Record<string, unknown>;

/** A JSON object (not null, not an array). */
export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `text` parsed as a JSON object, or null when it is not JSON or not an object. */
export function jsonObjectOf(text: string): JsonObject | null {
  try {
    const v = JSON.parse(text) as unknown;
    return isObject(v) ? v : null;
  } catch {
    return null;
  }
}

/** What the protocol module needs to know about the chosen deployment to rewrite a request. */
export interface PrepareTarget {
  model: CompiledModel;
  platform: CompiledPlatform;
  deployment: CompiledDeployment;
  vocabularies: Vocabularies;
}

/** How an event relates to the commit point (spec: failover only before the first byte; we commit on
 *  the first content event, so a preamble-only or in-band-error start still fails over invisibly). */
export type EventKind =
  /** Role-only chunk, message_start, ping, response.created…: held until content arrives. */
  | 'preamble'
  /** Real output (or the end of an empty answer): commit to this attempt. */
  | 'content'
  /** An in-band error from the provider. Before commit: fail over; after: relay it and end. */
  | 'error'
  /** A frame that does not parse. Before commit: fail over; after: end with our own error event. */
  | 'malformed'
  /** The protocol's normal end marker ([DONE], message_stop, response.completed…). */
  | 'terminal';

export interface TappedEvent {
  kind: EventKind;
  /** The event bytes to send to the client (model rewritten where the protocol carries one). */
  out: Buffer;
}

export interface StreamTap {
  /** Classify and rewrite one complete SSE event. */
  onEvent(ev: Buffer): TappedEvent;
  /** The model id the provider reported first (for X-Pi-Upstream-Model), or null. */
  readonly upstreamModel: string | null;
  /** Usage reported so far (null until a usage frame arrived). */
  usage(): Usage | null;
  /** The protocol's normal end was seen ([DONE], message_stop, response.completed…): an upstream
   *  close after this is a complete answer; before it, a truncated one. */
  readonly completed: boolean;
  /** Content events relayed and their bytes: the basis of an estimate when usage never arrives. */
  readonly contentEvents: number;
  readonly contentBytes: number;
}

/** What the gateway knows of a request when the provider reports no usage (an estimate basis). */
export interface TapHints {
  /** Estimated prompt tokens (the same estimate settlement bills when usage is missing). */
  promptTokensEstimate?: number;
}

export interface JsonAnswer {
  /** The body to send, with `model` rewritten to the slug (same bytes otherwise). */
  body: Buffer;
  upstreamModel: string | null;
  usage: Usage | null;
}

export interface ProtocolModule {
  /** Endpoint ids (vocabularies) this module serves. */
  readonly endpoints: readonly string[];
  /** Request checks beyond the routing fields; throws GatewayError (400 missing, 422 wrong type). */
  validate(body: JsonObject, endpoint: string): void;
  /** Whether the client asked for a stream. */
  wantsStream(body: JsonObject): boolean;
  /** The upstream body for one attempt, built from the untouched original (routing fields already
   *  removed). Must not mutate `original`: every attempt starts from it. */
  prepare(original: JsonObject, target: PrepareTarget, endpoint: string): JsonObject;
  /** A per-attempt stream reader. `slugJson` is the slug as a JSON string (quoted). */
  tap(slugJson: Buffer, hints?: TapHints): StreamTap;
  /** Read a whole non-streamed 2xx answer: null when it is not a usable answer (not JSON, an in-band error). */
  readJson(body: Buffer, slugJson: Buffer): JsonAnswer | null;
  /** The event that ends a stream cut after the commit point, in the protocol's own shape. */
  streamErrorEvent(message: string, code: string): Buffer;
}
