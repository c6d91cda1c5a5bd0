// The rate limiter and session pins of a fleet node: in Redis when `--redis` is given (exact across
// nodes, falling back to this node's own while Redis does not answer), else this node's own, with a
// warning. Shared by the single-threaded node and the coordinator of `serve --workers N` on PostgreSQL.
import { FixedWindowRateLimiter, type RateLimiter } from '../admission/rate-limit.ts';
import type { Clock } from '../clock.ts';
import type { CompiledConfig } from '../config/compiled.ts';
import { type PinStore, SessionPins } from '../routing/session-pins.ts';
import { RedisConnection } from '../fleet/redis-connection.ts';
import { SharedPins, SharedRateLimiter, SharedStateHealth } from '../fleet/shared-limits.ts';
import type { Telemetry } from '../telemetry/telemetry.ts';

export interface FleetLimits {
  limiter: RateLimiter;
  pins: PinStore;
  redis: RedisConnection | null;
}

const FALLBACK = 'per-node rate limits and session pins until Redis answers';

export async function fleetLimits(
  redisUrl: string | null,
  settings: CompiledConfig['settings'],
  clock: Clock,
  telemetry: Telemetry,
  log: (event: string, fields?: Record<string, unknown>) => void,
): Promise<FleetLimits> {
  if (!redisUrl) {
    log('per_node_limits', {
      detail: 'no --redis: rate limits and session pins are per node (a key may send limit × nodes a minute)',
    });
    return {
      limiter: new FixedWindowRateLimiter(clock),
      pins: new SessionPins({ clock, maxPins: settings.sessions.maxPins }),
      redis: null,
    };
  }
  // PI_REDIS_TIMEOUT_MS: how long a request waits on Redis before this node falls back to its own
  // limiter and pins (default 250 ms; a loaded or distant Redis may need more).
  const timeout = Number(process.env.PI_REDIS_TIMEOUT_MS ?? '');
  const redis = new RedisConnection(redisUrl, {
    ...(Number.isSafeInteger(timeout) && timeout > 0 ? { commandTimeoutMs: timeout } : {}),
    onStatus: (up, detail) =>
      log(up ? 'redis_recovered' : 'redis_unreachable', up ? { detail } : { detail, fallback: FALLBACK }),
  });
  if (!(await redis.start())) log('redis_unreachable', { detail: 'not reachable at start', fallback: FALLBACK });
  const health = new SharedStateHealth(redis);
  telemetry.metrics?.watchSharedState(() => ({
    redisUp: health.redisUp,
    rateLimitFallbacks: health.fallbacks.rateLimit,
    pinFallbacks: health.fallbacks.pins,
  }));
  return {
    limiter: new SharedRateLimiter(health, clock, null),
    pins: new SharedPins(health, { clock, maxPins: settings.sessions.maxPins }),
    redis,
  };
}
