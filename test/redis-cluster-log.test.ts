import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { pino } from 'pino';
import type { RedisThreadStore } from '../src/threads/redis/store.js';
import { silentLogger } from './support/harness.js';
import { startRedisStore } from './support/redis.js';
import { RedisCluster } from './support/redis-cluster.js';
import { streamTogether, type StreamedRun } from './support/run-logs.js';

// Runs' logs on a real Redis Cluster (three primaries with a replica each), with no gateway: the batches of several
// runs whose slots one node serves go in one script call to that node, and a call that a node refuses (a slot it no
// longer serves) is written again run by run, with nothing lost or doubled.

let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await RedisCluster.start();
}, 60_000);
afterAll(() => cluster.close());

/** A started store on the cluster. */
function store(keyPrefix: string, logger = silentLogger): Promise<RedisThreadStore> {
  const nodes = cluster.nodes.map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) }));
  return startRedisStore({ clusterNodes: nodes }, { keyPrefix, logger });
}

/** Every stored event of a run, in order (read from the node that serves it). */
async function storedLog(reader: Cluster, keyPrefix: string, run: StreamedRun): Promise<unknown[]> {
  const entries = await reader.xrange(`${keyPrefix}{${run.threadId}}:log:${run.runId}`, '-', '+');
  return entries.flatMap(([, fields]) => JSON.parse(fields[1]) as unknown[]);
}

/** Counts, for each call the store makes for several runs' batches at once, how many runs it carried. */
function watchAppends(s: RedisThreadStore) {
  const runsPerCall: number[] = [];
  /** Each call's answers, or its error. */
  const answers: (string[] | string)[] = [];
  const appendMany = s.records.appendMany.bind(s.records);
  s.records.appendMany = (writes) => {
    const call = runsPerCall.push(writes.length) - 1;
    const replies = appendMany(writes);
    // In the order of the calls (calls to different nodes answer in any order).
    replies.then(
      (replies) => (answers[call] = replies),
      (error: Error) => (answers[call] = error.message),
    );
    return replies;
  };
  return { runsPerCall, answers };
}

describe("runs' logs on a Redis Cluster", () => {
  it("writes the batches of the runs one node serves in one call to that node, and shows each run's events once, in order", async () => {
    const keyPrefix = `grouped${Math.random().toString(36).slice(2)}:`;
    const s = await store(keyPrefix);
    const reader = new Cluster(cluster.nodes);
    const watched = watchAppends(s);
    try {
      const runs = await streamTogether(s, 'grouped', 9, 20);
      for (const run of runs) {
        expect(run.failures).toEqual([]);
        expect(run.shown).toEqual(run.emitted);
        expect(await storedLog(reader, keyPrefix, run)).toEqual(run.emitted);
      }
      // Nine runs over three nodes: calls carried several runs each, and Redis took them (above).
      expect(watched.runsPerCall.length).toBeGreaterThan(0);
      expect(Math.max(...watched.runsPerCall)).toBeGreaterThan(1);
      // Each call taken whole: no run's batch left to be written again on its own.
      expect(watched.answers).toEqual(watched.runsPerCall.map((runs) => Array(runs).fill('ok')));
    } finally {
      reader.disconnect();
      await s.close();
    }
  });

  it('writes again run by run the batches of a call its node refuses (keys of slots it does not serve), losing and doubling nothing', async () => {
    const keyPrefix = `refused${Math.random().toString(36).slice(2)}:`;
    const logged: string[] = [];
    const s = await store(keyPrefix, pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) }));
    // As if the client's slot table were stale: every run taken for one node's, so each call names keys of the
    // other nodes too, which the node refuses (after appending the runs before the first such key).
    s.records.nodeOf = () => 'stale';
    const reader = new Cluster(cluster.nodes);
    const watched = watchAppends(s);
    try {
      const runs = await streamTogether(s, 'refused', 9, 10);
      expect(watched.runsPerCall.length).toBeGreaterThan(0);
      // Refused, and said so.
      expect(logged.join('\n')).toMatch(/non local key/);
      for (const run of runs) {
        expect(run.failures).toEqual([]);
        expect(run.shown).toEqual(run.emitted);
        expect(await storedLog(reader, keyPrefix, run)).toEqual(run.emitted);
      }
    } finally {
      reader.disconnect();
      await s.close();
    }
  });
});
