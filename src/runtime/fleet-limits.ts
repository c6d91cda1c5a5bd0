// The rate limiter and session pins of a fleet node: in Redis when `--redis` is given (exact across
// nodes, falling back to this node's own while Redis does not answer), else this node's own, with a
// warning. Shared by the single-threaded node and the coordinator of `serve --workers N` on PostgreSQL;
// the serving threads of such a node decide rate limits themselves (`threadRateLimiter`): each asks
// Redis on its own connection, falling back to the windows the node's threads share.
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

type Log = (event: string, fields?: Record<string, unknown>) => void;

/** A connection to the fleet's Redis. PI_REDIS_TIMEOUT_MS: how long a request waits on Redis before
 *  the node falls back to its own limiter and pins (default 250 ms; a loaded or distant Redis may
 *  need more). `onStatus` is told of transitions. */
function redisConnection(redisUrl: string, onStatus: (up: boolean, detail: string) => void): RedisConnection {
  const timeout = Number(process.env.PI_REDIS_TIMEOUT_MS ?? '');
  return new RedisConnection(redisUrl, {
    ...(Number.isSafeInteger(timeout) && timeout > 0 ? { commandTimeoutMs: timeout } : {}),
    onStatus,
  });
}

/** What the serving threads' own connections add to their coordinator's Redis metrics. */
export interface ThreadsRedis {
  /** Their rate-limit fallbacks. */
  fallbacks(): number;
  /** True while one of them cannot reach Redis (its decisions are then the node's own). */
  anyDown(): boolean;
}

const NO_THREADS: ThreadsRedis = { fallbacks: () => 0, anyDown: () => false };

export async function fleetLimits(
  redisUrl: string | null,
  settings: CompiledConfig['settings'],
  clock: Clock,
  telemetry: Telemetry,
  log: Log,
  /** The serving threads' connections (a `--workers` node's), added to the metrics. */
  threads: ThreadsRedis = NO_THREADS,
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
  const redis = redisConnection(redisUrl, (up, detail) =>
    log(up ? 'redis_recovered' : 'redis_unreachable', up ? { detail } : { detail, fallback: FALLBACK }),
  );
  if (!(await redis.start())) log('redis_unreachable', { detail: 'not reachable at start', fallback: FALLBACK });
  const health = new SharedStateHealth(redis);
  telemetry.metrics?.watchSharedState(() => ({
    // Down while any connection of the node is: a thread that cannot reach Redis decides alone.
    redisUp: health.redisUp && !threads.anyDown(),
    rateLimitFallbacks: health.fallbacks.rateLimit + threads.fallbacks(),
    pinFallbacks: health.fallbacks.pins,
  }));
  return {
    limiter: new SharedRateLimiter(health, clock, null),
    pins: new SharedPins(health, { clock, maxPins: settings.sessions.maxPins }),
    redis,
  };
}

/** How long a serving thread waits for its Redis connection before it starts serving. */
const THREAD_CONNECT_WAIT_MS = 250;

/**
 * A serving thread's rate limiter on a fleet node: Redis on the thread's own connection (exact across
 * nodes, no message to the coordinator), `local` — the windows the node's threads share — while Redis
 * does not answer, each fallback told to `report.fellBack` and each transition of the connection to
 * `report.status` (the coordinator's metrics); without Redis, `local` alone (per node, as the node's
 * limits are then).
 */
export async function threadRateLimiter(
  redisUrl: string | null,
  local: RateLimiter,
  clock: Clock,
  report: { fellBack(): void; status(up: boolean): void },
): Promise<{ limiter: RateLimiter; redis: RedisConnection | null }> {
  if (!redisUrl) return { limiter: local, redis: null };
  const redis = redisConnection(redisUrl, (up) => report.status(up));
  // A short wait: a reachable Redis connects within it; an unreachable one is the coordinator's to
  // report (it waited at start already), and this thread falls back to the shared windows meanwhile.
  await redis.start(THREAD_CONNECT_WAIT_MS);
  const health = new SharedStateHealth(redis, (kind) => {
    if (kind === 'rateLimit') report.fellBack();
  });
  return { limiter: new SharedRateLimiter(health, clock, null, local), redis };
}
