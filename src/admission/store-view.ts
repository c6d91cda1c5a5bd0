// The request path's view of the store: verified API keys (admission's KeyVerifier) and unsealed
// credentials (routing's and the upstream call's CredentialView) cached in memory, dropped whenever
// another process commits to the database (a `key revoke` or `secret set` from the CLI takes effect
// on the next request, without a restart or a polling delay). After `secret rotate-master` from the
// CLI a running server cannot open the re-sealed rows (it holds the old key until it restarts), so it
// keeps serving the values it had already opened: a rotation needs a restart, never an outage.
import { type ApiKeyRecord, SecretError, type Store } from '../store/sqlite/store.ts';
import type { CredentialView } from '../availability/serving.ts';
import type { KeyVerification, KeyVerifier } from './admission.ts';
import type { KeyCheck } from './api-key.ts';
import { setBounded } from '../bounded-map.ts';

/** The most verified keys (and, apart, the most keys nobody issued) each cache holds. */
export const MAX_CACHED_KEYS = 10_000;

/**
 * Why a credential was not opened from its row: refused (tampered, unreadable; the resource serves
 * nothing), or sealed under a master key this process does not hold — a rotation — while the value
 * opened before it is kept (`kept: true`) until the server restarts with the new key.
 */
export type BadSecretHandler = (name: string, err: unknown, kept: boolean) => void;

/** What the request path reads of the store: credentials, keys, and a per-request check that drops
 *  both caches when another process committed. Implemented over SQLite (`StoreView`) or over
 *  whatever the serving thread is given (a --workers worker gets both from the coordinator). */
export interface KeysAndCredentials extends CredentialView, KeyVerifier {
  /** Called once per request, before anything is read; may need to ask the store's writer. */
  sync(): void | Promise<void>;
  /** The unsealed credential, or null when absent or refused. */
  reveal(name: string): string | null;
}

export class StoreView implements KeysAndCredentials {
  private names: Set<string>;
  private readonly unsealed = new Map<string, string | null>();
  /** The last value each name opened to, across syncs: what a rotation under us falls back to. */
  private readonly opened = new Map<string, string>();
  private readonly keys = new Map<string, ApiKeyRecord | Exclude<KeyCheck, 'ok'>>();
  /** Well-formed keys nobody issued, cached apart: anyone can present any number of them, and they
   *  must never push a verified key of another tenant out of `keys`. */
  private readonly unknown = new Set<string>();
  /** Records of refused (revoked, expired) keys, for the request log; dropped with `keys`. */
  private readonly refused = new Map<string, ApiKeyRecord | null>();

  private readonly store: Store;
  private readonly onBadSecret: BadSecretHandler;
  private readonly onExternalChange: () => void;
  private readonly changed: () => boolean | Promise<boolean>;
  constructor(
    store: Store,
    onBadSecret: BadSecretHandler = () => undefined,
    /** Another process committed (a credit, a key, a secret): caches beyond this view refresh too. */
    onExternalChange: () => void = () => undefined,
    /** Whether another process committed since the last call; default the store's own check. With a
     *  writer thread the serving connection sees that thread's commits too, so the writer (which
     *  does not see its own) answers. */
    changed: () => boolean | Promise<boolean> = () => store.changedSinceLastCheck(),
  ) {
    this.store = store;
    this.onBadSecret = onBadSecret;
    this.onExternalChange = onExternalChange;
    this.changed = changed;
    this.names = store.secrets.names();
    // Opened at start (a few AES-GCM opens), so every credential survives a later rotation.
    for (const name of this.names) this.reveal(name);
  }

  /** Set while this event-loop turn has checked (see sync). */
  private checkedThisTurn = false;
  private readonly endTurn = (): void => {
    this.checkedThisTurn = false;
  };

  /**
   * Called once per request: notices commits by other processes (CLI) and drops the caches. Asks the
   * store once per event-loop turn: the requests that arrived together in one turn cannot be ordered
   * against another process's commit anyway, and under load a turn carries many of them (each ask
   * is a read transaction on the database).
   */
  sync(): void | Promise<void> {
    if (this.checkedThisTurn) return;
    this.checkedThisTurn = true;
    setImmediate(this.endTurn);
    const changed = this.changed();
    if (changed instanceof Promise) {
      return changed.then((yes) => {
        if (yes) this.drop();
      });
    }
    if (changed) this.drop();
  }

  private drop(): void {
    this.names = this.store.secrets.names();
    this.unsealed.clear();
    for (const name of this.opened.keys()) if (!this.names.has(name)) this.opened.delete(name);
    this.keys.clear();
    this.unknown.clear();
    this.refused.clear();
    this.onExternalChange();
  }

  has(name: string): boolean {
    return this.names.has(name);
  }

  /**
   * The unsealed credential, or null when absent or refused (tampered row, wrong master key). A row
   * now sealed under another master key (rotated by the CLI) gives the value this name last opened
   * to, when there is one.
   */
  reveal(name: string): string | null {
    const cached = this.unsealed.get(name);
    if (cached !== undefined) return cached;
    let value: string | null = null;
    try {
      value = this.store.secrets.reveal(name);
      if (value === null) this.opened.delete(name);
      else this.opened.set(name, value);
    } catch (err) {
      const previous =
        err instanceof SecretError && err.code === 'wrong_master_key' ? this.opened.get(name) : undefined;
      if (previous !== undefined) value = previous;
      this.onBadSecret(name, err, previous !== undefined);
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
    if (this.unknown.has(presented)) return { status: 'not_found' };
    const r = this.store.apiKeys.verify(presented, now);
    // Only definite answers are cached: 'invalid' is decided by format alone and costs nothing.
    if (r.status === 'ok') setBounded(this.keys, presented, r.key, MAX_CACHED_KEYS);
    else if (r.status === 'revoked') setBounded(this.keys, presented, r.status, MAX_CACHED_KEYS);
    else if (r.status === 'not_found') {
      if (this.unknown.size >= MAX_CACHED_KEYS) this.unknown.clear();
      this.unknown.add(presented);
    }
    return r;
  }
}
