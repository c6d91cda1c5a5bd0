// Session pins (docs/api.md: `X-Pi-Session-Id`): requests with the same workspace, key, model and session
// id go first to the deployment that last answered for that session, for 1 hour after the last
// admitted request. `PinStore` is the seam (the --workers coordinator, Redis implement it);
// `SessionPins` is the in-process one: a bounded in-memory LRU; losing it (restart) only loses
// stickiness.
import type { Clock } from '../clock.ts';

export const PIN_TTL_MS = 3_600_000;

/** Unambiguous whatever the parts contain (a session id is arbitrary client text). */
export function pinKey(workspace: string, keyId: string, model: string, sessionId: string): string {
  return JSON.stringify([workspace, keyId, model, sessionId]);
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
}

/**
 * Bounded LRU of session pins. "Use" for recency is what restarts the TTL — `touch` (a request was
 * admitted) and `set` (an attempt succeeded) — so the map's insertion order is both LRU order and
 * expiry order, and expired pins are swept from its head in O(expired). `get` is a read made by a
 * request already touched, so it changes neither. A pin expires exactly `ttlMs` after the last
 * touch/set (alive while now < expiresAt).
 */
export class SessionPins implements PinStore {
  private readonly clock: Clock;
  private maxPins: number;
  private readonly ttlMs: number;
  private readonly pins = new Map<string, Pin>();

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
      this.pins.delete(key);
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
    if (now >= pin.expiresAt) return;
    pin.expiresAt = now + this.ttlMs;
    this.pins.set(key, pin);
  }

  /** After a successful attempt: pin the session to the deployment that answered. */
  set(key: string, deploymentId: string): void {
    this.pins.delete(key);
    this.pins.set(key, { deploymentId, expiresAt: this.clock.now() + this.ttlMs });
    this.sweep();
    this.evictOverflow();
  }

  private evictOverflow(): void {
    while (this.pins.size > this.maxPins) {
      const oldest = this.pins.keys().next();
      if (oldest.done) break;
      this.pins.delete(oldest.value);
    }
  }

  drop(key: string): void {
    this.pins.delete(key);
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
    this.pins.delete(key);
    return null;
  }

  /** Drops expired pins from the head (oldest first); stops at the first live one. */
  private sweep(): void {
    const now = this.clock.now();
    for (const [key, pin] of this.pins) {
      if (now < pin.expiresAt) break;
      this.pins.delete(key);
    }
  }
}
