// Bearer tokens from OAuth token endpoints (Google service accounts, Microsoft Entra), cached per
// credential and token endpoint for one gateway process — so every deployment (every resource, every
// region) that uses the same credential shares one. A token is served until shortly before it
// expires; inside that early window the cached token is still served at once while ONE refresh runs
// in the background; once expired (or never fetched) callers wait for ONE fetch, however many there
// are (single flight). A fetch that fails is remembered for FAILURE_HOLD_MS: callers in that window
// (the next deployment of the same credential, in the same request's failover) fail at once instead
// of waiting on the same endpoint again. A 401 drops the token that was refused so the next call
// fetches a new one. Every time is read from the injected clock. Keys are hashes: the cache never
// holds a credential. A failed fetch is logged (`token_fetch_failed`) with why: the endpoint down,
// too slow, refusing the credential, or answering without a token.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import {
  type AdapterContext,
  CredentialError,
  type FormAnswer,
  type OutgoingRequest,
  TokenEndpointError,
} from './types.ts';

export interface IssuedToken {
  token: string;
  /** ms since the epoch, on the context's clock. */
  expiresAt: number;
  /** ms since the epoch from which a refresh starts in the background. */
  refreshAt: number;
}

interface Entry {
  token: IssuedToken | null;
  pending: Promise<IssuedToken> | null;
  /** The last fetch failed: its error, served until `until` (clock ms). */
  failure: { error: unknown; until: number } | null;
}

/** How long a failed fetch answers for its credential before the endpoint is asked again. */
export const FAILURE_HOLD_MS = 10_000;

/** Refresh this long before expiry: 5 minutes, or half the lifetime of a short-lived token. */
export function refreshAt(now: number, lifetimeMs: number): number {
  return now + lifetimeMs - Math.min(5 * 60_000, lifetimeMs / 2);
}

export class TokenCache {
  private readonly entries = new Map<string, Entry>();

  private readonly clock: Clock;
  constructor(clock: Clock) {
    this.clock = clock;
  }

  /** A fresh token at once, or a promise of one (fetched once for every caller waiting). */
  token(key: string, fetch: () => Promise<IssuedToken>): string | Promise<string> {
    let entry = this.entries.get(key);
    if (!entry) this.entries.set(key, (entry = { token: null, pending: null, failure: null }));
    const now = this.clock.now();
    const held = entry.token;
    const failing = entry.failure !== null && now < entry.failure.until;
    if (held && now < held.expiresAt) {
      // Early window: keep serving this one; one background refresh replaces it.
      if (now >= held.refreshAt && !entry.pending && !failing) this.start(entry, fetch).catch(() => undefined);
      return held.token;
    }
    if (entry.pending) return entry.pending.then((t) => t.token);
    if (failing && entry.failure) return Promise.reject(entry.failure.error);
    return this.start(entry, fetch).then((t) => t.token);
  }

  /** The platform refused `token`: forget it (unless a newer one already replaced it). */
  drop(key: string, token: string): void {
    const entry = this.entries.get(key);
    if (entry?.token?.token === token) entry.token = null;
  }

  private start(entry: Entry, fetch: () => Promise<IssuedToken>): Promise<IssuedToken> {
    const p = fetch().then(
      (t) => {
        entry.token = t;
        entry.pending = null;
        entry.failure = null;
        return t;
      },
      (err: unknown) => {
        entry.pending = null;
        entry.failure = { error: err, until: this.clock.now() + FAILURE_HOLD_MS };
        throw err;
      },
    );
    entry.pending = p;
    return p;
  }
}

const caches = new WeakMap<AdapterContext, TokenCache>();

/** The process's token cache (one per adapter context, so reloads keep tokens). */
export function tokenCacheOf(ctx: AdapterContext): TokenCache {
  let cache = caches.get(ctx);
  if (!cache) caches.set(ctx, (cache = new TokenCache(ctx.clock)));
  return cache;
}

/** A cache key for a credential at a token endpoint: a hash, never the credential itself. */
export function tokenKey(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('base64url');
}

/** Why a token fetch failed, as logged (`token_fetch_failed`'s `reason`). */
export type TokenFailure = 'unreachable' | 'timeout' | 'refused' | 'failed' | 'no_token';

/** The failure as the attempt (and, with no other provider, the client's 503) reads it: what
 *  happened, never the endpoint's own text or a secret. */
function failureMessage(platform: string, reason: TokenFailure, detail: string): string {
  switch (reason) {
    case 'refused':
      return `provider "${platform}" refused the gateway's credential: its token endpoint answered ${detail}`;
    case 'timeout':
      return `provider "${platform}" could not authenticate the gateway: its token endpoint gave no answer within ${detail}`;
    case 'unreachable':
      return `provider "${platform}" could not authenticate the gateway: its token endpoint could not be reached${detail}`;
    case 'failed':
      return `provider "${platform}" could not authenticate the gateway: its token endpoint failed (${detail})`;
    case 'no_token':
      return `provider "${platform}" could not authenticate the gateway: its token endpoint answered without a usable access token`;
  }
}

/** Logs a failed fetch and makes its CredentialError. The endpoint is logged without its query. */
function tokenFailure(
  ctx: AdapterContext,
  url: string,
  platform: string,
  reason: TokenFailure,
  detail: string,
  fields: Record<string, unknown>,
): CredentialError {
  const u = new URL(url);
  ctx.log('token_fetch_failed', { provider: platform, reason, endpoint: `${u.origin}${u.pathname}`, ...fields });
  return new CredentialError(failureMessage(platform, reason, detail));
}

/** POSTs a token request and reads the OAuth answer; a failure names the provider and what went
 *  wrong (down, slow, refused), never a secret or the endpoint's own error text. */
export async function requestToken(
  ctx: AdapterContext,
  url: string,
  form: Record<string, string>,
  platform: string,
): Promise<IssuedToken> {
  let answer: FormAnswer;
  const endpoint = ctx.endpointUrl(url);
  try {
    answer = await ctx.postForm(endpoint, form);
  } catch (err) {
    if (err instanceof TokenEndpointError && err.kind === 'timeout')
      throw tokenFailure(ctx, url, platform, 'timeout', `${err.timeoutMs} ms`, { timeout_ms: err.timeoutMs });
    const code = err instanceof TokenEndpointError ? err.code : null;
    throw tokenFailure(ctx, url, platform, 'unreachable', code ? ` (${code})` : '', { error_code: code });
  }
  if (answer.status >= 400 && answer.status < 500)
    throw tokenFailure(ctx, url, platform, 'refused', `HTTP ${answer.status}`, { status: answer.status });
  if (answer.status < 200 || answer.status >= 300)
    throw tokenFailure(ctx, url, platform, 'failed', `HTTP ${answer.status}`, { status: answer.status });
  let token: unknown;
  let expiresIn: unknown;
  try {
    const obj = JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>;
    token = obj['access_token'];
    expiresIn = obj['expires_in'];
  } catch {
    token = undefined;
  }
  const seconds = typeof expiresIn === 'string' ? Number(expiresIn) : expiresIn;
  if (
    typeof token !== 'string' ||
    token === '' ||
    typeof seconds !== 'number' ||
    !Number.isFinite(seconds) ||
    seconds <= 0
  ) {
    throw tokenFailure(ctx, url, platform, 'no_token', '', { status: answer.status });
  }
  const now = ctx.clock.now();
  return { token, expiresAt: now + seconds * 1000, refreshAt: refreshAt(now, seconds * 1000) };
}

/** Puts a token on the request as `Authorization: Bearer`: at once when the cache had it, after the
 *  fetch otherwise (the adapter's `authorize` returns what this returns). */
export function setBearer(out: OutgoingRequest, token: string | Promise<string>): void | Promise<void> {
  if (typeof token === 'string') {
    out.headers['authorization'] = `Bearer ${token}`;
    return;
  }
  return token.then((t) => {
    out.headers['authorization'] = `Bearer ${t}`;
  });
}

/** The bearer token a request carried (what `refused` drops). */
export function bearerOf(out: OutgoingRequest): string {
  return (out.headers['authorization'] ?? '').replace(/^Bearer /, '');
}
