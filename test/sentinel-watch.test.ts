import { EventEmitter } from 'node:events';
import { describe, expect, it } from '@jest/globals';
import type { Redis, RedisOptions } from 'ioredis';
import { SentinelWatch } from '../src/threads/redis/sentinel-watch.js';

// The store's watch of the Sentinels' +switch-master notices (SentinelWatch) on its own, with stand-ins for ioredis's
// clients: which notices move which connections. test/redis-sentinel.test.ts runs it against real Sentinels.

/** A connection to a Sentinel, as the watch makes them (ioredis's Redis class stood in for). */
class FakeSentinel extends EventEmitter {
  static made: FakeSentinel[] = [];
  /** How many subscriptions each new one refuses (a handshake that failed). */
  static refusing = 0;
  subscriptions = 0;
  refuse = FakeSentinel.refusing;
  disconnected = false;
  constructor(readonly options: RedisOptions) {
    super();
    FakeSentinel.made.push(this);
  }
  subscribe(): Promise<number> {
    this.subscriptions++;
    if (this.refuse-- > 0) return Promise.reject(new Error('NOAUTH'));
    return Promise.resolve(1);
  }
  disconnect(): void {
    this.disconnected = true;
  }
  /** The Sentinel publishes a notice on +switch-master. */
  notice(message: string): void {
    this.emit('message', '+switch-master', message);
  }
}

/** One of the store's connections. */
class FakeConnection extends EventEmitter {
  reconnects = 0;
  resets: boolean[] = [];
  readonly connector = { sentinelIterator: { reset: (first: boolean) => void this.resets.push(first) } };
  constructor(
    public status: string,
    readonly stream: { remoteAddress: string; remotePort: number } | undefined,
  ) {
    super();
  }
  disconnect(reconnect?: boolean): void {
    if (reconnect) this.reconnects++;
  }
}

function watch(clients: FakeConnection[]) {
  FakeSentinel.made = [];
  const sentinels = [
    { host: '10.0.0.9', port: 26379 },
    { host: '10.0.0.8', port: 26379 },
  ];
  const made = new SentinelWatch(
    FakeSentinel as unknown as new (options: RedisOptions) => Redis,
    sentinels,
    'mymaster',
    clients as unknown as Redis[],
    'sentinel-secret',
  );
  return { made, sentinels: FakeSentinel.made };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe("the store's watch of the Sentinels' +switch-master notices", () => {
  it('subscribes on every Sentinel, with the Sentinels’ password', () => {
    const { made, sentinels } = watch([]);
    expect(sentinels.map((s) => [s.options.host, s.options.port, s.options.password])).toEqual([
      ['10.0.0.9', 26379, 'sentinel-secret'],
      ['10.0.0.8', 26379, 'sentinel-secret'],
    ]);
    expect(sentinels.map((s) => s.subscriptions)).toEqual([1, 1]);
    made.close();
  });

  it('moves only the connections not on the primary a notice of its own name promotes', () => {
    const onOld = new FakeConnection('ready', { remoteAddress: '10.0.0.1', remotePort: 6379 });
    const onNew = new FakeConnection('ready', { remoteAddress: '10.0.0.2', remotePort: 6380 });
    const connecting = new FakeConnection('reconnecting', undefined);
    const { made, sentinels } = watch([onOld, onNew, connecting]);
    // Another primary the same Sentinels watch: nothing moves.
    sentinels[0].notice('othermaster 10.0.0.1 6379 10.0.0.3 6379');
    expect([onOld.reconnects, onNew.reconnects, connecting.reconnects]).toEqual([0, 0, 0]);
    // Its own: the connection on the old primary reconnects (asking the Sentinels), the one already on the new
    // primary stays, and one not connected will ask the Sentinels anyway.
    sentinels[0].notice('mymaster 10.0.0.1 6379 10.0.0.2 6380');
    expect([onOld.reconnects, onNew.reconnects, connecting.reconnects]).toEqual([1, 0, 0]);
    made.close();
    // Closed: notices change nothing, and the Sentinels' connections are ended.
    sentinels[1].notice('mymaster 10.0.0.2 6380 10.0.0.1 6379');
    expect([onOld.reconnects, onNew.reconnects]).toEqual([1, 0]);
    expect(sentinels.every((s) => s.disconnected)).toBe(true);
  });

  it('asks again for a subscription that was refused', async () => {
    FakeSentinel.refusing = 2;
    try {
      const { made, sentinels } = watch([]);
      await flush();
      await flush();
      await flush();
      expect(sentinels.map((s) => s.subscriptions)).toEqual([3, 3]);
      made.close();
    } finally {
      FakeSentinel.refusing = 0;
    }
  });

  it("starts a connection's next search for the primary at the Sentinel that answered, once connected", () => {
    const connection = new FakeConnection('ready', { remoteAddress: '10.0.0.1', remotePort: 6379 });
    const { made } = watch([connection]);
    connection.emit('ready');
    expect(connection.resets).toEqual([true]);
    made.close();
  });
});
