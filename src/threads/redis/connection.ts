import type { Redis as RedisClient, RedisOptions } from 'ioredis';
import { loadOnFirstUse } from '../../core/load-on-first-use.js';
import { defineScripts, type ScriptedRedis } from './scripts.js';

/** ioredis, loaded only when a Redis store is configured. */
const loadIoredis = loadOnFirstUse(() => import('ioredis'));

/** The store's two connections to Redis, made but not yet connected (see `ready`). */
export interface RedisClients {
  /** Commands, with the store's scripts defined. */
  redis: ScriptedRedis;
  /** Subscriptions (a subscribed connection takes no other command). */
  subscriber: RedisClient;
}

/**
 * Where the store's Redis is: one server (or primary) by URL, or the primary a set of Redis Sentinels names, found
 * again after each failover.
 */
export type RedisConnection =
  | { url: string }
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
  const sentinels = connection.sentinels.map(({ host, port }) => `${host}:${port}`).join(',');
  return `the primary "${connection.name}" of the Sentinels ${sentinels}`;
}

/** Makes the store's connections (ioredis loaded on first use); `ready` connects each. */
export async function createClients(connection: RedisConnection): Promise<RedisClients> {
  const { Redis } = await loadIoredis();
  const base: RedisOptions = {
    lazyConnect: true,
    // Reconnects forever, at most every 2 s.
    retryStrategy: (times) => Math.min(100 * times, 2_000),
    connectTimeout: 5_000,
    maxRetriesPerRequest: 1,
    ...('url' in connection
      ? {}
      : {
          sentinels: connection.sentinels,
          name: connection.name,
          ...(connection.password ? { password: connection.password } : {}),
          ...(connection.sentinelPassword ? { sentinelPassword: connection.sentinelPassword } : {}),
          // Sentinels are asked again on every reconnection; a failover is also noticed from the Sentinels'
          // +switch-master notice, so that writes go to the new primary as soon as it is promoted.
          failoverDetector: true,
          sentinelRetryStrategy: (times: number) => Math.min(100 * times, 2_000),
          // A primary demoted to a replica answers writes READONLY: reconnect (to the new primary) and resend.
          reconnectOnError: (error: Error) => (/READONLY/.test(error.message) ? 2 : false),
        }),
  };
  const url = 'url' in connection ? connection.url : undefined;
  const make = (options: RedisOptions) =>
    url ? new Redis(url, { ...base, ...options }) : new Redis({ ...base, ...options });
  // Commands fail at once while disconnected: a request waits for no reconnection, and a run's log
  // keeps its batches and writes them again (RedisRunLog). A connected but stuck server times out.
  // Commands issued in one tick go out in one write (autopipelining): the runs' writes of a turn of the loop.
  const redis = defineScripts(make({ enableOfflineQueue: false, commandTimeout: 5_000, enableAutoPipelining: true }));
  // The subscriber queues its subscriptions while disconnected and subscribes again after a reconnect.
  const subscriber = make({ enableOfflineQueue: true, autoResubscribe: true });
  return { redis, subscriber };
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
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the configured URL';
  }
}
