// Per-key request limits shared by every node: the fixed window of the clock minute, counted in Redis
// by ONE Lua script (read, refuse or count, all atomic on the Redis server), so the limit is exact
// across nodes — N nodes admit exactly `limit` requests of a key per minute between them.
// The window is taken from Redis's own clock (TIME) unless the caller passes its clock (tests), so
// nodes with skewed clocks still agree on which minute a request falls in. Refused requests are not
// counted (as in the in-process limiter). The reply carries the milliseconds to the window's end,
// which becomes Retry-After.
//
// One Redis key per API key, "<minute>:<count>", that never expires: the session pins, one per
// session a client names, are what fills Redis, and a full Redis evicts only keys that expire
// (docs/fleet.md sets a volatile-* policy). A window that expired with its minute was the first
// such key to go (the nearest expiry, or as likely as any pin): one tenant's sessions reset every
// other key's count. These keys are as many as the API keys that sent a request, and stay small.
import type { Clock } from '../clock.ts';
import { type RateDecision, retryAfterSeconds } from '../admission/rate-limit.ts';
import type { RedisConnection } from './redis-connection.ts';

const WINDOW_MS = 60_000;

/** KEYS[1] the key's window; ARGV[1] limit; ARGV[2] now in ms, or '' for Redis's clock. → {count or 0 if refused,
 *  ms to window end}. The key holds "<minute>:<count>"; a count of another minute counts as 0. */
export const RATE_LIMIT_SCRIPT = `
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local window = math.floor(now / ${WINDOW_MS})
local left = ${WINDOW_MS} - (now % ${WINDOW_MS})
local limit = tonumber(ARGV[1])
local used = 0
local held = redis.call('GET', KEYS[1])
if held then
  local w, n = string.match(held, '^(%d+):(%d+)$')
  if tonumber(w) == window then used = tonumber(n) end
end
if used >= limit then return {0, left} end
redis.call('SET', KEYS[1], string.format('%d:%d', window, used + 1))
return {used + 1, left}
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
