import { spawnSync } from 'node:child_process';
import { RedisServer } from './redis.js';

/**
 * A Redis Cluster on loopback, as issue 32's tests need it: three primaries with a replica each, real redis-server
 * processes in cluster mode, joined by `redis-cli --cluster create`. `nodes` are "127.0.0.1:port" seeds.
 */
export class RedisCluster {
  /** Servers killed by killPrimaryOf (no longer asked whether the cluster is ok). */
  private readonly killed = new Set<RedisServer>();
  private constructor(readonly servers: RedisServer[]) {}

  static async start(): Promise<RedisCluster> {
    const servers = await Promise.all(
      Array.from({ length: 6 }, () =>
        // Persistent (append-only file), as production nodes are: a node restarted after a crash comes back with its
        // data, not empty, and rejoins as its successor's replica.
        RedisServer.start({
          persistent: true,
          args: ['--cluster-enabled', 'yes', '--cluster-node-timeout', '1000', '--cluster-config-file', 'nodes.conf'],
        }),
      ),
    );
    const created = spawnSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...servers.map((server) => `127.0.0.1:${server.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (created.status !== 0) {
      await Promise.all(servers.map((server) => server.close()));
      throw new Error(`redis-cli --cluster create failed:\n${created.stdout}\n${created.stderr}`);
    }
    const cluster = new RedisCluster(servers);
    await cluster.untilHealthy();
    return cluster;
  }

  get nodes(): string[] {
    return this.servers.map((server) => `127.0.0.1:${server.port}`);
  }

  /** The nodes still running (seeds for a client started after a kill). */
  get liveNodes(): string[] {
    return this.servers.filter((server) => !this.killed.has(server)).map((server) => `127.0.0.1:${server.port}`);
  }

  /** The server that is now the primary of `key`'s hash slot. */
  primaryOf(key: string): RedisServer {
    const live = this.servers.find((server) => !this.killed.has(server))!;
    const cli = (...args: string[]) =>
      spawnSync('redis-cli', ['-p', String(live.port), ...args], { encoding: 'utf8' }).stdout.trim();
    const slot = Number(cli('cluster', 'keyslot', key));
    for (const line of cli('cluster', 'nodes').split('\n')) {
      // <id> <ip:port@bus> <flags> <primary> <ping> <pong> <epoch> <link> <slot> <slot-range> …
      const [, address, flags, , , , , link, ...ranges] = line.split(' ');
      if (!flags?.split(',').includes('master') || flags.includes('fail') || link !== 'connected') continue;
      const served = ranges.some((range) => {
        const [from, to] = range.split('-').map(Number);
        return slot >= from && slot <= (to ?? from);
      });
      if (served) {
        const port = Number(address.split('@')[0].split(':')[1]);
        return this.servers.find((server) => server.port === port)!;
      }
    }
    throw new Error(`no primary serves the slot of ${key}`);
  }

  /** SIGKILLs the primary of `key`'s slot, as a crashed machine; its replica is promoted after the node timeout. */
  async killPrimaryOf(key: string): Promise<RedisServer> {
    const primary = this.primaryOf(key);
    this.killed.add(primary);
    await primary.kill();
    return primary;
  }

  /** Waits until every node says the cluster is ok (all slots served). */
  untilHealthy(timeoutMs = 20_000): Promise<void> {
    return this.until(['cluster', 'info'], 'the cluster is not ok', timeoutMs, (states) =>
      states.every((state) => state.includes('cluster_state:ok')),
    );
  }

  /** Starts a killed server again on its port and folder: it rejoins the cluster (as the promoted node's replica). */
  async revive(server: RedisServer): Promise<void> {
    await server.restart();
    this.killed.delete(server);
  }

  /** Waits until every primary has its replica connected and in sync (`master_link_status:up` on each replica). */
  untilReplicated(timeoutMs = 30_000): Promise<void> {
    return this.until(['info', 'replication'], 'the replicas are not in sync', timeoutMs, (roles) => {
      const replicas = roles.filter((info) => info.includes('role:slave'));
      return replicas.length > 0 && replicas.every((info) => info.includes('master_link_status:up'));
    });
  }

  /** Asks every running node `command` (redis-cli) until `done` holds of their answers; fails with `what` after. */
  private async until(
    command: string[],
    what: string,
    timeoutMs: number,
    done: (answers: string[]) => boolean,
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const answers = this.servers
        .filter((server) => !this.killed.has(server))
        .map(
          (server) =>
            spawnSync('redis-cli', ['-p', String(server.port), ...command], { encoding: 'utf8' }).stdout ?? '',
        );
      if (done(answers)) return;
      if (Date.now() > deadline) throw new Error(`${what}:\n${answers.join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /**
   * Ends every node at once (SIGKILL; nothing is kept) and removes their folders. A SIGTERM'd primary waits up to
   * Redis's shutdown-timeout (10 s) for replicas that are shutting down too, and with append-only files under load
   * that outlasted a test file's hook time in CI.
   */
  async close(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.kill()));
    await Promise.all(this.servers.map((server) => server.close()));
  }
}
