// Rate limits and session pins of a node on Redis, and what happens when Redis does not answer.
//
// Choice (documented in docs/operations.md and docs/fleet.md): when Redis is unreachable the node keeps serving
// and falls back to its own in-process limiter and pins, with one logged warning when that starts
// (`redis_unreachable`) and one when Redis answers again (`redis_recovered`); the fallback count is
// kept for metrics and readiness. Why: money never depends on Redis (holds are exact in PostgreSQL,
// which fails closed), so the worst a Redis outage can do this way is let one key send up to
// `limit × nodes` requests in a minute — still bounded, per node exact — and lose stickiness, while
// failing closed would turn a cache outage into a company-wide outage of every model. Each call tries
// Redis first (a dead connection fails at once, without queueing), so service returns to the shared
// windows by itself as soon as Redis is back. Counts taken locally during the outage are not carried
// into Redis.
import type { Clock } from '../clock.ts';
import { FixedWindowRateLimiter, type RateDecision, type RateLimiter } from '../admission/rate-limit.ts';
import { type PinStore, SessionPins } from '../routing/session-pins.ts';
import { RedisUnavailableError, type RedisConnection } from './redis-connection.ts';
import { RedisPins } from './redis-pins.ts';
import { RedisRateLimiter } from './redis-rate-limiter.ts';

export interface FallbackCounts {
  /** Rate-limit decisions taken locally because Redis did not answer. */
  rateLimit: number;
  /** Pin reads and writes done locally because Redis did not answer. */
  pins: number;
}

/** Counts fallbacks (metrics, readiness) and logs the transitions. */
export class SharedStateHealth {
  readonly fallbacks: FallbackCounts = { rateLimit: 0, pins: 0 };
  readonly redis: RedisConnection;
  private readonly onFallback: ((kind: keyof FallbackCounts) => void) | null;
  /** `onFallback`: told of each fallback too (a serving thread's count reaches its coordinator's
   *  metrics through it). */
  constructor(redis: RedisConnection, onFallback?: (kind: keyof FallbackCounts) => void) {
    this.redis = redis;
    this.onFallback = onFallback ?? null;
  }
  get redisUp(): boolean {
    return this.redis.up;
  }
  fellBack(kind: keyof FallbackCounts): void {
    this.fallbacks[kind]++;
    this.onFallback?.(kind);
  }
}

export class SharedRateLimiter implements RateLimiter {
  private readonly remote: RedisRateLimiter;
  private readonly local: RateLimiter;

  private readonly health: SharedStateHealth;
  constructor(
    health: SharedStateHealth,
    clock: Clock,
    /** null: Redis's clock picks the window (production); tests pass their clock. */
    windowClock: Clock | null,
    /** The node's own windows while Redis does not answer (a serving thread passes the ones its
     *  node's threads share; default: this thread's). */
    local: RateLimiter = new FixedWindowRateLimiter(clock),
  ) {
    this.health = health;
    this.remote = new RedisRateLimiter(health.redis, windowClock);
    this.local = local;
  }

  async take(key: string, limitPerMinute: number): Promise<RateDecision> {
    try {
      return await this.remote.take(key, limitPerMinute);
    } catch (err) {
      if (!(err instanceof RedisUnavailableError)) throw err;
      this.health.fellBack('rateLimit');
      return this.local.take(key, limitPerMinute);
    }
  }
}

export class SharedPins implements PinStore {
  private readonly remote: RedisPins;
  private readonly local: SessionPins;

  private readonly health: SharedStateHealth;
  constructor(health: SharedStateHealth, opts: { clock: Clock; maxPins: number; ttlMs?: number }) {
    this.health = health;
    this.remote = new RedisPins(health.redis, opts.ttlMs);
    this.local = new SessionPins(opts);
  }

  get(key: string): Promise<string | null> {
    return this.either(
      () => this.remote.get(key),
      () => this.local.get(key),
    );
  }

  touch(key: string): Promise<void> {
    return this.either(
      async () => void (await this.remote.touch(key)),
      () => this.local.touch(key),
    );
  }

  set(key: string, deploymentId: string): Promise<void> {
    return this.either(
      () => this.remote.set(key, deploymentId),
      () => this.local.set(key, deploymentId),
    );
  }

  drop(key: string): Promise<void> {
    return this.either(
      () => this.remote.drop(key),
      () => this.local.drop(key),
    );
  }

  resize(maxPins: number): void {
    this.local.resize(maxPins);
  }

  private async either<T>(remote: () => Promise<T>, local: () => T): Promise<T> {
    try {
      return await remote();
    } catch (err) {
      if (!(err instanceof RedisUnavailableError)) throw err;
      this.health.fellBack('pins');
      return local();
    }
  }
}
