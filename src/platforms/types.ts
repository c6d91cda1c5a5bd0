// The platform adapter interface: everything that differs between upstream platforms once the
// inbound protocol module has prepared the body — URL, auth headers and small wire quirks.
// Adding a platform kind means one module here, its line in ./index.ts, the YAML, and its tests.
import type { AdapterFacts, AdapterOptions } from '../config/adapter-catalog.ts';
import type { CompiledDeployment, CompiledPlatform, CompiledResource } from '../config/compiled.ts';

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

/** An adapter is also the facts config linking checks platform files against (see AdapterFacts). */
export interface PlatformAdapter extends AdapterFacts {
  readonly id: string;
  /** Endpoint ids this adapter knows how to call; config linking rejects a platform declaring others. */
  readonly endpoints: readonly string[];
  /** Problems with a platform's `adapter_options` (empty when fine). Run at config load. */
  validateOptions(options: AdapterOptions): string[];
  /** Absolute URL and auth/wire headers for one attempt (content-type is added by the caller). */
  request(target: UpstreamTarget, req: AdapterRequest): { url: string; headers: [string, string][] };
  /** Body changes the wire needs after the protocol rewrite (e.g. model moved into the URL). Mutates. */
  patchBody?(body: Record<string, unknown>, target: UpstreamTarget, req: AdapterRequest): void;
}

/** Appends a path to a base URL without doubling or dropping the slash. */
export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + (path.startsWith('/') ? path : '/' + path);
}
