import { Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { ThrottlerStorageService, type ThrottlerStorage } from '@nestjs/throttler';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import type Redis from 'ioredis';
import { messageOf } from '../errors/message-of';
import { closeRedis, openRedis } from '../redis/redis-connection';
import { AppConfig } from '../../config/app-config';

/**
 * One hit in a fixed window, counted under KEYS[1]: the count and its remaining lifetime (ms). The
 * window starts with the first hit (PEXPIRE only when the key is new), so it is atomic across every
 * API process. The counts under any further keys (the same count under a key used before; see
 * AccountLoginAttempts) are added, unchanged; over the limit (ARGV[2]), the lifetime is then the time
 * until enough of those counts have run out for the total to be within it again.
 */
const HIT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
local counts = {{hits, ttl}}
local total = hits
for i = 2, #KEYS do
  local earlier = tonumber(redis.call('GET', KEYS[i]) or '0')
  if earlier > 0 then
    total = total + earlier
    table.insert(counts, {earlier, redis.call('PTTL', KEYS[i])})
  end
end
local limit = tonumber(ARGV[2])
if total > limit and #counts > 1 then
  table.sort(counts, function(a, b) return a[2] < b[2] end)
  local left = total
  for _, count in ipairs(counts) do
    if left <= limit then break end
    left = left - count[1]
    ttl = count[2]
  end
end
return {total, ttl}`;

/**
 * The auth rate limits (login form, token endpoint, join page, each account's password attempts) counted in Redis, shared by every
 * API process, under the deployment's QUEUE_PREFIX. A maintained package for this
 * (@nest-lab/throttler-storage-redis 1.2) declares NestJS up to 11 only, so this is a few lines of
 * our own. If Redis does not answer within a second, the limit is counted in this process's memory
 * instead (logged): logins keep working during a Redis outage and stay limited per process.
 */
@Injectable()
export class RedisThrottlerStorage implements ThrottlerStorage, OnApplicationShutdown {
  private readonly logger = new Logger(RedisThrottlerStorage.name);
  private readonly redis: Redis;
  private readonly fallback = new ThrottlerStorageService();
  private readonly prefix: string;

  constructor(config: AppConfig) {
    this.prefix = `${config.env.QUEUE_PREFIX}:throttle:`;
    this.redis = openRedis(config.env.REDIS_URL, {
      maxRetriesPerRequest: 1,
      // Commands wait for the connection (at boot), but never longer than this.
      commandTimeout: 1000,
      lazyConnect: false,
    });
  }

  increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    return this.incrementAcross([key], ttl, limit, blockDuration, throttlerName);
  }

  /**
   * A hit counted under `keys[0]`, against a budget that also counts the hits under the other keys
   * (the same count under earlier names for it). In memory, during an outage, only `keys[0]`'s.
   */
  async incrementAcross(
    [key, ...earlier]: string[],
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerStorageRecord> {
    try {
      const [hits, remainingMs] = (await this.redis.eval(
        HIT,
        1 + earlier.length,
        this.redisKey(key, throttlerName),
        ...earlier.map((k) => this.redisKey(k, throttlerName)),
        String(Math.max(ttl, blockDuration)),
        String(limit),
      )) as [number, number];
      const seconds = Math.max(1, Math.ceil(remainingMs / 1000));
      const isBlocked = hits > limit;
      return { totalHits: hits, timeToExpire: seconds, isBlocked, timeToBlockExpire: isBlocked ? seconds : 0 };
    } catch (err) {
      this.logger.warn({ err: messageOf(err) }, 'rate limit counted in this process only: Redis did not answer');
      return this.fallback.increment(key, ttl, limit, blockDuration, throttlerName);
    }
  }

  /**
   * Forgets the hits counted under `keys` (a right password clears its account's count). During a
   * Redis outage the count kept in this process's memory is left to run out.
   */
  async reset(keys: string[], throttlerName: string): Promise<void> {
    try {
      await this.redis.del(...keys.map((key) => this.redisKey(key, throttlerName)));
    } catch (err) {
      this.logger.warn({ err: messageOf(err) }, 'rate limit not reset: Redis did not answer');
    }
  }

  /** Where one limit's count lives: under the deployment's prefix, per limit (throttler) and key. */
  private redisKey(key: string, throttlerName: string): string {
    return `${this.prefix}${throttlerName}:${key}`;
  }

  async onApplicationShutdown(): Promise<void> {
    this.fallback.onApplicationShutdown();
    await closeRedis(this.redis);
  }
}

/** Provides the storage as a provider, so the application closes its Redis connection on shutdown. */
@Module({ providers: [RedisThrottlerStorage], exports: [RedisThrottlerStorage] })
export class RedisThrottlerStorageModule {}
