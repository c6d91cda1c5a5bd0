// The AdapterContext the gateway lends its platform adapters: the injected clock, token-endpoint
// POSTs through the upstream client (undici stays in src/upstream/), and token endpoints re-pointed
// by the same override that sends every resource base URL to the simulator in the demo and tests.
import type { Clock } from '../clock.ts';
import type { AdapterContext, FormAnswer } from '../platforms/types.ts';
import { repointed } from './targets.ts';

export interface AdapterContextSources {
  clock: Clock;
  /** The upstream client's form POST (UpstreamClient.postForm). */
  postForm(url: string, form: Record<string, string>): Promise<FormAnswer>;
  /** Read per call, like the resource override (tests re-point it). */
  upstreamOverride(): URL | null;
}

export function adapterContext(sources: AdapterContextSources): AdapterContext {
  return {
    clock: sources.clock,
    postForm: (url, form) => sources.postForm(url, form),
    endpointUrl(url) {
      const override = sources.upstreamOverride();
      return override ? repointed(url, override) : url;
    },
  };
}
