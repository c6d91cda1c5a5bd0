// What a node on PostgreSQL reads of keys and credentials on the request path: unsealed credentials
// held in memory (opened at start; the routing code asks for them synchronously), verified keys cached
// per node. A trigger on every key or secret write (by any node or CLI) moves the store's change
// counter (`store_changes`) and logs which key or secret changed (`store_change_log`): `sync()` polls
// the counter at most once every `pollMs` in the background and, when it moved, reads the changes
// since and applies just those — the changed keys' cached verifications dropped and their digests
// learned, the changed credentials opened again — so a `key revoke` or `secret set` reaches every
// node within about a second without a query per request, and a platform issuing keys every second
// does not make every node start its cache afresh every second. A node further behind than the log
// keeps (or meeting a change it cannot apply: a deleted key) reloads everything. A key not in the
// cache is verified against PostgreSQL (one indexed query); when PostgreSQL does not answer, that
// request is refused with 503 store_unavailable.
//
// Keys nobody issued cost no query each: the node knows every issued key's digest (the sha256 the
// store keeps; loaded with the credentials, again whenever the change counter moves), and a key whose
// digest it does not know is refused as unknown without asking — unless fewer than
// MAX_UNSEEN_LOOKUPS such lookups are under way, so a key issued in the last second (before this
// node's next poll) still verifies at once. A flood of made-up keys — random, or an issued key's
// visible prefix with a guessed rest — therefore holds at most that many of the pool's connections,
// which the wallets' holds and settlements share, and caches nothing: only keys PostgreSQL knows
// are cached, so the flood never pushes out the verified keys of other tenants.
import { GatewayError } from '../errors.ts';
import type { ApiKeyRecord } from '../store/types.ts';
import { SecretError } from '../store/seal.ts';
import { isTransient, type PgStore } from '../store/postgres/store.ts';
import { hashKey, isWellFormedKey, keyState } from '../store/key-format.ts';
import type { KeyVerification } from '../admission/admission.ts';
import type { KeyCheck } from '../admission/api-key.ts';
import type { BadSecretHandler, KeysAndCredentials } from '../admission/store-view.ts';
import { setBounded } from '../bounded-map.ts';

const MAX_CACHED_KEYS = 10_000;
/** Lookups of keys with a prefix this node has not seen, under way at once (see the top). */
export const MAX_UNSEEN_LOOKUPS = 2;
/** How often a node asks whether keys or secrets changed. */
export const CHANGE_POLL_MS = 1_000;
/** Beyond this many changes since the last poll, reloading everything is the cheaper way. */
export const MAX_CHANGES_APPLIED = 1_000;

/** A stored credential as the store opened it: its value, or why it does not open. */
type Opened = { value: string } | { error: SecretError };

export class PgStoreView implements KeysAndCredentials {
  private values = new Map<string, string | null>();
  /** The last value each name opened to: kept when a rotation under us seals it with a key we lack. */
  private readonly opened = new Map<string, string>();
  private readonly keys = new Map<string, ApiKeyRecord | Exclude<KeyCheck, 'ok'>>();
  /** Records of revoked keys and of keys looked up only for the request log (`keyRecord`),
   *  dropped with `keys`. */
  private readonly refused = new Map<string, ApiKeyRecord | null>();
  /** The digest of every issued key as of the last load. */
  private digests = new Set<string>();
  private unseenLookups = 0;
  /** Moves whenever cached keys are forgotten: a lookup that started before may have read a key
   *  as it was before the change, so its answer is used but not cached. */
  private forgetGeneration = 0;
  private version: bigint = -1n;
  private lastPoll = 0;
  private polling: Promise<void> | null = null;
  /** False while the last poll failed: readiness reports the store as not answering. */
  storeAnswers = true;

  private readonly store: PgStore;
  private readonly onBadSecret: BadSecretHandler;
  private readonly pollMs: number;
  private constructor(store: PgStore, onBadSecret: BadSecretHandler, pollMs: number) {
    this.store = store;
    this.onBadSecret = onBadSecret;
    this.pollMs = pollMs;
  }

  /** Opens every credential and reads the change counter before the node serves. */
  static async open(
    store: PgStore,
    onBadSecret: BadSecretHandler = () => undefined,
    pollMs = CHANGE_POLL_MS,
  ): Promise<PgStoreView> {
    const v = new PgStoreView(store, onBadSecret, pollMs);
    v.version = await store.changeVersion();
    await v.load();
    v.lastPoll = Date.now();
    return v;
  }

  sync(): void {
    if (this.polling || Date.now() - this.lastPoll < this.pollMs) return;
    this.lastPoll = Date.now();
    this.polling = this.poll().finally(() => (this.polling = null));
  }

  /** Asks for the change counter now (tests); resolves once caches are current. */
  async pollNow(): Promise<void> {
    if (this.polling) await this.polling;
    this.lastPoll = Date.now();
    await (this.polling = this.poll().finally(() => (this.polling = null)));
  }

  has(name: string): boolean {
    return this.values.has(name);
  }

  reveal(name: string): string | null {
    return this.values.get(name) ?? null;
  }

  /** Stored credential names (readiness). */
  names(): Set<string> {
    return new Set(this.values.keys());
  }

  async verifyKey(presented: string, now: number): Promise<KeyVerification> {
    const hit = this.keys.get(presented);
    if (hit !== undefined) {
      if (typeof hit === 'string') return { status: hit };
      if (hit.expiresAt !== null && hit.expiresAt <= now) return { status: 'expired' };
      return { status: 'ok', key: hit };
    }
    if (!isWellFormedKey(presented)) return { status: 'invalid' };
    const seen = this.digests.has(hashKey(presented).toString('base64'));
    if (!seen && this.unseenLookups >= MAX_UNSEEN_LOOKUPS) return { status: 'not_found' };
    if (!seen) this.unseenLookups++;
    const generation = this.forgetGeneration;
    try {
      const key = await this.ask(() => this.store.apiKeys.find(presented));
      if (key === null) return { status: 'not_found' };
      const state = keyState(key, now);
      // Only what PostgreSQL knows is cached (a made-up key would push out real ones), and only
      // when no change was applied while the lookup ran (it may have read the key as it was
      // before). A revoked key stays revoked; any other is cached as its record, whose expiry each
      // request judges at its own time: a client still sending a refused key costs no query per
      // request either.
      if (generation === this.forgetGeneration) {
        setBounded(this.keys, presented, state === 'revoked' ? 'revoked' : key, MAX_CACHED_KEYS);
        if (state === 'revoked') setBounded(this.refused, presented, key, MAX_CACHED_KEYS);
      }
      return state === 'active' ? { status: 'ok', key } : { status: state };
    } finally {
      if (!seen) this.unseenLookups--;
    }
  }

  /** The record of a refused (revoked, expired) key, for the request log: from the caches when
   *  the key's verification left it there. */
  async keyRecord(presented: string): Promise<ApiKeyRecord | null> {
    const cached = this.keys.get(presented);
    if (cached !== undefined && typeof cached !== 'string') return cached;
    const hit = this.refused.get(presented);
    if (hit !== undefined) return hit;
    const generation = this.forgetGeneration;
    const found = await this.ask(() => this.store.apiKeys.find(presented));
    if (generation === this.forgetGeneration) setBounded(this.refused, presented, found, MAX_CACHED_KEYS);
    return found;
  }

  private async ask<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      // No answer, or a statement that ran out of time: the store's failure, a 503 to retry.
      if (!isTransient(err)) throw err;
      throw new GatewayError(
        'store_unavailable',
        'the key store (PostgreSQL) did not answer in time; the request was not admitted',
      );
    }
  }

  private async poll(): Promise<void> {
    try {
      const v = await this.store.changeVersion();
      this.storeAnswers = true;
      if (v === this.version) return;
      // The version moves only once all is applied: a poll that fails is tried again next poll.
      if (!(await this.applyChanges(v))) await this.load();
      this.version = v;
    } catch {
      this.storeAnswers = false;
    }
  }

  /**
   * The changes after this view's version up to `v`, applied; false (nothing applied) when the log
   * no longer holds them all, there are too many, or one cannot be applied alone (a key deleted:
   * its digest is gone with it). Everything is read before anything changes.
   */
  private async applyChanges(v: bigint): Promise<boolean> {
    const behind = v - this.version;
    if (behind <= 0n || behind > BigInt(MAX_CHANGES_APPLIED)) return false;
    const changes = await this.store.changesBetween(this.version, v);
    if (BigInt(changes.length) !== behind) return false;
    const keyIds = [...new Set(changes.filter((c) => c.kind === 'key').map((c) => c.ref))];
    const names = [...new Set(changes.filter((c) => c.kind === 'secret').map((c) => c.ref))];
    const [keys, secrets] = await Promise.all([this.store.apiKeys.byIds(keyIds), this.store.secrets.reveal(names)]);
    if (keys.length !== keyIds.length) return false;
    for (const k of keys) this.digests.add(k.digest);
    if (keyIds.length > 0) this.forgetKeys(new Set(keyIds));
    for (const name of names) {
      const r = secrets.get(name);
      if (r) this.values.set(name, this.openedValue(name, r));
      else {
        this.values.delete(name);
        this.opened.delete(name);
      }
    }
    return true;
  }

  /** Drops the cached verifications and records of these keys, and every "no such key" record (one
   *  of them may be a key just issued). */
  private forgetKeys(ids: ReadonlySet<string>): void {
    this.forgetGeneration++;
    for (const [presented, hit] of this.keys) {
      const record = typeof hit === 'string' ? this.refused.get(presented) : hit;
      if (!record || ids.has(record.id)) this.keys.delete(presented);
    }
    for (const [presented, record] of this.refused) if (!record || ids.has(record.id)) this.refused.delete(presented);
  }

  /** Credentials and key digests, both read before either is used; the verified keys dropped. */
  private async load(): Promise<void> {
    const [all, digests] = await Promise.all([this.store.secrets.revealAll(), this.store.apiKeys.digests()]);
    this.applySecrets(all);
    this.digests = digests;
    this.forgetGeneration++;
    this.keys.clear();
    this.refused.clear();
  }

  private applySecrets(all: ReadonlyMap<string, Opened>): void {
    const next = new Map<string, string | null>();
    for (const [name, r] of all) next.set(name, this.openedValue(name, r));
    for (const name of this.opened.keys()) if (!all.has(name)) this.opened.delete(name);
    this.values = next;
  }

  /** What a credential opened to; one sealed with a master key this node lacks (a rotation under
   *  way) keeps the value it last opened to, reported either way. */
  private openedValue(name: string, r: Opened): string | null {
    if ('value' in r) {
      this.opened.set(name, r.value);
      return r.value;
    }
    const previous =
      r.error instanceof SecretError && r.error.code === 'wrong_master_key' ? this.opened.get(name) : undefined;
    this.onBadSecret(name, r.error, previous !== undefined);
    return previous ?? null;
  }
}
