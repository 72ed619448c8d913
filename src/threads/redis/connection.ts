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

/** Makes the store's connections to `url` (ioredis loaded on first use); `ready` connects each. */
export async function createClients(url: string): Promise<RedisClients> {
  const { Redis } = await loadIoredis();
  const base: RedisOptions = {
    lazyConnect: true,
    // Reconnects forever, at most every 2 s.
    retryStrategy: (times) => Math.min(100 * times, 2_000),
    connectTimeout: 5_000,
    maxRetriesPerRequest: 1,
  };
  // Commands fail at once while disconnected: a request waits for no reconnection, and a run's log
  // keeps its batches and writes them again (RedisRunLog). A connected but stuck server times out.
  // Commands issued in one tick go out in one write (autopipelining): the runs' writes of a turn of the loop.
  const redis = defineScripts(
    new Redis(url, { ...base, enableOfflineQueue: false, commandTimeout: 5_000, enableAutoPipelining: true }),
  );
  // The subscriber queues its subscriptions while disconnected and subscribes again after a reconnect.
  const subscriber = new Redis(url, { ...base, enableOfflineQueue: true, autoResubscribe: true });
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
