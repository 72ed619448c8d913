import { ConfigurationError } from '../core/errors.js';

/** Per-client limits: a client is a principal, or an address when no one is authenticated. 0 turns one off. */
export interface RateLimitOptions {
  /** Requests (HTTP requests, WebSocket operations) per client in any minute. @default 0 (off) */
  requestsPerMinute?: number;
  /** Runs one client may have going at once, across instances when they share Redis. @default 0 (off) */
  concurrentRuns?: number;
}

export interface ResolvedRateLimits {
  requestsPerMinute: number;
  concurrentRuns: number;
}

/**
 * Counts what each client does. `hit` and `acquireRun` answer how long the client should wait (ms)
 * when it is over a limit; they never throw (a limiter that cannot count lets the request through and
 * says so in the logs).
 */
export interface RateLimiter {
  readonly kind: 'memory' | 'redis';
  readonly limits: ResolvedRateLimits;
  /** Counts one request: 0 when it is allowed, else the milliseconds until one would be. */
  hit(client: string): Promise<number>;
  /** What `hit` would answer now, without counting anything. */
  wait(client: string): Promise<number>;
  /** Takes one of the client's run places: a release function, or the milliseconds to wait. */
  acquireRun(client: string): Promise<(() => void) | number>;
  close(): Promise<void>;
}

export function resolveRateLimits(options: RateLimitOptions | undefined): ResolvedRateLimits {
  if (options === undefined) return { requestsPerMinute: 0, concurrentRuns: 0 };
  if (options === null || typeof options !== 'object')
    throw new ConfigurationError('options.rateLimits must be an object: {requestsPerMinute?, concurrentRuns?}.');
  const whole = (name: string, value: unknown): number => {
    if (value === undefined) return 0;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 1_000_000) {
      throw new ConfigurationError(
        `options.rateLimits.${name} must be a whole number from 0 (off) to 1000000 (got ${JSON.stringify(value)}).`,
      );
    }
    return value;
  };
  return {
    requestsPerMinute: whole('requestsPerMinute', options.requestsPerMinute),
    concurrentRuns: whole('concurrentRuns', options.concurrentRuns),
  };
}

export const WINDOW_MS = 60_000;

/**
 * Requests per minute as a sliding window, estimated from two fixed windows (this minute's count,
 * and last minute's weighted by how much of it still overlaps the last 60 s): smooth at the
 * windows' edges, two numbers per client. Answers 0 (allowed) or the wait in milliseconds.
 */
export function slidingWindowWait(limit: number, current: number, previous: number, now: number): number {
  const elapsed = now % WINDOW_MS;
  const estimate = previous * (1 - elapsed / WINDOW_MS) + current;
  if (estimate + 1 <= limit) return 0;
  // When this window alone is full, only the next one has room, once enough of it has passed.
  if (current + 1 > limit)
    return WINDOW_MS - elapsed + Math.ceil((WINDOW_MS * Math.max(0, current + 1 - limit)) / Math.max(current, 1));
  // Otherwise the previous window's weight falls until the estimate leaves room for one more.
  const needed = 1 - (limit - current - 1) / previous; // the fraction of this window that must have passed
  return Math.max(1, Math.ceil(needed * WINDOW_MS - elapsed));
}

/** One process's limits, in memory. Idle clients are forgotten after two minutes. */
export class MemoryRateLimiter implements RateLimiter {
  readonly kind = 'memory' as const;
  private readonly requests = new Map<string, { window: number; current: number; previous: number }>();
  private readonly runs = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(readonly limits: ResolvedRateLimits) {
    this.sweeper = setInterval(() => this.sweep(), WINDOW_MS).unref();
  }

  async hit(client: string): Promise<number> {
    return this.hitNow(client);
  }

  /** `hit` without a promise, for the Redis limiter's fallback and for tests. */
  hitNow(client: string, now = Date.now()): number {
    const limit = this.limits.requestsPerMinute;
    if (limit === 0) return 0;
    const window = Math.floor(now / WINDOW_MS);
    let entry = this.requests.get(client);
    if (!entry) this.requests.set(client, (entry = { window, current: 0, previous: 0 }));
    else if (entry.window !== window) {
      entry.previous = entry.window === window - 1 ? entry.current : 0;
      entry.current = 0;
      entry.window = window;
    }
    const wait = slidingWindowWait(limit, entry.current, entry.previous, now);
    if (wait === 0) entry.current++;
    return wait;
  }

  async wait(client: string): Promise<number> {
    return this.waitNow(client);
  }

  /** `wait` without a promise, for the Redis limiter's fallback and for tests. */
  waitNow(client: string, now = Date.now()): number {
    const limit = this.limits.requestsPerMinute;
    const entry = this.requests.get(client);
    if (limit === 0 || !entry) return 0;
    const window = Math.floor(now / WINDOW_MS);
    if (entry.window === window) return slidingWindowWait(limit, entry.current, entry.previous, now);
    return slidingWindowWait(limit, 0, entry.window === window - 1 ? entry.current : 0, now);
  }

  async acquireRun(client: string): Promise<(() => void) | number> {
    return this.acquireRunNow(client);
  }

  acquireRunNow(client: string): (() => void) | number {
    const limit = this.limits.concurrentRuns;
    if (limit === 0) return NOTHING_TO_RELEASE;
    const held = this.runs.get(client) ?? 0;
    if (held >= limit) return RUN_RETRY_MS;
    this.runs.set(client, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.runs.get(client) ?? 1) - 1;
      if (now <= 0) this.runs.delete(client);
      else this.runs.set(client, now);
    };
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }

  private sweep(): void {
    const window = Math.floor(Date.now() / WINDOW_MS);
    for (const [client, entry] of this.requests) if (entry.window < window - 1) this.requests.delete(client);
  }
}

/** How long a client refused for its concurrent runs is told to wait: runs end at any moment. */
export const RUN_RETRY_MS = 1_000;

export const NOTHING_TO_RELEASE = (): void => {};
