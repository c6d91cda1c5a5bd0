// Builds the upstream request of one attempt: the protocol's rewritten body, the platform adapter's
// URL and auth, and the three client headers the spec forwards. Client credentials never pass.
import type { Readable } from 'node:stream';
import type { CompiledDeployment, CompiledModel } from '../config/compiled.ts';
import { adapterFor } from '../platforms/index.ts';
import type { UpstreamTarget } from '../platforms/types.ts';
import type { JsonObject, ProtocolModule } from '../protocols/types.ts';
import { sessionIdFrom } from '../routing/session-pins.ts';
import { headerText } from './attribution.ts';
import type { UpstreamCall } from '../upstream/client.ts';
import type { GatewayContext } from './context.ts';

/** Client headers forwarded to the provider (spec: Optional request headers). */
const FORWARDED_CLIENT_HEADERS = ['x-pi-session-id', 'x-title', 'http-referer'] as const;

export interface CallInput {
  endpoint: string;
  stream: boolean;
  clientHeaders: Record<string, string>;
  /** JSON requests: the body without routing fields. */
  original?: JsonObject;
  protocol?: ProtocolModule;
  /** Streamed uploads (image edits): a fresh body per attempt and its content type. */
  upload?: { body(upstreamModel: string): Readable; contentType: string };
}

/** The deployment's target with its credential unsealed, or null when it cannot be called now. */
export function targetFor(ctx: GatewayContext, deployment: CompiledDeployment): UpstreamTarget | null {
  const resource = ctx.index.resourceById.get(deployment.resource);
  const platform = ctx.index.platformById.get(deployment.platform);
  if (!resource || !platform) return null;
  const credential = ctx.view.reveal(resource.credential);
  if (credential === null) return null;
  if (ctx.upstreamOverride) {
    const u = new URL(resource.baseUrl);
    u.protocol = ctx.upstreamOverride.protocol;
    u.host = ctx.upstreamOverride.host;
    return { platform, deployment, credential, resource: { ...resource, baseUrl: u.toString().replace(/\/$/, '') } };
  }
  return { platform, resource, deployment, credential };
}

export function buildCall(ctx: GatewayContext, input: CallInput, model: CompiledModel, deployment: CompiledDeployment): UpstreamCall | null {
  const target = targetFor(ctx, deployment);
  if (!target) return null;
  const adapter = adapterFor(target.platform.adapter);
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

  if (input.upload) {
    headers['content-type'] = input.upload.contentType;
    return { url, headers, body: input.upload.body(deployment.upstreamModel) };
  }
  if (!input.original || !input.protocol) return null;
  const body = input.protocol.prepare(input.original, {
    model,
    platform: target.platform,
    deployment,
    vocabularies: ctx.index.config.vocabularies,
  }, input.endpoint);
  adapter.patchBody?.(body, target, req);
  headers['content-type'] = 'application/json';
  return { url, headers, body: JSON.stringify(body) };
}
