// Builds the upstream request of one attempt: the protocol's rewritten body (or the streamed upload),
// the platform adapter's URL and auth, and the three client headers the spec forwards. Client
// credentials never pass. Everything it needs of the gateway comes through a CallResolver.
import type { CompiledDeployment, CompiledModel, Vocabularies } from '../config/compiled.ts';
import { headerText, sessionIdFrom } from '../http/header-text.ts';
import type { PlatformAdapter, UpstreamTarget } from '../platforms/types.ts';
import type { InboundBody, ProtocolModule } from '../protocols/types.ts';
import type { UpstreamCall } from '../upstream/client.ts';

/** Client headers forwarded to the provider (spec: Optional request headers). */
const FORWARDED_CLIENT_HEADERS = ['x-pi-session-id', 'x-title', 'http-referer'] as const;

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
}

/** What every attempt of one request sends, before the per-deployment parts. */
export interface CallInput {
  endpoint: string;
  stream: boolean;
  clientHeaders: Record<string, string>;
  body: InboundBody;
}

/** The upstream call of one attempt, or null when the deployment cannot be called now. */
export function buildCall(
  resolver: CallResolver,
  protocol: ProtocolModule,
  input: CallInput,
  model: CompiledModel,
  deployment: CompiledDeployment,
): UpstreamCall | null {
  const target = resolver.target(deployment);
  if (!target) return null;
  const adapter = resolver.adapter(target.platform.adapter);
  if (!adapter) return null;
  const req = { endpoint: input.endpoint, stream: input.stream, clientHeaders: input.clientHeaders };
  const { url, headers: authHeaders } = adapter.request(target, req);

  const headers: Record<string, string> = {
    accept: input.stream ? 'text/event-stream' : 'application/json',
    'accept-encoding': 'identity',
    'user-agent': 'pi-gateway/0.1',
  };
  for (const [k, v] of authHeaders) headers[k] = v;
  for (const h of FORWARDED_CLIENT_HEADERS) {
    const v = input.clientHeaders[h];
    if (v === undefined || v === '') continue;
    // A session id over 256 characters "counts as absent" (spec): not routed on, so not forwarded either.
    if (h === 'x-pi-session-id' && sessionIdFrom(headerText(v)) === null) continue;
    headers[h] = v;
  }

  if (input.body.kind === 'upload') {
    headers['content-type'] = input.body.upload.contentType;
    return { url, headers, body: input.body.upload.body(deployment.upstreamModel) };
  }
  const body = protocol.prepare(input.body.original, {
    model,
    platform: target.platform,
    deployment,
    vocabularies: resolver.vocabularies,
  }, input.endpoint);
  adapter.patchBody?.(body, target, req);
  headers['content-type'] = 'application/json';
  return { url, headers, body: JSON.stringify(body) };
}

/** Adds one attempt's own headers (the W3C `traceparent` of its span) to its built call. They never
 *  replace a header the call already has (authentication, content type). */
export function addAttemptHeaders(call: UpstreamCall, headers: Readonly<Record<string, string>> | null): void {
  if (!headers) return;
  for (const [k, v] of Object.entries(headers)) if (!(k in call.headers)) call.headers[k] = v;
}
