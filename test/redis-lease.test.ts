import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { gatewaysPerTest } from './support/harness.js';
import { RedisServer } from './support/redis.js';
import { until } from './support/threads.js';

// An instance's lease in Redis (`{prefix}instance:{id}`, set with PX leaseMs) is what tells the other
// instances it is alive: once it lapses, they end its runs as INSTANCE_LOST. Renewed once per lease,
// the key lapses at every beat that comes a little late (event-loop lag, a slow Redis), ending live
// runs; so it is renewed several times per lease. Seen here on the wire, as Redis saw the renewals
// (MONITOR, with Redis's own clock).

const LEASE_MS = 1_500;

let redis: RedisServer;
const { start } = gatewaysPerTest();
beforeAll(async () => {
  redis = await RedisServer.start();
});
afterAll(() => redis.close());

describe('the instance lease', () => {
  it('is renewed several times per lease length', async () => {
    const prefix = `lease-${Math.random().toString(36).slice(2)}:`;
    const watcher = new Redis(redis.url, { lazyConnect: true });
    await watcher.connect();
    const monitor = await watcher.monitor();
    /** When Redis received each renewal of the lease (ms, Redis's clock), and its expiry. */
    const renewals: { at: number; px: number }[] = [];
    monitor.on('monitor', (time: string, args: string[]) => {
      const [command, key, , px, ms] = args;
      if (command.toLowerCase() === 'set' && key.startsWith(`${prefix}instance:`) && String(px).toLowerCase() === 'px')
        renewals.push({ at: Number(time) * 1000, px: Number(ms) });
    });
    try {
      await start({ threads: { redisUrl: redis.url, keyPrefix: prefix, leaseMs: LEASE_MS } });
      await until(
        async () => renewals.length,
        (n) => n >= 6,
        'six renewals of the lease',
      );
      expect(renewals.every((renewal) => renewal.px === LEASE_MS)).toBe(true);
      const intervals = renewals.slice(1).map((renewal, i) => renewal.at - renewals[i].at);
      const median = [...intervals].sort((a, b) => a - b)[Math.floor(intervals.length / 2)];
      // At least twice per lease, typically; and never so late that the lease lapsed between two.
      expect(median).toBeLessThanOrEqual(LEASE_MS / 2);
      expect(Math.max(...intervals)).toBeLessThan(LEASE_MS);
    } finally {
      monitor.disconnect();
      watcher.disconnect();
    }
  });
});
