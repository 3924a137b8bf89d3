/**
 * Per-key rate limits shared by every relay instance on one Redis (issue 15; docs/relay-scale.md): the token bucket
 * of core/tokenBucket.ts, kept in a Redis hash per key id (`svc:rl:<keyId>`) and taken in one Lua script, so a key
 * that may make 60 requests at once and 30 a second gets that in total, whichever instances it talks to. The
 * script reads Redis's own clock (`TIME`): instances whose clocks differ still share one bucket.
 *
 * When Redis does not answer, the request is judged by this instance's own bucket (the same limits, per instance)
 * and the log says so once per outage: the relay keeps serving, with limits that hold per instance meanwhile.
 */
import type { Redis } from 'ioredis';
import type { BucketConfig } from '../core/tokenBucket.js';
import type { Log } from './log.js';
import { type KeyLimiter, LocalKeyLimiter } from './rateLimit.js';

/** The bucket math of core/tokenBucket.ts `takeToken`, in Lua: refill by elapsed time, cap, take one or say when. */
const TAKE = `
local capacity = tonumber(ARGV[1])
local perMs = tonumber(ARGV[2]) / 1000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local saved = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(saved[1]) or capacity
local at = tonumber(saved[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * perMs)
local allowed = 0
local retry = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  retry = math.ceil((1 - tokens) / perMs)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / perMs) + 1000)
return {allowed, retry}
`;

export class RedisKeyLimiter implements KeyLimiter {
  private readonly fallback: LocalKeyLimiter;
  private down = false;

  constructor(
    private readonly redis: Redis,
    private readonly config: BucketConfig,
    private readonly log: Log,
    now: () => number = Date.now,
  ) {
    this.fallback = new LocalKeyLimiter(config, now);
  }

  async take(name: string): Promise<{ allowed: boolean; retryAfterMs: number }> {
    try {
      const [allowed, retry] = (await this.redis.eval(
        TAKE,
        1,
        `svc:rl:${name}`,
        String(this.config.capacity),
        String(this.config.refillPerSecond),
      )) as [number, number];
      if (this.down) {
        this.down = false;
        this.log.info('rate limits: Redis answers again; limits are shared by every instance again');
      }
      return { allowed: allowed === 1, retryAfterMs: retry };
    } catch (error) {
      if (!this.down) {
        this.down = true;
        this.log.warn(`rate limits: Redis did not answer (${(error as Error).message}); each instance limits alone`);
      }
      return this.fallback.take(name);
    }
  }
}
