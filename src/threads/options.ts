import type { Logger } from 'pino';
import { ConfigurationError } from '../core/errors.js';
import { MemoryThreadStore } from './memory.js';
import { RedisThreadStore } from './redis/store.js';
import type { ThreadStore } from './store.js';
import type { RedisConnection } from './redis/connection.js';

/** How the gateway keeps its threads (GatewayOptions.threads). */
export interface ThreadsOptions {
  /**
   * Redis to keep threads in, shared by every instance using it (`redis://…`, `rediss://…`, or a Unix socket's
   * `unix:///path`, with `?db=` and `?password=` percent-encoded if need be).
   * Without it, threads are kept in this process's memory. @default undefined
   */
  redisUrl?: string;
  /**
   * Redis behind Sentinels instead of one URL: the Sentinels' addresses ("host:port"), asked for the primary named
   * `sentinelName`, and again after every failover. Not with `redisUrl`. @default undefined
   */
  sentinels?: string[];
  /** The primary's name in the Sentinels' configuration; needed with `sentinels`. */
  sentinelName?: string;
  /**
   * A Redis Cluster instead of one server: some of its nodes ("host:port"), from which the rest and the slots they
   * serve are learnt (and learnt again after a failover). Every key of a thread is one hash slot (its `{threadId}`
   * tag) and its live events go on sharded pub/sub (Redis 7 or later). Not with `redisUrl` or `sentinels`.
   * @default undefined
   */
  clusterNodes?: string[];
  /**
   * With `sentinels`: the password of the primary and replicas, and of the Sentinels themselves, if they have one.
   * With `clusterNodes`: the nodes' password.
   */
  redisPassword?: string;
  sentinelPassword?: string;
  /** Prefix of the gateway's Redis keys and channels. @default "cg:" */
  keyPrefix?: string;
  /** How long a thread is kept after its last run. @default 604800 (7 days) */
  ttlSeconds?: number;
  /** The most runs kept per thread (older ones and their events are dropped). @default 20 */
  maxRunsPerThread?: number;
  /** In memory: the most threads kept, least recently used dropped first. @default 10000 */
  maxThreads?: number;
  /** In memory: about how many bytes of messages and events are kept. @default 67108864 (64 MiB) */
  maxBytes?: number;
  /**
   * With Redis: how long an instance that stopped answering still counts as alive; its runs are ended after that.
   * @default 10000
   */
  leaseMs?: number;
  /**
   * A run on a thread that has one going: `refuse` it (THREAD_BUSY), or `interrupt` the one going. @default "refuse"
   */
  onBusy?: 'refuse' | 'interrupt';
  /**
   * New runs while Redis cannot be reached: `serve` them unrecorded (logged), or `fail` them (STORE_UNAVAILABLE).
   * @default "serve"
   */
  onStoreFailure?: 'serve' | 'fail';
  /**
   * With Redis: how many replicas must have a run's events before its clients are shown them (Redis's WAIT after
   * every write). Replication is asynchronous: without it, events a primary acknowledged and died before passing on
   * are lost in a failover, though clients saw them. Each write then waits for the replicas (its price: BENCHMARKS.md);
   * replicas that do not answer in time stall the run, whose clients are told STORE_UNAVAILABLE after the lease.
   * @default 0
   */
  waitReplicas?: number;
  /**
   * Without authentication, serve the thread list anyway (`/threads`, `copilotThreads`): one list of every thread,
   * which every caller can read, rename, archive and delete. Off, the list is served only per authenticated caller.
   * @default false
   */
  listAnonymous?: boolean;
}

export interface ResolvedThreadsOptions {
  /** Where Redis is (by URL or through Sentinels); undefined: threads are kept in memory. */
  redis: RedisConnection | undefined;
  keyPrefix: string;
  ttlSeconds: number;
  maxRunsPerThread: number;
  maxThreads: number;
  maxBytes: number;
  leaseMs: number;
  onBusy: 'refuse' | 'interrupt';
  onStoreFailure: 'serve' | 'fail';
  listAnonymous: boolean;
  waitReplicas: number;
}

const NAMES = new Set([
  'redisUrl',
  'sentinels',
  'sentinelName',
  'clusterNodes',
  'redisPassword',
  'sentinelPassword',
  'keyPrefix',
  'ttlSeconds',
  'maxRunsPerThread',
  'maxThreads',
  'maxBytes',
  'leaseMs',
  'onBusy',
  'onStoreFailure',
  'listAnonymous',
  'waitReplicas',
]);

/** A claim holds its thread this long at most before its run opens (the checks and hooks before a run). */
const CLAIM_TIMEOUT_MS = 60_000;

export function resolveThreadsOptions(options: ThreadsOptions | undefined): ResolvedThreadsOptions {
  if (options !== undefined && (options === null || typeof options !== 'object'))
    throw new ConfigurationError('options.threads must be an object.');
  const o = options ?? {};
  for (const key of Object.keys(o)) {
    if (key === 'flushIntervalMs') {
      throw new ConfigurationError(
        "options.threads.flushIntervalMs is gone: a run's events are now written to Redis as they come, and shown to " +
          'clients once stored. Remove it.',
      );
    }
    if (!NAMES.has(key))
      throw new ConfigurationError(`Unknown option "threads.${key}". Known: ${[...NAMES].join(', ')}.`);
  }
  if (o.redisUrl !== undefined && (typeof o.redisUrl !== 'string' || !isRedisUrl(o.redisUrl))) {
    throw new ConfigurationError(`options.threads.redisUrl ${REDIS_URL_FORMS}.`);
  }
  if (o.keyPrefix !== undefined && (typeof o.keyPrefix !== 'string' || !/^[\w:.-]{1,64}$/.test(o.keyPrefix))) {
    throw new ConfigurationError('options.threads.keyPrefix must be 1 to 64 letters, digits, ":", ".", "_" or "-".');
  }
  const choice = <T extends string>(name: string, value: unknown, allowed: readonly T[]): T => {
    if (value === undefined) return allowed[0];
    if (!allowed.includes(value as T))
      throw new ConfigurationError(
        `options.threads.${name} must be ${allowed.map((a) => `"${a}"`).join(' or ')} (got ${JSON.stringify(value)}).`,
      );
    return value as T;
  };
  const redis = redisConnection(o);
  if (o.waitReplicas !== undefined && o.waitReplicas !== 0 && !redis)
    throw new ConfigurationError('options.threads.waitReplicas goes with Redis (redisUrl, sentinels or clusterNodes).');
  return {
    redis,
    keyPrefix: o.keyPrefix ?? 'cg:',
    ttlSeconds: whole('ttlSeconds', o.ttlSeconds, 7 * 24 * 3600, 1, 365 * 24 * 3600),
    maxRunsPerThread: whole('maxRunsPerThread', o.maxRunsPerThread, 20, 1, 10_000),
    maxThreads: whole('maxThreads', o.maxThreads, 10_000, 1, 100_000_000),
    maxBytes: whole('maxBytes', o.maxBytes, 64 * 1024 * 1024, 1024, 64 * 1024 * 1024 * 1024),
    leaseMs: whole('leaseMs', o.leaseMs, 10_000, 300, 600_000),
    onBusy: choice('onBusy', o.onBusy, ['refuse', 'interrupt'] as const),
    onStoreFailure: choice('onStoreFailure', o.onStoreFailure, ['serve', 'fail'] as const),
    listAnonymous: flag('listAnonymous', o.listAnonymous),
    waitReplicas: whole('waitReplicas', o.waitReplicas, 0, 0, 16),
  };
}

/** The store the options ask for (not yet started: see ThreadStore.start). */
export function createThreadStore(options: ResolvedThreadsOptions, logger: Logger): ThreadStore {
  const common = {
    ttlSeconds: options.ttlSeconds,
    maxRunsPerThread: options.maxRunsPerThread,
    claimTimeoutMs: CLAIM_TIMEOUT_MS,
  };
  if (!options.redis)
    return new MemoryThreadStore({ ...common, maxThreads: options.maxThreads, maxBytes: options.maxBytes });
  return new RedisThreadStore({
    ...common,
    connection: options.redis,
    waitReplicas: options.waitReplicas,
    keyPrefix: options.keyPrefix,
    leaseMs: options.leaseMs,
    logger: logger.child({ component: 'threads' }),
  });
}

/** Where Redis is: `redisUrl`, `sentinels` with `sentinelName`, or `clusterNodes` (only one of them). */
function redisConnection(o: ThreadsOptions): RedisConnection | undefined {
  if (o.clusterNodes !== undefined) {
    if (o.redisUrl !== undefined || o.sentinels !== undefined)
      throw new ConfigurationError('options.threads takes one of redisUrl, sentinels and clusterNodes.');
    for (const name of ['sentinelName', 'sentinelPassword'] as const) {
      if (o[name] !== undefined)
        throw new ConfigurationError(`options.threads.${name} goes with options.threads.sentinels.`);
    }
    if (o.redisPassword !== undefined && (typeof o.redisPassword !== 'string' || o.redisPassword === ''))
      throw new ConfigurationError('options.threads.redisPassword must be a non-empty string.');
    return {
      clusterNodes: addresses('clusterNodes', o.clusterNodes, '10.0.0.5:6379'),
      ...(o.redisPassword ? { password: o.redisPassword } : {}),
    };
  }
  if (o.sentinels === undefined) {
    for (const name of ['sentinelName', 'sentinelPassword'] as const) {
      if (o[name] !== undefined)
        throw new ConfigurationError(`options.threads.${name} goes with options.threads.sentinels.`);
    }
    if (o.redisPassword !== undefined)
      throw new ConfigurationError(
        'options.threads.redisPassword goes with sentinels or clusterNodes; put the password in redisUrl.',
      );
    return o.redisUrl === undefined ? undefined : { url: o.redisUrl };
  }
  if (o.redisUrl !== undefined) throw new ConfigurationError('options.threads takes redisUrl or sentinels, not both.');
  const sentinels = addresses('sentinels', o.sentinels, '10.0.0.5:26379');
  if (typeof o.sentinelName !== 'string' || !/^[\w.-]{1,128}$/.test(o.sentinelName))
    throw new ConfigurationError(
      'options.threads.sentinelName must name the primary as the Sentinels know it (such as "mymaster").',
    );
  for (const name of ['redisPassword', 'sentinelPassword'] as const) {
    if (o[name] !== undefined && (typeof o[name] !== 'string' || o[name] === ''))
      throw new ConfigurationError(`options.threads.${name} must be a non-empty string.`);
  }
  return {
    sentinels,
    name: o.sentinelName,
    ...(o.redisPassword ? { password: o.redisPassword } : {}),
    ...(o.sentinelPassword ? { sentinelPassword: o.sentinelPassword } : {}),
  };
}

/** A list of "host:port" (IPv6 hosts in brackets) as addresses. */
function addresses(name: string, list: unknown, example: string): { host: string; port: number }[] {
  if (!Array.isArray(list) || list.length === 0)
    throw new ConfigurationError(`options.threads.${name} must be a list of "host:port", such as ["${example}"].`);
  return list.map((address: unknown) => {
    const match = typeof address === 'string' ? /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(address.trim()) : null;
    const port = match ? Number(match[2]) : 0;
    if (!match || port < 1 || port > 65535)
      throw new ConfigurationError(
        `options.threads.${name}: ${JSON.stringify(address)} is not "host:port", such as "${example}".`,
      );
    return { host: match[1], port };
  });
}

function flag(name: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean')
    throw new ConfigurationError(`options.threads.${name} must be true or false (got ${JSON.stringify(value)}).`);
  return value;
}

function whole(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigurationError(
      `options.threads.${name} must be a whole number from ${min} to ${max} (got ${JSON.stringify(value)}).`,
    );
  }
  return value;
}

/** Whether `url` says where one Redis server is: redis:// or rediss:// with a host, or a Unix socket (unix:///path). */
export function isRedisUrl(url: string): boolean {
  return /^rediss?:\/\/[^/]/.test(url) || /^unix:\/\/\/[^/]/.test(url);
}

/** What a Redis URL may be, after its name in an error. */
export const REDIS_URL_FORMS =
  'must be a redis:// or rediss:// URL, such as "redis://localhost:6379", or a Unix socket\'s, such as ' +
  '"unix:///run/redis/redis.sock"';
