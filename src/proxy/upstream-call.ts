// Builds the upstream request of one attempt: the protocol's rewritten body (or the streamed upload),
// the platform adapter's URL, wire quirks and auth, and the three client headers the API forwards.
// Client credentials never pass. Everything it needs of the gateway comes through a CallResolver.
//
// The order matters for adapters that sign the exact bytes (SigV4): request() → protocol rewrite →
// patchBody() → serialise → authorize() over the final URL, headers and body. Adapters without
// authorize() (a static key in request()) build synchronously; one that must fetch a token or sign
// asynchronously makes the build a promise. Callers await only a promise, so the static-key path
// stays free of microtask hops.
import type { CompiledDeployment, CompiledModel, Vocabularies } from '../config/compiled.ts';
import { headerText, sessionIdFrom } from '../http/header-text.ts';
import { withBetaPolicy } from '../platforms/anthropic-beta.ts';
import {
  type AdapterContext,
  type AdapterRequest,
  type AnswerDecoding,
  CredentialError,
  type OutgoingRequest,
  type PlatformAdapter,
  type TokenCounting,
  type UpstreamTarget,
} from '../platforms/types.ts';
import { COUNT_TOKENS_ENDPOINT } from '../observe/request-row.ts';
import { renderProviderError } from '../protocols/provider-error.ts';
import type { InboundBody, ProtocolModule } from '../protocols/types.ts';
import { upstreamJson } from '../protocols/upstream-json.ts';
import type { UpstreamCall } from '../upstream/client.ts';

/** Client headers forwarded to the provider (docs/api.md: Optional request headers). */
export const FORWARDED_CLIENT_HEADERS = ['x-pi-session-id', 'x-title', 'http-referer'] as const;

/** Where a deployment is reached now. */
export interface TargetResolver {
  /** The deployment's target with its credential unsealed, or null when it cannot be called now. */
  target(deployment: CompiledDeployment): UpstreamTarget | null;
}

/** Everything building a call needs beyond the request: targets, adapters and the vocabularies. */
export interface CallResolver extends TargetResolver {
  /** The platform adapter a platform's YAML names, or undefined when none is registered. */
  adapter(id: string): PlatformAdapter | undefined;
  /** The configured vocabularies (reasoning levels and the like) protocol rewrites map onto. */
  readonly vocabularies: Vocabularies;
  /** What adapters authenticate with beyond the target (clock, token endpoints, token caches). */
  readonly context: AdapterContext;
}

/** What every attempt of one request sends, before the per-deployment parts. */
export interface CallInput {
  endpoint: string;
  stream: boolean;
  clientHeaders: Record<string, string>;
  body: InboundBody;
}

/** One attempt's call, ready to send. */
export interface ReadyCall {
  kind: 'call';
  call: UpstreamCall;
  /** How the answer is read when it is not the protocol's own wire (null: it is). */
  decoding: AnswerDecoding | null;
  /** A non-2xx answer's plain body as the client gets it: a platform's own error shape rendered in
   *  the protocol's (null: the platform answers in the protocol's shape; bodies go on as they are). */
  errorBody: ErrorBodyRewrite | null;
  /** After a 401: drops the adapter's cached token for this credential; true when one new attempt
   *  on the same deployment may succeed (null: the adapter caches nothing, a 401 is final). */
  refused: (() => boolean) | null;
}

export type CallBuild =
  | ReadyCall
  /** The deployment cannot be called now (no readable credential, no registered adapter): skipped. */
  | { kind: 'skip' }
  /** The adapter could not authenticate (an unusable credential, a refusing token endpoint). */
  | { kind: 'unauthorized'; detail: string };

const SKIP: CallBuild = { kind: 'skip' };

/** Rewrites a provider's error body (status and headers as received) into what the client gets. */
export type ErrorBodyRewrite = (status: number, headers: Record<string, string>, body: Buffer) => Buffer;

/** The adapter reads its platform's error bodies; the protocol renders what it read. */
function errorRewrite(
  adapter: PlatformAdapter,
  protocol: ProtocolModule,
  req: AdapterRequest,
): ErrorBodyRewrite | null {
  const read = adapter.readError?.bind(adapter);
  if (!read) return null;
  // A token count is a Messages request: its errors are read as Messages errors.
  const asked: AdapterRequest = req.endpoint === COUNT_TOKENS_ENDPOINT ? { ...req, endpoint: 'messages' } : req;
  return (status, headers, body) => {
    const err = read(status, headers, body, asked);
    return err === null ? body : renderProviderError(protocol, err);
  };
}

/** The upstream call of one attempt: at once for static credentials, a promise when authorize() waits. */
export function buildCall(
  resolver: CallResolver,
  protocol: ProtocolModule,
  input: CallInput,
  model: CompiledModel,
  deployment: CompiledDeployment,
): CallBuild | Promise<CallBuild> {
  const target = resolver.target(deployment);
  if (!target) return SKIP;
  const adapter = resolver.adapter(target.platform.adapter);
  if (!adapter) return SKIP;
  // A token count is the adapter's counting call (a platform that cannot count is never planned).
  const wire = input.endpoint === COUNT_TOKENS_ENDPOINT ? adapter.countTokens : adapter;
  if (!wire) return SKIP;
  const clientHeaders = withBetaPolicy(
    input.clientHeaders,
    target.platform.anthropicBeta ?? adapter.anthropicBeta ?? null,
  );
  const req: AdapterRequest = { endpoint: input.endpoint, stream: input.stream, clientHeaders };
  const out = outgoing(resolver, protocol, input, model, target, wire, req);
  const ctx = resolver.context;
  const ready = (): ReadyCall => ({
    kind: 'call',
    call: out,
    decoding: wire.decoding?.(target, req) ?? null,
    errorBody: errorRewrite(adapter, protocol, req),
    refused: adapter.refused ? () => adapter.refused?.(out, target, ctx) === true : null,
  });
  if (!adapter.authorize) return ready();
  let pending: void | Promise<void>;
  try {
    pending = adapter.authorize(out, target, req, ctx);
  } catch (err) {
    return unauthorized(err);
  }
  if (pending === undefined) return ready();
  return pending.then(ready, unauthorized);
}

/** A CredentialError becomes a failed attempt; anything else is a gateway bug and propagates. */
function unauthorized(err: unknown): CallBuild {
  if (err instanceof CredentialError) return { kind: 'unauthorized', detail: err.message };
  throw err;
}

/** URL, headers and body as they go out, before authorize(). */
function outgoing(
  resolver: CallResolver,
  protocol: ProtocolModule,
  input: CallInput,
  model: CompiledModel,
  target: UpstreamTarget,
  adapter: Pick<TokenCounting, 'request' | 'patchBody'>,
  req: AdapterRequest,
): OutgoingRequest & UpstreamCall {
  const { url, headers: adapterHeaders } = adapter.request(target, req);
  const headers: Record<string, string> = {
    accept: input.stream ? 'text/event-stream' : 'application/json',
    'accept-encoding': 'identity',
    'user-agent': 'pi-gateway/0.1',
  };
  for (const [k, v] of adapterHeaders) headers[k] = v;
  for (const h of FORWARDED_CLIENT_HEADERS) {
    const v = input.clientHeaders[h];
    if (v === undefined || v === '') continue;
    // A session id over 256 characters "counts as absent" (docs/api.md): not routed on, so not forwarded either.
    if (h === 'x-pi-session-id' && sessionIdFrom(headerText(v)) === null) continue;
    headers[h] = v;
  }

  const deployment = target.deployment;
  if (input.body.kind === 'upload') {
    headers['content-type'] = input.body.upload.contentType;
    return { url, headers, body: input.body.upload.body(deployment.upstreamModel) };
  }
  const body = protocol.prepare(
    input.body.original,
    {
      model,
      platform: target.platform,
      deployment,
      vocabularies: resolver.vocabularies,
    },
    input.endpoint,
  );
  adapter.patchBody?.(body, target, req);
  headers['content-type'] = 'application/json';
  // Members the rewrite left alone go out as the client's bytes; only the changed ones are serialised.
  return { url, headers, body: upstreamJson(body, input.body.source ?? null) };
}

/** Adds one attempt's own headers (the W3C `traceparent` of its span) to its built call. They never
 *  replace a header the call already has (authentication, content type). */
export function addAttemptHeaders(call: UpstreamCall, headers: Readonly<Record<string, string>> | null): void {
  if (!headers) return;
  for (const [k, v] of Object.entries(headers)) if (!(k in call.headers)) call.headers[k] = v;
}
