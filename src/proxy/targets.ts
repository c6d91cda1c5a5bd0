// The gateway's CallResolver: deployments reached through the configured resources and platforms,
// credentials unsealed from the store, adapters from the registry, the adapter context (clock, token
// endpoint calls, token caches), and the demo/test override that sends every resource to one origin.
import type { CompiledDeployment, CompiledResource } from '../config/compiled.ts';
import type { ConfigIndex } from '../config/index.ts';
import { adapterFor } from '../platforms/index.ts';
import type { AdapterContext, UpstreamTarget } from '../platforms/types.ts';
import type { CallResolver } from './upstream-call.ts';

export interface TargetSources {
  index: ConfigIndex;
  /** The unsealed credential, or null when absent or refused. */
  reveal(credential: string): string | null;
  /** Replaces scheme, host and port of every resource base URL; read per call (tests re-point it). */
  upstreamOverride(): URL | null;
  /** Lent to adapters; one per gateway process, so token caches outlive a config reload. */
  context: AdapterContext;
}

/** `url` with the scheme, host and port of `override` (path and query kept). */
export function repointed(url: string, override: URL): string {
  const u = new URL(url);
  u.protocol = override.protocol;
  u.host = override.host;
  return u.toString();
}

export function configuredTargets(sources: TargetSources): CallResolver {
  const { index } = sources;
  // The re-pointed resource of each resource id, kept while the override stays the same: parsing
  // and rebuilding its URL on every call cost more than the rest of the target lookup.
  const repointedResources = new Map<string, { override: string; of: CompiledResource; resource: CompiledResource }>();
  const repointedResource = (resource: CompiledResource, override: URL): CompiledResource => {
    const key = override.href;
    const hit = repointedResources.get(resource.id);
    if (hit !== undefined && hit.override === key && hit.of === resource) return hit.resource;
    const baseUrl = repointed(resource.baseUrl, override).replace(/\/$/, '');
    const fresh = { ...resource, baseUrl };
    repointedResources.set(resource.id, { override: key, of: resource, resource: fresh });
    return fresh;
  };
  return {
    get vocabularies() {
      return index.config.vocabularies;
    },
    adapter: adapterFor,
    context: sources.context,
    target(deployment: CompiledDeployment): UpstreamTarget | null {
      const resource = index.resourceById.get(deployment.resource);
      const platform = index.platformById.get(deployment.platform);
      if (!resource || !platform) return null;
      const credential = sources.reveal(resource.credential);
      if (credential === null) return null;
      const override = sources.upstreamOverride();
      if (override) return { platform, deployment, credential, resource: repointedResource(resource, override) };
      return { platform, resource, deployment, credential };
    },
  };
}
