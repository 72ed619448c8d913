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
 * message: `<name> <old host> <old port> <new host> <new port>`.
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
          autoResubscribe: true,
          maxRetriesPerRequest: null,
        }),
    );
    for (const watcher of this.watchers) {
      // A Sentinel that cannot be reached is tried again; the others still watch (nothing to log per attempt).
      watcher.on('error', () => {});
      watcher.on('message', (channel: string, message: string) => this.switched(channel, message));
      void watcher.subscribe('+switch-master').catch(() => {});
    }
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
