// Session pins (docs/api.md: `X-Pi-Session-Id`): requests with the same workspace, key, model and session
// id go first to the deployment that last answered for that session, for 1 hour after the last
// admitted request. `PinStore` is the seam (the --workers coordinator, Redis implement it);
// `SessionPins` is the in-process one: a bounded in-memory LRU; losing it (restart) only loses
// stickiness.
import type { Clock } from '../clock.ts';
import { PinShares } from './pin-shares.ts';

export const PIN_TTL_MS = 3_600_000;

/** Unambiguous whatever the parts contain (a session id is arbitrary client text). */
export function pinKey(workspace: string, keyId: string, model: string, sessionId: string): string {
  return JSON.stringify([workspace, keyId, model, sessionId]);
}

/** The workspace a `pinKey` names ('' for a key of another form). */
export function pinWorkspace(key: string): string {
  if (!key.startsWith('["')) return '';
  try {
    const parts: unknown = JSON.parse(key);
    return Array.isArray(parts) && typeof parts[0] === 'string' ? parts[0] : '';
  } catch {
    return '';
  }
}

/**
 * Where session pins live, shared by every event loop that serves the sessions. A pin lives
 * `PIN_TTL_MS` after its last `touch` or `set` (the 1-hour sliding lifetime). Each call may answer
 * at once (in process) or with a promise (another thread, another machine); the handler awaits
 * `get` and lets `touch`, `set` and `drop` run in the background (a lost one only loses stickiness).
 */
export interface PinStore {
  /** The pinned deployment id, or null when absent or expired. Does not extend the lifetime. */
  get(key: string): string | null | Promise<string | null>;
  /** A request with this session was admitted: a live pin lives another `PIN_TTL_MS`. */
  touch(key: string): void | Promise<void>;
  /** After a successful attempt: pin the session to the deployment that answered. */
  set(key: string, deploymentId: string): void | Promise<void>;
  /** Forgets a pin (its deployment stopped being eligible). */
  drop(key: string): void | Promise<void>;
  /** A new bound from a config reload (a store with its own bound may ignore it). */
  resize(maxPins: number): void;
}

interface Pin {
  deploymentId: string;
  expiresAt: number;
  workspace: string;
}

/**
 * Bounded LRU of session pins. "Use" for recency is what restarts the TTL — `touch` (a request was
 * admitted) and `set` (an attempt succeeded) — so the map's insertion order is both LRU order and
 * expiry order, and expired pins are swept from its head in O(expired). `get` is a read made by a
 * request already touched, so it changes neither. A pin expires exactly `ttlMs` after the last
 * touch/set (alive while now < expiresAt). A full store makes room fairly: the workspace holding the
 * most pins gives up its least recently used one (`PinShares`), so one tenant's flood of session ids
 * pushes other workspaces down to no fewer pins than its own, then only its own; with one workspace
 * that is the plain LRU.
 */
export class SessionPins implements PinStore {
  private readonly clock: Clock;
  private maxPins: number;
  private readonly ttlMs: number;
  private readonly pins = new Map<string, Pin>();
  private readonly shares = new PinShares();

  constructor(opts: { clock: Clock; maxPins: number; ttlMs?: number }) {
    this.clock = opts.clock;
    this.maxPins = Math.max(1, Math.floor(opts.maxPins));
    this.ttlMs = opts.ttlMs ?? PIN_TTL_MS;
  }

  /** The pinned deployment id, or null when absent or expired (an expired pin is dropped). */
  get(key: string): string | null {
    const pin = this.pins.get(key);
    if (!pin) return null;
    if (this.clock.now() >= pin.expiresAt) {
      this.forget(key, pin);
      return null;
    }
    return pin.deploymentId;
  }

  /** A request with this session was admitted: the pin (if alive) lives another `ttlMs`. */
  touch(key: string): void {
    const pin = this.pins.get(key);
    if (!pin) return;
    this.pins.delete(key);
    const now = this.clock.now();
    if (now >= pin.expiresAt) {
      this.shares.remove(pin.workspace, key);
      return;
    }
    pin.expiresAt = now + this.ttlMs;
    this.pins.set(key, pin);
    this.shares.use(pin.workspace, key);
  }

  /** After a successful attempt: pin the session to the deployment that answered. */
  set(key: string, deploymentId: string): void {
    const workspace = this.pins.get(key)?.workspace ?? pinWorkspace(key);
    this.pins.delete(key);
    this.pins.set(key, { deploymentId, expiresAt: this.clock.now() + this.ttlMs, workspace });
    this.shares.use(workspace, key);
    this.evictOverflow(workspace);
  }

  /** Beyond the bound (once expired pins are gone): the least recently used pin of the workspace
   *  holding the most goes, `pinning`'s on a tie. */
  private evictOverflow(pinning?: string): void {
    this.sweep();
    while (this.pins.size > this.maxPins) {
      const victim = this.shares.victim(pinning);
      if (!victim) break;
      this.pins.delete(victim.key);
      this.shares.remove(victim.workspace, victim.key);
    }
  }

  drop(key: string): void {
    const pin = this.pins.get(key);
    if (pin) this.forget(key, pin);
  }

  /** How many live or not yet swept pins `workspace` holds (tests, diagnostics). */
  heldBy(workspace: string): number {
    return this.shares.count(workspace);
  }

  private forget(key: string, pin: Pin): void {
    this.pins.delete(key);
    this.shares.remove(pin.workspace, key);
  }

  /** A new bound from a config reload: pins are kept, the least recently used beyond it evicted. */
  resize(maxPins: number): void {
    this.maxPins = Math.max(1, Math.floor(maxPins));
    this.evictOverflow();
  }

  /** Live pins (expired ones are swept first). */
  get size(): number {
    this.sweep();
    return this.pins.size;
  }

  /**
   * The pin usable for this request: the pinned deployment when it is still among `eligible`
   * (still meets the routing rules), else null — and a pin to a deployment that no longer is
   * eligible is dropped. Health is not checked here: a pin to a down deployment is kept (the
   * ordering just does not put it first) so the session returns to it once it recovers, unless
   * another deployment answers meanwhile and `set` re-pins.
   */
  resolve(key: string, eligible: readonly { id: string }[]): string | null {
    const id = this.get(key);
    if (id === null) return null;
    if (eligible.some((d) => d.id === id)) return id;
    this.drop(key);
    return null;
  }

  /** Drops expired pins from the head (oldest first); stops at the first live one. */
  private sweep(): void {
    const now = this.clock.now();
    for (const [key, pin] of this.pins) {
      if (now < pin.expiresAt) break;
      this.forget(key, pin);
    }
  }
}
