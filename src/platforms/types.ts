// The platform adapter interface: everything that differs between upstream platforms once the
// inbound protocol module has prepared the body — URL, auth, small wire quirks, and (for clouds whose
// wire is not the protocol's own) how their answers are read. One attempt's call is built in this
// order (src/proxy/upstream-call.ts): request() → protocol rewrite → patchBody() → serialise →
// authorize() over the exact bytes → send; decoding() reads the answer. Adding a platform kind means
// one module here, its line in ./index.ts, the YAML, and its tests (test/platforms/adapter-suite.ts).
import type { Readable } from 'node:stream';
import type { Clock } from '../clock.ts';
import type { AdapterFacts, AdapterOptions } from '../config/adapter-catalog.ts';
import type { BetaPolicy, CompiledDeployment, CompiledPlatform, CompiledResource } from '../config/compiled.ts';
import type { ProviderError } from '../errors.ts';

export type { AdapterOptions };

/** Where one attempt goes: the deployment, its resource and platform, and the unsealed credential. */
export interface UpstreamTarget {
  platform: CompiledPlatform;
  resource: CompiledResource;
  deployment: CompiledDeployment;
  /** The upstream credential, unsealed for this attempt only. Never logged. */
  credential: string;
}

export interface AdapterRequest {
  /** Endpoint id from the vocabularies (chat_completions, responses, messages, images_generations, images_edits). */
  endpoint: string;
  stream: boolean;
  /** Client headers the adapter may forward (lowercase names), e.g. anthropic-version / anthropic-beta. */
  clientHeaders: Record<string, string>;
}

/** A token endpoint's answer (status and body; the body is capped by the caller). */
export interface FormAnswer {
  status: number;
  body: Buffer;
}

/** Why a token endpoint gave no answer: it could not be reached (connection refused or reset, no
 *  such host) or did not answer within the configured token timeout. */
export class TokenEndpointError extends Error {
  readonly kind: 'unreachable' | 'timeout';
  /** The system's error code when there is one (ECONNREFUSED, ECONNRESET, ENOTFOUND…). */
  readonly code: string | null;
  /** The limit it did not answer within (kind `timeout`). */
  readonly timeoutMs: number;
  constructor(kind: 'unreachable' | 'timeout', code: string | null, timeoutMs: number) {
    super(kind === 'timeout' ? `no answer within ${timeoutMs} ms` : `could not be reached${code ? ` (${code})` : ''}`);
    this.kind = kind;
    this.code = code;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * What the gateway lends adapters beyond the target, one per gateway process (token caches keyed by
 * it survive config reloads): the clock every expiry is read from, the HTTP call to token endpoints
 * (undici lives in src/upstream/, never here), where token endpoints really are, and the log.
 */
export interface AdapterContext {
  readonly clock: Clock;
  /** POSTs an `application/x-www-form-urlencoded` form within the token timeout
   *  (`limits.token_timeout_ms`); rejects with TokenEndpointError when no answer came. */
  postForm(url: string, form: Record<string, string>): Promise<FormAnswer>;
  /** The URL a token endpoint is reached at: `url`, or re-pointed to the origin every resource base
   *  URL is sent to when the gateway runs against the simulator (demo, tests). */
  endpointUrl(url: string): string;
  /** The gateway's operational log (docs/observability.md). Never given a secret. */
  log(event: string, fields: Record<string, unknown>): void;
}

/** The request of one attempt as it will be sent: authorize() reads it and adds its headers. */
export interface OutgoingRequest {
  readonly url: string;
  /** Lowercase names; content-type is already set. authorize() adds or replaces its own. */
  readonly headers: Record<string, string>;
  /** The exact bytes sent (a streamed upload is a Readable: only header-based auth can cover it). */
  readonly body: string | Buffer | Readable;
}

/**
 * The adapter cannot authenticate this attempt: the sealed credential does not fit the platform's
 * `auth` option (not the JSON it needs, a missing field), or a token endpoint refused or failed.
 * The attempt fails (`credential`) and the next deployment is tried. The message reaches the client
 * in the final 503 when no deployment answers, so it never quotes the credential or the endpoint's
 * error text.
 */
export class CredentialError extends Error {}

/**
 * Turns a platform's streamed answer (e.g. Bedrock's binary event stream) into SSE event bytes.
 * Frames may arrive split at any byte boundary; a frame that cannot be read (bad length, checksum,
 * headers) stops the decoder: the events completed before it are still returned, `failure` says why.
 */
export interface StreamDecoder {
  /** The SSE bytes of the events `chunk` completed (possibly none); nothing once `failure` is set. */
  push(chunk: Buffer): Buffer;
  /** Bytes held of a frame not yet complete: an upstream end now would cut it. */
  readonly pendingBytes: number;
  /** Why a frame could not be read; null while every frame could. */
  readonly failure: string | null;
}

/** How to read a platform's answers when they are not the inbound protocol's own wire. */
export interface AnswerDecoding {
  /** The media type (lowercase, no parameters) of a 2xx streamed answer `decoder` reads. */
  readonly streamType: string;
  /** A fresh decoder for one attempt. */
  decoder(): StreamDecoder;
  /** A 2xx JSON answer in the inbound protocol's shape (the decoded body), when the platform's
   *  differs (Bedrock's token count); null when it is not a usable answer. */
  answerBody?(body: Buffer): Buffer | null;
}

/**
 * Token counting (POST /v1/messages/count_tokens) on a platform that can count: the count call's
 * URL, static headers and body, built like an inference call's (`AdapterRequest.endpoint` is
 * `count_tokens`, never a stream) from the Messages count body with `model` already the deployment's
 * upstream model. The adapter's own authorize() and refused() authenticate it as they do inference.
 * The answer the client gets is Messages' count, `{"input_tokens": n}`.
 */
export interface TokenCounting {
  request(target: UpstreamTarget, req: AdapterRequest): { url: string; headers: [string, string][] };
  /** Body changes the count call needs. Mutates. */
  patchBody?(body: Record<string, unknown>, target: UpstreamTarget, req: AdapterRequest): void;
  /** How the count answer and its errors are read when they are not Messages'. */
  decoding?(target: UpstreamTarget, req: AdapterRequest): AnswerDecoding | null;
}

/** An adapter is also the facts config linking checks platform files against (see AdapterFacts). */
export interface PlatformAdapter extends AdapterFacts {
  readonly id: string;
  /** Endpoint ids this adapter knows how to call; config linking rejects a platform declaring others. */
  readonly endpoints: readonly string[];
  /** Problems with a platform's `adapter_options` (empty when fine). Run at config load. */
  validateOptions(options: AdapterOptions): string[];
  /** Which `anthropic-beta` values reach the platform when its YAML sets no `anthropic_beta`
   *  (absent: all; see ./anthropic-beta.ts). The adapter sees the client headers already filtered. */
  readonly anthropicBeta?: BetaPolicy;
  /** Absolute URL and the headers that do not depend on the body or on a token (content-type is
   *  added by the caller). Static credentials (an API key) go here. Never throws. */
  request(target: UpstreamTarget, req: AdapterRequest): { url: string; headers: [string, string][] };
  /** Body changes the wire needs after the protocol rewrite (e.g. model moved into the URL). Mutates. */
  patchBody?(body: Record<string, unknown>, target: UpstreamTarget, req: AdapterRequest): void;
  /**
   * Authenticates the request exactly as sent: a signature over the final bytes (SigV4) or a bearer
   * token from a cached token source. Returns nothing when it could do so at once, a promise when it
   * must wait (a token fetch, an async signer). Throws (or rejects with) CredentialError when it
   * cannot. Absent: request() carried the credential.
   */
  authorize?(
    out: OutgoingRequest,
    target: UpstreamTarget,
    req: AdapterRequest,
    ctx: AdapterContext,
  ): void | Promise<void>;
  /**
   * The platform answered 401 to `out`: drop whatever authorize() cached for this credential (the
   * token `out` carried). True when a new attempt on the same deployment may succeed (it will fetch a
   * fresh token) — the failover loop then retries that deployment once before moving on.
   */
  refused?(out: OutgoingRequest, target: UpstreamTarget, ctx: AdapterContext): boolean;
  /** How this call's answers are read when they are not the protocol's own wire; null when they are. */
  decoding?(target: UpstreamTarget, req: AdapterRequest): AnswerDecoding | null;
  /** Present when the platform can count a Messages request's input tokens (optional capability). */
  readonly countTokens?: TokenCounting;
  /**
   * A non-2xx answer (its plain body as received, up to the error cap) read into the gateway's error
   * model, so that the inbound protocol renders it in its own error shape with the provider's status;
   * null when the body already is the protocol's error (it goes on byte for byte). Never throws.
   * Absent: the platform answers errors in the protocol's own shape.
   */
  readError?(status: number, headers: Record<string, string>, body: Buffer, req: AdapterRequest): ProviderError | null;
}

/** Appends a path to a base URL without doubling or dropping the slash. */
export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + (path.startsWith('/') ? path : '/' + path);
}
