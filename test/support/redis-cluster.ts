import { spawnSync } from 'node:child_process';
import { RedisServer } from './redis.js';

/**
 * A Redis Cluster on loopback, as issue 32's tests need it: three primaries with a replica each, real redis-server
 * processes in cluster mode, joined by `redis-cli --cluster create`. `nodes` are "127.0.0.1:port" seeds.
 */
export class RedisCluster {
  private constructor(readonly servers: RedisServer[]) {}

  static async start(): Promise<RedisCluster> {
    const servers = await Promise.all(
      Array.from({ length: 6 }, () =>
        RedisServer.start({
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

  /** Waits until every node says the cluster is ok (all slots served). */
  async untilHealthy(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const states = this.servers.map(
        (server) =>
          spawnSync('redis-cli', ['-p', String(server.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout ?? '',
      );
      if (states.every((state) => state.includes('cluster_state:ok'))) return;
      if (Date.now() > deadline) throw new Error(`the cluster is not ok:\n${states.join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.close()));
  }
}
