import type { Redis, RedisOptions } from 'ioredis';

/**
 * Watches the Sentinels for the promotion of the store's primary (`+switch-master`) and reconnects the store's
 * connections that are not on the new primary, so that writes move to it at once, even when the old primary is still
 * up (demoted, or cut off from the Sentinels) and would not close them.
 *
 * ioredis's own `failoverDetector` does this, but on a `+switch-master` of any primary the Sentinels watch (it does not
 * read the message's name) and also when the connection is already on the new primary: a failover of another
 * application's primary, and the notice of the store's own failover that comes after the store has reconnected, each
 * cost every connection one more reconnection, with requests answered STORE_UNAVAILABLE meanwhile. This reads the
 * message: `<name> <old host> <old port> <new host> <new port>`. Its hosts are compared with the connections'
 * remote addresses: where the Sentinels announce host names (`announce-hostnames yes`), every notice of the store's
 * own primary reconnects them, as ioredis's detector does.
 */
export class SentinelWatch {
  private readonly watchers: Redis[];
  private closed = false;

  constructor(
    /** ioredis's Redis class (loaded on first use by connection.ts). */
    RedisClass: new (options: RedisOptions) => Redis,
    sentinels: readonly { host: string; port: number }[],
    private readonly name: string,
    /** The connections to keep on the primary. */
    private readonly clients: readonly Redis[],
    sentinelPassword: string | undefined,
  ) {
    this.watchers = sentinels.map(
      ({ host, port }) =>
        new RedisClass({
          host,
          port,
          ...(sentinelPassword ? { password: sentinelPassword } : {}),
          lazyConnect: true,
          // Reconnects forever, at most every 2 s, and subscribes again.
          retryStrategy: (times) => Math.min(100 * times, 2_000),
          connectTimeout: 5_000,
          // As the store's connections (connection.ts, DISCONNECT_TIMEOUT_MS): a closed watcher holds nothing.
          disconnectTimeout: 200,
          autoResubscribe: true,
          maxRetriesPerRequest: null,
        }),
    );
    for (const watcher of this.watchers) {
      // A Sentinel that cannot be reached is tried again; the others still watch (nothing to log per attempt).
      watcher.on('error', () => {});
      watcher.on('message', (channel: string, message: string) => this.switched(channel, message));
      this.subscribe(watcher);
    }
    for (const client of clients) client.on('ready', () => restartSentinelList(client));
  }

  /**
   * Subscribes (queued until the watcher connects, and again after each reconnection: autoResubscribe); a
   * subscription refused (its connection's handshake failed, which empties the queue) is asked again, at the pace of
   * the watcher's reconnections.
   */
  private subscribe(watcher: Redis): void {
    watcher.subscribe('+switch-master').catch(() => {
      if (!this.closed) this.subscribe(watcher);
    });
  }

  private switched(channel: string, message: string): void {
    if (this.closed || channel !== '+switch-master') return;
    const [name, , , host, port] = message.split(' ');
    if (name !== this.name || !host || !port) return;
    for (const client of this.clients) {
      // Not yet (re)connected: its connection will ask the Sentinels, which name the new primary.
      if (client.status !== 'ready') continue;
      const stream = client.stream as { remoteAddress?: string; remotePort?: number } | undefined;
      if (stream?.remoteAddress === host && String(stream.remotePort) === port) continue;
      client.disconnect(true);
    }
  }

  close(): void {
    this.closed = true;
    for (const watcher of this.watchers) watcher.disconnect();
  }
}

/**
 * Makes a connection's next reconnection ask the Sentinel that answered this time first, then the others, as ioredis
 * does only with its failoverDetector on (SentinelConnector's initFailoverDetector). Without it ioredis goes on down
 * its list at each reconnection and, at the list's end, reports "All sentinels are unreachable" (reachable as they
 * are) and waits before starting again. The list is ioredis's private state: if a later ioredis has it elsewhere,
 * nothing is done (test/redis-sentinel.test.ts notices).
 */
function restartSentinelList(client: Redis): void {
  const connector = (client as unknown as { connector?: { sentinelIterator?: { reset?: (first: boolean) => void } } })
    .connector;
  connector?.sentinelIterator?.reset?.(true);
}
