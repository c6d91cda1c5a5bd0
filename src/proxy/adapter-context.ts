// The AdapterContext the gateway lends its platform adapters: the injected clock, token-endpoint
// POSTs through the upstream client (undici stays in src/upstream/) within the configured token
// timeout, their network failures told apart (unreachable or too slow), token endpoints re-pointed by
// the same override that sends every resource base URL to the simulator in the demo and tests, and
// the gateway's log.
import type { Clock } from '../clock.ts';
import { type AdapterContext, type FormAnswer, TokenEndpointError } from '../platforms/types.ts';
import { repointed } from './targets.ts';

export interface AdapterContextSources {
  clock: Clock;
  /** The upstream client's form POST (UpstreamClient.postForm), within `timeoutMs`. */
  postForm(url: string, form: Record<string, string>, timeoutMs: number): Promise<FormAnswer>;
  /** Read per call, like the resource override (tests re-point it). */
  upstreamOverride(): URL | null;
  /** `limits.token_timeout_ms` of the current config, read per call (a reload may change it). */
  tokenTimeoutMs(): number;
  log(event: string, fields: Record<string, unknown>): void;
}

/** A token request that got no answer, told apart: too slow, or not reachable at all. */
export function tokenEndpointFailure(err: unknown, timeoutMs: number): TokenEndpointError {
  const name = err instanceof Error ? err.name : '';
  const code = err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : null;
  // AbortSignal.timeout's reason, and undici's own connect and header timeouts.
  if (
    name === 'TimeoutError' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return new TokenEndpointError('timeout', null, timeoutMs);
  }
  // undici names a socket closed under it UND_ERR_SOCKET: a reset, as far as the caller is concerned.
  return new TokenEndpointError('unreachable', code === 'UND_ERR_SOCKET' ? 'ECONNRESET' : code, timeoutMs);
}

export function adapterContext(sources: AdapterContextSources): AdapterContext {
  return {
    clock: sources.clock,
    async postForm(url, form) {
      const timeoutMs = sources.tokenTimeoutMs();
      try {
        return await sources.postForm(url, form, timeoutMs);
      } catch (err) {
        throw tokenEndpointFailure(err, timeoutMs);
      }
    },
    endpointUrl(url) {
      const override = sources.upstreamOverride();
      return override ? repointed(url, override) : url;
    },
    log: (event, fields) => sources.log(event, fields),
  };
}
