import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { loadOnFirstUse } from '../../core/load-on-first-use.js';
import { defineScripts, type ScriptedRedis } from './scripts.js';
import { SentinelWatch } from './sentinel-watch.js';

/** ioredis, loaded only when a Redis store is configured. */
const loadIoredis = loadOnFirstUse(() => import('ioredis'));

/** A connection to one Redis server (or primary), or ioredis's client of a Redis Cluster: the commands they share. */
export type RedisClient = Redis | Cluster;

/** The store's two connections to Redis, made but not yet connected (see `ready`). */
export interface RedisClients {
  /** Commands, with the store's scripts defined. */
  redis: ScriptedRedis;
  /** Subscriptions (a subscribed connection takes no other command). */
  subscriber: RedisClient;
  /**
   * A Redis Cluster: live channels are sharded (SPUBLISH / SSUBSCRIBE, so a token goes only to the shard of its
   * thread, not to every node), and a command names keys of one hash slot only.
   */
  cluster: boolean;
  /** With Sentinels: the watch that moves the connections to a newly promoted primary (close it with them). */
  watch?: SentinelWatch;
}

/**
 * Where the store's Redis is: one server (or primary) by URL, or the primary a set of Redis Sentinels names, found
 * again after each failover.
 */
export type RedisConnection =
  | { url: string }
  | {
      /** Nodes of a Redis Cluster to learn its layout from (any one that answers is enough). */
      clusterNodes: { host: string; port: number }[];
      /** The nodes' password, if any. */
      password?: string;
    }
  | {
      /** Sentinels to ask, any of which knows the primary. */
      sentinels: { host: string; port: number }[];
      /** The primary's name in the Sentinels' configuration (`sentinel monitor <name> …`). */
      name: string;
      /** The primary's (and replicas') password, if any. */
      password?: string;
      /** The Sentinels' own password, if any. */
      sentinelPassword?: string;
    };

/** Where the connection goes, for logs and errors (no password). */
export function describeConnection(connection: RedisConnection): string {
  if ('url' in connection) return redactedUrl(connection.url);
  if ('clusterNodes' in connection)
    return `the Redis Cluster of ${connection.clusterNodes.map(({ host, port }) => `${host}:${port}`).join(',')}`;
  const sentinels = connection.sentinels.map(({ host, port }) => `${host}:${port}`).join(',');
  return `the primary "${connection.name}" of the Sentinels ${sentinels}`;
}

/**
 * How long a connection being closed waits for the server's end before it is destroyed (ioredis's
 * `disconnectTimeout`, 2 s by default). ioredis waits so even for a connection that has already closed (Redis down,
 * reconnecting): its timer then runs whole, and held a process that had closed the gateway alive for 2 s more (found
 * as jest's "worker failed to exit gracefully" after the suites that stop Redis under a gateway). A server that is up
 * answers a close at once.
 */
const DISCONNECT_TIMEOUT_MS = 200;

/** Makes the store's connections (ioredis loaded on first use); `ready` connects each. */
export async function createClients(connection: RedisConnection): Promise<RedisClients> {
  if ('clusterNodes' in connection) return createClusterClients(connection);
  const { Redis } = await loadIoredis();
  const base: RedisOptions = {
    lazyConnect: true,
    // Reconnects forever, at most every 2 s.
    retryStrategy: (times) => Math.min(100 * times, 2_000),
    connectTimeout: 5_000,
    disconnectTimeout: DISCONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    ...('url' in connection
      ? {}
      : {
          sentinels: connection.sentinels,
          name: connection.name,
          ...(connection.password ? { password: connection.password } : {}),
          ...(connection.sentinelPassword ? { sentinelPassword: connection.sentinelPassword } : {}),
          // Sentinels are asked again on every reconnection; a failover is also noticed from the Sentinels'
          // +switch-master notice (SentinelWatch, below: not ioredis's failoverDetector, which reconnects on any
          // primary's notice), so that writes go to the new primary as soon as it is promoted.
          sentinelRetryStrategy: (times: number) => Math.min(100 * times, 2_000),
          // A primary demoted to a replica answers writes READONLY: reconnect (to the new primary) and resend.
          reconnectOnError: (error: Error) => (/READONLY/.test(error.message) ? 2 : false),
        }),
  };
  // A Unix socket's URL (unix:///path, with ?db= or ?password= if need be) is given to ioredis as its path.
  const url = 'url' in connection ? connection.url.replace(/^unix:\/\//, '') : undefined;
  const make = (options: RedisOptions) =>
    url ? new Redis(url, { ...base, ...options }) : new Redis({ ...base, ...options });
  // Commands fail at once while disconnected: a request waits for no reconnection, and a run's log
  // keeps its batches and writes them again (RedisRunLog). A connected but stuck server times out.
  // No autopipelining: the hot write is already one command a turn of the loop for every run (cgAppendMany), and
  // ioredis's autopipelining builds a Pipeline for each turn's commands, which measured 15-20% of the gateway's CPU
  // per token on the paced load (BENCHMARKS.md). Reads of several keys at once are a command each.
  const redis = defineScripts(make({ enableOfflineQueue: false, commandTimeout: 5_000 }), false);
  // The subscriber queues its subscriptions while disconnected and subscribes again after a reconnect.
  const subscriber = make({ enableOfflineQueue: true, autoResubscribe: true });
  if ('url' in connection) return { redis, subscriber, cluster: false };
  const watch = new SentinelWatch(
    Redis,
    connection.sentinels,
    connection.name,
    [redis as Redis, subscriber],
    connection.sentinelPassword,
  );
  return { redis, subscriber, cluster: false, watch };
}

/**
 * ioredis's Cluster client: it learns which node serves which hash slot from the seed nodes, sends each command to
 * its slot's primary, follows MOVED/ASK redirections and learns the layout again after a failover. The subscriber
 * subscribes to each live channel on the shard of its slot (`shardedSubscribers`), and to the stop channel (plain
 * pub/sub, which a cluster forwards to every node) on one node.
 */
async function createClusterClients(connection: {
  clusterNodes: { host: string; port: number }[];
  password?: string;
}): Promise<RedisClients> {
  const { Cluster } = await loadIoredis();
  const base: ClusterOptions = {
    lazyConnect: true,
    clusterRetryStrategy: (times) => Math.min(100 * times, 2_000),
    // While a failed primary's replica is promoted, commands for its slots wait and are tried again this often.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    slotsRefreshTimeout: 2_000,
    // The layout is also read again every 5 s, so that a promotion is noticed even by an instance sending nothing.
    slotsRefreshInterval: 5_000,
    redisOptions: {
      connectTimeout: 5_000,
      disconnectTimeout: DISCONNECT_TIMEOUT_MS,
      maxRetriesPerRequest: 1,
      ...(connection.password ? { password: connection.password } : {}),
    },
  };
  const redis = defineScripts(
    new Cluster(connection.clusterNodes, {
      ...base,
      enableOfflineQueue: false,
      // No autopipelining, as on one server: the runs' batches of a turn are already one call per node
      // (cgAppendOnNode), and building a Pipeline per node and turn cost 18% of the CPU per token (paced load).
      redisOptions: { ...base.redisOptions, commandTimeout: 5_000 },
    }),
    true,
  );
  const subscriber = new Cluster(connection.clusterNodes, {
    ...base,
    enableOfflineQueue: true,
    shardedSubscribers: true,
  });
  return { redis, subscriber, cluster: true };
}

/** Connects a client and waits until it takes commands (after its ready check). */
export async function ready(client: RedisClient): Promise<void> {
  await client.connect();
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no ready answer within 5 s')), 5_000);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * What went wrong with Redis, in words an operator can act on. ioredis reports a command sent while
 * disconnected in its own terms ("Stream isn't writeable and enableOfflineQueue options is false",
 * "Connection is closed."); those say only "not connected", so the last socket error (such as
 * "connect ECONNREFUSED 127.0.0.1:6379", which says why) is given instead.
 */
export function describeRedisError(error: unknown, lastSocketError: string | undefined): string {
  const message = error instanceof Error ? error.message : String(error);
  if (isSocketError(error)) return message;
  if (/enableOfflineQueue|Connection is closed|max retries per request/i.test(message))
    return lastSocketError ? `not connected: ${lastSocketError}` : 'not connected';
  return message;
}

/** An error of the connection itself (a system error: refused, unresolvable, reset), not of a command. */
export function isSocketError(error: unknown): error is Error {
  return error instanceof Error && typeof (error as { syscall?: unknown }).syscall === 'string';
}

/** The URL without its password, for logs and errors. */
function redactedUrl(url: string): string {
  // A Unix socket's query is read as ioredis reads it (everything after the first "?", "#" included).
  if (url.startsWith('unix://')) {
    const at = url.indexOf('?');
    if (at === -1) return url;
    const query = new URLSearchParams(url.slice(at + 1));
    if (query.has('password')) query.set('password', '***');
    return `${url.slice(0, at)}?${query.toString()}`;
  }
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    return parsed.toString();
  } catch {
    return 'the configured URL';
  }
}
