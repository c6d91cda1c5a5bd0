// The request path's view of the store: verified API keys (admission's KeyVerifier) and unsealed
// credentials (routing's and the upstream call's CredentialView) cached in memory, dropped whenever
// another process commits to the database (a `key revoke` or `secret set` from the CLI takes effect
// on the next request, without a restart or a polling delay).
import type { ApiKeyRecord, Store } from '../store/store.ts';
import type { CredentialView } from '../availability/serving.ts';
import type { KeyVerification, KeyVerifier } from './admission.ts';
import type { KeyCheck } from './api-key.ts';

const MAX_CACHED_KEYS = 10_000;

export class StoreView implements CredentialView, KeyVerifier {
  private names: Set<string>;
  private readonly unsealed = new Map<string, string | null>();
  private readonly keys = new Map<string, ApiKeyRecord | Exclude<KeyCheck, 'ok'>>();
  /** Records of refused (revoked, expired) keys, for the request log; dropped with `keys`. */
  private readonly refused = new Map<string, ApiKeyRecord | null>();

  constructor(
    private readonly store: Store,
    private readonly onBadSecret: (name: string, err: unknown) => void = () => undefined,
    /** Another process committed (a credit, a key, a secret): caches beyond this view refresh too. */
    private readonly onExternalChange: () => void = () => undefined,
  ) {
    this.names = store.secrets.names();
  }

  /** Called once per request: notices commits by other processes (CLI) and drops the caches. */
  sync(): void {
    if (!this.store.changedSinceLastCheck()) return;
    this.names = this.store.secrets.names();
    this.unsealed.clear();
    this.keys.clear();
    this.refused.clear();
    this.onExternalChange();
  }

  has(name: string): boolean {
    return this.names.has(name);
  }

  /** The unsealed credential, or null when absent or refused (tampered row, wrong master key). */
  reveal(name: string): string | null {
    const cached = this.unsealed.get(name);
    if (cached !== undefined) return cached;
    let value: string | null = null;
    try {
      value = this.store.secrets.reveal(name);
    } catch (err) {
      this.onBadSecret(name, err);
    }
    this.unsealed.set(name, value);
    return value;
  }

  /** The record of a refused key, for the request log (one query per distinct key until the next sync). */
  keyRecord(presented: string): ApiKeyRecord | null {
    const hit = this.refused.get(presented);
    if (hit !== undefined) return hit;
    const found = this.store.apiKeys.find(presented);
    if (this.refused.size >= MAX_CACHED_KEYS) this.refused.clear();
    this.refused.set(presented, found);
    return found;
  }

  /** Key check with a cache keyed by the presented key; expiry is re-checked against `now` each time. */
  verifyKey(presented: string, now: number): KeyVerification {
    const hit = this.keys.get(presented);
    if (hit !== undefined) {
      if (typeof hit === 'string') return { status: hit };
      if (hit.expiresAt !== null && hit.expiresAt <= now) return { status: 'expired' };
      return { status: 'ok', key: hit };
    }
    const r = this.store.apiKeys.verify(presented, now);
    if (this.keys.size >= MAX_CACHED_KEYS) this.keys.clear();
    // Only definite answers are cached: 'invalid' is decided by format alone and costs nothing.
    if (r.status === 'ok') this.keys.set(presented, r.key);
    else if (r.status === 'not_found' || r.status === 'revoked') this.keys.set(presented, r.status);
    return r;
  }
}
