import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../threads/redis/connection.js';
import type { Logger } from 'pino';
import {
  MemoryRateLimiter,
  NOTHING_TO_RELEASE,
  RUN_RETRY_MS,
  WINDOW_MS,
  slidingWindowWait,
  type RateLimiter,
  type ResolvedRateLimits,
} from './rate-limiter.js';

/** How long a run's place is held without being renewed: a killed instance's places free themselves after it. */
const RUN_LEASE_MS = 30_000;

type ScriptedRedis = RedisClient & {
  cgRateHit(...args: (string | number)[]): Promise<[number, number, number]>;
  cgRunAcquire(...args: (string | number)[]): Promise<number>;
};

/**
 * Limits shared by every instance on one Redis (the thread store's command connection). Requests:
 * the same sliding window as in memory, one counter per client and minute. Runs: a sorted set per
 * client of the places held, each with its expiry, renewed by the instance holding it; one script per
 * decision. While Redis cannot be reached, each instance counts on its own (in memory) and says so.
 * A client's keys carry it as their hash tag (`{client}`), so that on a Redis Cluster its two minutes' counters
 * are one slot (one script reads both) and clients spread over the nodes.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly kind = 'redis' as const;
  private readonly fallback: MemoryRateLimiter;
  private readonly held = new Map<string, string>(); // member -> key
  private readonly instance = randomUUID();
  private sequence = 0;
  private readonly renewer: NodeJS.Timeout;
  private lastWarning = 0;

  constructor(
    readonly limits: ResolvedRateLimits,
    private readonly redis: () => RedisClient | undefined,
    private readonly keyPrefix: string,
    private readonly logger: Logger,
  ) {
    this.fallback = new MemoryRateLimiter(limits);
    this.renewer = setInterval(() => this.renew(), RUN_LEASE_MS / 3).unref();
  }

  async hit(client: string): Promise<number> {
    const limit = this.limits.requestsPerMinute;
    if (limit === 0) return 0;
    const redis = this.client();
    if (!redis) return this.fallback.hitNow(client);
    const now = Date.now();
    const window = Math.floor(now / WINDOW_MS);
    try {
      const [allowed, current, previous] = await redis.cgRateHit(
        this.key('rate', client, String(window)),
        this.key('rate', client, String(window - 1)),
        limit,
        (now % WINDOW_MS) / WINDOW_MS,
        WINDOW_MS * 2,
      );
      return allowed === 1 ? 0 : slidingWindowWait(limit, current, previous, now);
    } catch (error) {
      this.warn(error);
      return this.fallback.hitNow(client);
    }
  }

  async wait(client: string): Promise<number> {
    const limit = this.limits.requestsPerMinute;
    if (limit === 0) return 0;
    const redis = this.client();
    if (!redis) return this.fallback.waitNow(client);
    const now = Date.now();
    const window = Math.floor(now / WINDOW_MS);
    try {
      const [current, previous] = await redis.mget(
        this.key('rate', client, String(window)),
        this.key('rate', client, String(window - 1)),
      );
      return slidingWindowWait(limit, Number(current ?? 0), Number(previous ?? 0), now);
    } catch (error) {
      this.warn(error);
      return this.fallback.waitNow(client);
    }
  }

  async acquireRun(client: string): Promise<(() => void) | number> {
    const limit = this.limits.concurrentRuns;
    if (limit === 0) return NOTHING_TO_RELEASE;
    const redis = this.client();
    if (!redis) return this.fallback.acquireRunNow(client);
    const key = this.key('runs', client);
    const member = `${this.instance}:${++this.sequence}`;
    try {
      const taken = await redis.cgRunAcquire(key, Date.now(), limit, member, RUN_LEASE_MS);
      if (taken !== 1) return RUN_RETRY_MS;
    } catch (error) {
      this.warn(error);
      return this.fallback.acquireRunNow(client);
    }
    this.held.set(member, key);
    return () => {
      if (!this.held.delete(member)) return;
      this.client()
        ?.zrem(key, member)
        .catch(() => {
          // Not freed now: its lease runs out instead.
        });
    };
  }

  async close(): Promise<void> {
    clearInterval(this.renewer);
    await this.fallback.close();
  }

  private renew(): void {
    const redis = this.client();
    if (!redis || this.held.size === 0) return;
    const expires = Date.now() + RUN_LEASE_MS;
    // A command each (the clients' keys are different slots on a cluster), every lease period: few, and no hot path.
    for (const [member, key] of this.held) {
      redis.zadd(key, 'XX', expires, member).catch((error: unknown) => this.warn(error));
      redis.pexpire(key, RUN_LEASE_MS * 2).catch((error: unknown) => this.warn(error));
    }
  }

  private client(): ScriptedRedis | undefined {
    const redis = this.redis() as ScriptedRedis | undefined;
    if (!redis || redis.status !== 'ready') return undefined;
    if (!redis.cgRateHit) {
      redis.defineCommand('cgRateHit', { numberOfKeys: 2, lua: RATE_HIT });
      redis.defineCommand('cgRunAcquire', { numberOfKeys: 1, lua: RUN_ACQUIRE });
    }
    return redis;
  }

  /** `{prefix}limit:<kind>:{<client>}[:<minute>]`: a client's keys in one hash slot. */
  private key(kind: string, client: string, ...rest: string[]): string {
    return `${this.keyPrefix}limit:${kind}:{${client}}${rest.map((part) => `:${part}`).join('')}`;
  }

  private warn(error: unknown): void {
    const now = Date.now();
    if (now - this.lastWarning < 10_000) return;
    this.lastWarning = now;
    this.logger.warn(
      { err: error },
      'rate limits cannot be shared through Redis now: each instance counts on its own until it answers',
    );
  }
}

// KEYS: this minute's counter, last minute's. ARGV: limit, elapsed fraction of this minute, counter ttl (ms).
// Counts the request when the sliding estimate leaves room; answers {allowed, current, previous}.
const RATE_HIT = `local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
if previous * (1 - tonumber(ARGV[2])) + current + 1 <= tonumber(ARGV[1]) then
  redis.call('INCR', KEYS[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {1, current + 1, previous}
end
return {0, current, previous}`;

// KEYS: the client's places. ARGV: now (ms), limit, member, lease (ms). Drops lapsed places, then takes one if any is
// free.
const RUN_ACQUIRE = `redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[4]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]) * 2)
return 1`;
