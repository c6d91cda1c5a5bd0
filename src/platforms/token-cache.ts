// Bearer tokens from OAuth token endpoints (Google service accounts, Microsoft Entra), cached per
// credential and token endpoint for one gateway process. A token is served until shortly before it
// expires; inside that early window the cached token is still served at once while ONE refresh runs
// in the background; once expired (or never fetched) callers wait for ONE fetch, however many there
// are (single flight). A 401 drops the token that was refused so the next call fetches a new one.
// Every time is read from the injected clock. Keys are hashes: the cache never holds a credential.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { type AdapterContext, CredentialError, type FormAnswer, type OutgoingRequest } from './types.ts';

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
}

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
    if (!entry) this.entries.set(key, (entry = { token: null, pending: null }));
    const now = this.clock.now();
    const held = entry.token;
    if (held && now < held.expiresAt) {
      // Early window: keep serving this one; one background refresh replaces it.
      if (now >= held.refreshAt && !entry.pending) this.start(entry, fetch).catch(() => undefined);
      return held.token;
    }
    return (entry.pending ?? this.start(entry, fetch)).then((t) => t.token);
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
        return t;
      },
      (err: unknown) => {
        entry.pending = null;
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

/** POSTs a token request and reads the OAuth answer; a failure names the provider, never a secret. */
export async function requestToken(ctx: AdapterContext, url: string, form: Record<string, string>, platform: string): Promise<IssuedToken> {
  let answer: FormAnswer;
  try {
    answer = await ctx.postForm(ctx.endpointUrl(url), form);
  } catch {
    throw new CredentialError(`provider "${platform}": the token endpoint could not be reached`);
  }
  if (answer.status < 200 || answer.status >= 300) {
    throw new CredentialError(`provider "${platform}": the token endpoint refused the gateway's credential (HTTP ${answer.status})`);
  }
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
  if (typeof token !== 'string' || token === '' || typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) {
    throw new CredentialError(`provider "${platform}": the token endpoint answered without a usable access token`);
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
