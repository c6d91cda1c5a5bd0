// The inbound protocol interface: how a request of one wire format is read (JSON or a streamed
// upload), checked, bounded for the wallet hold and rewritten, and how the provider's answer is read
// (commit point, usage, reported model, error events). One instance of a StreamTap is created per
// attempt and is not shared.
import type { Readable } from 'node:stream';
import type { CompiledDeployment, CompiledModel, CompiledPlatform, Vocabularies } from '../config/compiled.ts';
import type { InputUsage, Usage } from '../billing/usage.ts';
import type { GatewayError, ProviderError } from '../errors.ts';
import type { BodyDelivery, IncomingRequest } from '../http/request.ts';
import type { MemberSpans } from '../stream/json-depth.ts';

export type JsonObject = Record<string, unknown>;

/** The output ceilings of a model, or of one of its deployments (whose limits default to the model's). */
export type OutputLimits = Pick<CompiledModel, 'maxCompletionTokens' | 'contextLength'>;

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

/** The routing fields every inference request carries (read and removed by ./routing-fields.ts). */
export interface RoutingFields {
  /** The primary model name as sent (slug or alias). */
  model: string;
  /** Fallback model names in order, duplicates of the primary or of earlier entries dropped. */
  fallbacks: string[];
  /** The raw `provider` value (validated by routing), undefined when absent. */
  provider: unknown;
}

/** A request body streamed on to the provider as it arrives (image edits), never buffered whole. */
export interface StreamedUpload {
  /** The client's Content-Type (multipart boundary included), sent upstream unchanged. */
  readonly contentType: string;
  /** A fresh body for one attempt, with the model field set to the deployment's upstream model. */
  body(upstreamModel: string): Readable;
  /** True while no byte past the held prefix went upstream: another attempt can still send it all. */
  readonly replayable: boolean;
  /** Set when the gateway refused the upload part-way (a field after the held prefix broke a rule):
   *  the body sent upstream ended in an error before the form was whole, so the attempt says nothing
   *  about the provider, and this is the client's answer. */
  readonly refusal?: GatewayError | null;
}

/** Where a JSON request's members lie in its bytes, from the one scan that read it (./upstream-json.ts
 *  writes the upstream body from them). */
export interface JsonSource {
  raw: Buffer;
  members: MemberSpans;
  /** The parsed members the spans belong to (routing fields removed): identity says "unchanged". */
  original: JsonObject;
}

/** What every attempt sends upstream, before the per-deployment rewrite. */
export type InboundBody =
  /** A JSON body without its routing fields: each attempt rewrites a copy (`prepare`). `source`:
   *  the request's bytes, so the upstream body reuses every member the rewrite left alone. */
  | { kind: 'json'; original: JsonObject; source?: JsonSource }
  /** A streamed upload: each attempt gets a fresh body with the model replaced. */
  | { kind: 'upload'; upload: StreamedUpload };

/** A request as its protocol module read it: what it asks for and the bounds its wallet hold is sized from. */
export interface InboundRequest {
  fields: RoutingFields;
  /** The client asked for a stream. */
  stream: boolean;
  body: InboundBody;
  /** Size of the request body: the prompt estimate when a provider reports no usage. */
  requestBytes: number;
  /** Most prompt tokens the request can be billed for. */
  promptBound: number;
  /** Most output tokens the request can be billed for on one model; with a deployment, within that
   *  deployment's limits (which default to the model's). */
  outputBound(model: CompiledModel, deployment?: OutputLimits): number;
  /** The field that sets the request's output limit, when its protocol has one (absent: image
   *  requests): what a 402 advises a smaller value of. */
  outputLimit?: OutputLimitField;
}

/** The request field that sets its output limit (`max_tokens`, `max_output_tokens`…), and the hold
 *  bounds the request would have with it set to `tokens` instead — the body otherwise as sent, the
 *  number edited in place (or added when the request did not set it). */
export interface OutputLimitField {
  name: string;
  boundsAt(tokens: number): {
    promptTokens: number;
    outputBound(model: CompiledModel, deployment?: OutputLimits): number;
  };
}

/** Limits a request reader works within (from gateway.yaml `limits`). */
export interface ReadLimits {
  /** Largest streamed upload; also the most bytes held while looking for its `model` field. */
  maxUploadBytes: number;
}

/** How the server hands an endpoint's body over: read whole before the handler runs (capped at
 *  `limits.maxBodyBytes`), or as a backpressured stream while it runs (capped at `maxUploadBytes`). */
export type RequestBodyDelivery = Exclude<BodyDelivery, 'none'>;

/** What the protocol module needs to know about the chosen deployment to rewrite a request. */
export interface PrepareTarget {
  model: CompiledModel;
  platform: CompiledPlatform;
  deployment: CompiledDeployment;
  vocabularies: Vocabularies;
}

/** How an event relates to the commit point (docs/api.md: failover only before the first byte; we commit on
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
  /** The event carries the answer's usage object: the stream relay holds it back while it is the last
   *  event, so the settlement can add what it charged (./usage-cost.ts) before it goes out. */
  usage?: boolean;
}

export interface StreamTap {
  /** Classify and rewrite one complete SSE event. */
  onEvent(ev: Buffer): TappedEvent;
  /** The model id the provider reported first (for X-Pi-Upstream-Model), or null. */
  readonly upstreamModel: string | null;
  /**
   * The provider's own count for the whole answer, once it reported one (Chat's usage frame,
   * Messages' message_delta usage, Responses' response.completed/incomplete); null until then. A
   * provisional figure from a stream's first event (Messages' message_start `output_tokens: 1`, a
   * usage on Responses' response.created) is never returned here: it is not the answer's count.
   */
  usage(): Usage | null;
  /**
   * The input counts the provider reported before its end (Messages' message_start; a usage on
   * Responses' response.created/in_progress), or null. Exact for the input only: a stream cut before
   * its final usage is billed on these plus one output token per content event.
   */
  inputUsage(): InputUsage | null;
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
  /** The client's JSON request as read (routing fields removed), before any rewrite: what it asked for. */
  request?: JsonObject;
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
  /** How the server delivers this endpoint's request body (the route table asks, per endpoint). */
  bodyDelivery(endpoint: string): RequestBodyDelivery;
  /**
   * Reads and checks one request of this endpoint: the body (JSON, or a streamed upload read up to
   * its model field), the routing fields, whether a stream is wanted, and the hold bounds. Throws
   * GatewayError for a request the API refuses. JSON endpoints use ./json-request.ts, which applies
   * `validate`, `wantsStream` and `outputBound` below.
   */
  read(req: IncomingRequest, endpoint: string, limits: ReadLimits): InboundRequest | Promise<InboundRequest>;
  /** Request checks beyond the routing fields; throws GatewayError (400 missing, 422 wrong type). */
  validate(body: JsonObject, endpoint: string): void;
  /** Whether the client asked for a stream. */
  wantsStream(body: JsonObject): boolean;
  /** The output-token bound of a JSON request on one model (or deployment): the limit the request
   *  sets (in this protocol's own fields) capped at the model's, else the model's, else a documented
   *  default (./output-bound.ts). */
  outputBound(body: JsonObject, endpoint: string, limits: OutputLimits): number;
  /** The fields that set the output limit, the first one set winning (the last is the one to add
   *  when none is); absent when the protocol has none. */
  readonly outputLimitFields?: readonly string[];
  /** The upstream body for one attempt, built from the untouched original (routing fields already
   *  removed). Must not mutate `original`: every attempt starts from it. */
  prepare(original: JsonObject, target: PrepareTarget, endpoint: string): JsonObject;
  /** A per-attempt stream reader. `slugJson` is the slug as a JSON string (quoted). */
  tap(slugJson: Buffer, hints?: TapHints): StreamTap;
  /** Read a whole non-streamed 2xx answer: null when it is not a usable answer (not JSON, an in-band error). */
  readJson(body: Buffer, slugJson: Buffer): JsonAnswer | null;
  /** When a protocol's providers may answer an error with a 2xx status (its body the protocol's error
   *  object): the HTTP status that error stands for, or null when `body` is no such error. The answer
   *  then goes on as the provider's error with that status (retried or passed on like a non-2xx one,
   *  never billed). Absent: a 2xx error body is only an unusable answer (readJson's null). */
  inbandErrorStatus?(body: Buffer): number | null;
  /** The member of a streamed event's object that holds the usage object (the Responses `response`);
   *  absent: the usage is a member of the event's object itself (as in every JSON answer). */
  readonly usageEventContainer?: string;
  /** The event that ends a stream cut after the commit point, in the protocol's own shape. */
  streamErrorEvent(message: string, code: string): Buffer;
  /** The JSON body of a gateway-raised error on this protocol's endpoints, when the protocol's SDKs
   *  need more than the API's error object (absent: `err.toBody()` as is). */
  errorBody?(err: GatewayError): object;
  /** A provider's error read by its platform adapter (a cloud's own error shape), as this protocol's
   *  error body (absent: `{"error":{message, type, code, …}}`, the OpenAI protocols' shape). */
  providerErrorBody?(err: ProviderError): object;
}
