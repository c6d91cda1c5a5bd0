// Session pins shared by every node, with the in-process pins' 1-hour sliding lifetime: `touch`
// (a request was admitted) restarts the lifetime of a live pin in one script (GET + PEXPIRE, atomic),
// `set` (an attempt succeeded) writes the pin with SET … PX, and Redis expires it. Keys are a hash
// of the pin key (bounded length whatever the client's session id). The bound on the number of pins
// is Redis's memory policy, not `sessions.max_pins` (which bounds the in-process pins).
import { createHash } from 'node:crypto';
import { PIN_TTL_MS } from '../routing/session-pins.ts';
import type { RedisConnection } from './redis-connection.ts';

/** KEYS[1] pin; ARGV[1] lifetime ms → the deployment id or nil; a live pin lives another lifetime. */
export const TOUCH_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if v then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return v
`;

export class RedisPins {
  private readonly redis: RedisConnection;
  private readonly ttlMs: number;
  private readonly prefix: string;
  constructor(redis: RedisConnection, ttlMs = PIN_TTL_MS, prefix = 'pi:pin:') {
    this.redis = redis;
    this.ttlMs = ttlMs;
    this.prefix = prefix;
  }

  redisKey(key: string): string {
    return this.prefix + createHash('sha256').update(key).digest('base64url');
  }

  async get(key: string): Promise<string | null> {
    const v = await this.redis.command(['GET', this.redisKey(key)]);
    return typeof v === 'string' ? v : null;
  }

  /** A request with this session was admitted: a live pin lives another lifetime; returns it. */
  async touch(key: string): Promise<string | null> {
    const v = await this.redis.script(TOUCH_SCRIPT, [this.redisKey(key)], [String(this.ttlMs)]);
    return typeof v === 'string' ? v : null;
  }

  async set(key: string, deploymentId: string): Promise<void> {
    await this.redis.command(['SET', this.redisKey(key), deploymentId, 'PX', String(this.ttlMs)]);
  }

  async drop(key: string): Promise<void> {
    await this.redis.command(['DEL', this.redisKey(key)]);
  }

  /** Milliseconds the pin has left (-2 absent), for tests and diagnostics. */
  async ttl(key: string): Promise<number> {
    return Number(await this.redis.command(['PTTL', this.redisKey(key)]));
  }
}
