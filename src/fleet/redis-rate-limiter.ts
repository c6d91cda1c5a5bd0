// Per-key request limits shared by every node: the fixed window of the clock minute, counted in Redis
// by ONE Lua script (read, refuse or INCR + PEXPIRE, all atomic on the Redis server), so the limit is
// exact across nodes — N nodes admit exactly `limit` requests of a key per minute between them.
// The window is taken from Redis's own clock (TIME) unless the caller passes its clock (tests), so
// nodes with skewed clocks still agree on which minute a request falls in. Refused requests are not
// counted (as in the in-process limiter). The reply carries the milliseconds to the window's end,
// which becomes Retry-After.
import type { Clock } from '../clock.ts';
import { type RateDecision, retryAfterSeconds } from '../admission/rate-limit.ts';
import type { RedisConnection } from './redis-connection.ts';

const WINDOW_MS = 60_000;

/** KEYS[1] key prefix; ARGV[1] limit; ARGV[2] now in ms, or '' for Redis's clock. → {count or 0 if refused, ms to
 *  window end}. */
export const RATE_LIMIT_SCRIPT = `
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local window = math.floor(now / ${WINDOW_MS})
local left = ${WINDOW_MS} - (now % ${WINDOW_MS})
local key = KEYS[1] .. ':' .. window
local limit = tonumber(ARGV[1])
local used = tonumber(redis.call('GET', key) or '0')
if used >= limit then return {0, left} end
local n = redis.call('INCR', key)
if n == 1 then redis.call('PEXPIRE', key, left + 1000) end
return {n, left}
`;

export class RedisRateLimiter {
  private readonly redis: RedisConnection;
  private readonly clock: Clock | null;
  private readonly prefix: string;
  constructor(
    redis: RedisConnection,
    /** null: Redis's clock decides the window (production); a clock: that clock does (tests). */
    clock: Clock | null = null,
    prefix = 'pi:rl:',
  ) {
    this.redis = redis;
    this.clock = clock;
    this.prefix = prefix;
  }

  /** Throws RedisUnavailableError when Redis does not answer (the caller decides what then). */
  async take(key: string, limitPerMinute: number): Promise<RateDecision> {
    const limit = Number.isFinite(limitPerMinute) ? Math.max(0, Math.floor(limitPerMinute)) : 0;
    const now = this.clock ? String(this.clock.now()) : '';
    const reply = await this.redis.script(RATE_LIMIT_SCRIPT, [this.prefix + key], [String(limit), now]);
    const [count, left] = Array.isArray(reply) ? reply.map(Number) : [Number.NaN, Number.NaN];
    if (!Number.isFinite(count) || !Number.isFinite(left))
      throw new Error(`unexpected rate-limit reply ${JSON.stringify(reply)}`);
    if (count === 0) return { ok: false, retryAfterSeconds: retryAfterSeconds(WINDOW_MS - (left as number)) };
    return { ok: true, remaining: limit - (count as number) };
  }
}
