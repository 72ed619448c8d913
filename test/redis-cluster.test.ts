import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createGateway } from '../src/gateway.js';
import { silentLogger } from './support/harness.js';
import { RedisCluster } from './support/redis-cluster.js';

// Redis Cluster (three primaries with a replica each, on loopback). The thread store does not support it yet (issue
// 32): a gateway pointed at a cluster node says so in one line and does not start, whatever STORE_FAILURE_POLICY
// says, rather than serving and failing every write with CROSSSLOT or MOVED errors.

let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await RedisCluster.start();
}, 60_000);
afterAll(() => cluster?.close());

describe('Redis Cluster', () => {
  it('is refused at start with a clear word, not served half-working', async () => {
    for (const onStoreFailure of ['serve', 'fail'] as const) {
      const gateway = createGateway({
        logger: silentLogger,
        threads: { redisUrl: `redis://${cluster.nodes[0]}`, onStoreFailure },
      });
      try {
        await expect(gateway.listen(0, '127.0.0.1')).rejects.toMatchObject({
          code: 'CONFIGURATION_ERROR',
          message: expect.stringMatching(/is a node of a Redis Cluster, which the thread store does not support yet/),
        });
      } finally {
        await gateway.close().catch(() => {});
      }
    }
  });
});
