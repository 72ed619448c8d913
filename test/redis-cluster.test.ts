import type { ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { readEnvironment } from '../src/env.js';
import { createGateway } from '../src/gateway.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { startGatewayProcess } from './support/gateway-process.js';
import { gatewaysPerTest, runInput, silentLogger, userMessage, type RunningGateway } from './support/harness.js';
import { RedisCluster } from './support/redis-cluster.js';
import { COPILOT_RUN, JOIN_RUN, THREAD, gql, textOfEvents, watch } from './support/threads.js';

// Redis Cluster (three primaries with a replica each, on loopback), as REDIS_CLUSTER_NODES names it. The thread
// behaviours over two instances run on it in threads.test.ts and thread-list.test.ts; here: gateway processes on it
// (one SIGKILLed mid-run), a primary killed mid-run while REDIS_WAIT_REPLICAS=1 (nothing a client was shown is lost),
// and the configuration.

const fake = new FakeOpenAI();
let baseURL: string;
let cluster: RedisCluster;
const children: ChildProcess[] = [];
beforeAll(async () => {
  [baseURL, cluster] = await Promise.all([fake.start(), RedisCluster.start()]);
}, 60_000);
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});
afterAll(() => Promise.all([fake.stop(), cluster?.close()]));

const { start } = gatewaysPerTest();
const tokens = (n: number) => Array.from({ length: n }, (_, i) => `tok${i} `).join('');

/** An AG-UI run of the model, read frame by frame: `events` grows as they come; `done` once the stream ends. */
function agRun(g: RunningGateway, threadId: string, runId: string, text: string) {
  const events: any[] = [];
  const done = new Promise<any[]>((resolve, reject) => {
    const body = JSON.stringify({
      threadId,
      runId,
      messages: [{ id: `u-${runId}`, role: 'user', content: text }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    });
    const request = httpRequest(`${g.url}/agent/default/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      if (response.statusCode !== 200) return reject(new Error(`status ${response.statusCode}`));
      response.setEncoding('utf8');
      let buffer = '';
      response.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame.split('\n').find((line) => line.startsWith('data: '));
          const id = frame.split('\n').find((line) => line.startsWith('id: '));
          if (data) events.push({ ...JSON.parse(data.slice(6)), sequence: id ? Number(id.split(':').at(-1)) : -1 });
        }
      });
      response.on('end', () => resolve(events));
      response.on('error', reject);
    });
    request.end(body);
  });
  return { events, done };
}

const agText = (events: any[]) =>
  events
    .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
    .map((event) => event.delta)
    .join('');

/** A run's stored events, read from the cluster (after any failover: from whichever node now serves them). */
async function storedLog(prefix: string, threadId: string, runId: string): Promise<any[]> {
  const client = new Cluster(
    cluster.liveNodes.map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) })),
  );
  try {
    const entries = await client.xrange(`${prefix}{${threadId}}:log:${runId}`, '-', '+');
    return entries.flatMap(([, fields]) => JSON.parse(fields[1]) as any[]);
  } finally {
    client.disconnect();
  }
}

/**
 * Two in-process gateways on the cluster with REDIS_WAIT_REPLICAS=1 (once every replica is in sync): a run of `tokens`
 * tokens 20 ms apart streaming through A (its first 10 events shown, unless it ended first), and a follower through
 * B that has its first events.
 */
async function streamingWithFollower(prefix: string, leaseMs: number, threadId: string, runId: string, tokens: number) {
  const threads = { clusterNodes: cluster.liveNodes, keyPrefix: prefix, waitReplicas: 1, leaseMs };
  const adapter = () => new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 });
  // A WAIT before the replicas are in sync would stall the run until they are.
  await cluster.untilReplicated();
  const a = await start({ adapter: adapter(), threads });
  const b = await start({ adapter: adapter(), threads });
  const run = agRun(a, threadId, runId, `[tokens=${tokens}] [delay=20]`);
  let ended = false;
  void run.done.finally(() => (ended = true));
  while (run.events.length < 10 && !ended) await new Promise((resolve) => setTimeout(resolve, 20));
  const joiner = watch(b.wsUrl, JOIN_RUN, { threadId });
  await joiner.received(4);
  return { a, b, run, joiner };
}

describe('Redis Cluster', () => {
  it('is configured by REDIS_CLUSTER_NODES, alone; REDIS_URL at a cluster node is refused at start, naming it', async () => {
    expect(readEnvironment({ REDIS_CLUSTER_NODES: '10.0.0.5:6379, 10.0.0.6:6379' }).threads).toMatchObject({
      clusterNodes: ['10.0.0.5:6379', '10.0.0.6:6379'],
    });
    expect(
      readEnvironment({ REDIS_CLUSTER_NODES: '10.0.0.5:6379', REDIS_PASSWORD: 'secret' }).threads.redisPassword,
    ).toBe('secret');
    expect(() => readEnvironment({ REDIS_CLUSTER_NODES: 'a:1', REDIS_URL: 'redis://x:6379' })).toThrow(
      /Set one of REDIS_URL, REDIS_SENTINELS .* and REDIS_CLUSTER_NODES, not several/,
    );
    expect(() => readEnvironment({ REDIS_CLUSTER_NODES: 'a:1', REDIS_SENTINEL_NAME: 'm' })).toThrow(
      /go with REDIS_SENTINELS/,
    );
    expect(() => createGateway({ logger: silentLogger, threads: { clusterNodes: ['nohost'] } })).toThrow(
      /options.threads.clusterNodes: "nohost" is not "host:port"/,
    );
    expect(() =>
      createGateway({ logger: silentLogger, threads: { clusterNodes: ['a:1'], redisUrl: 'redis://a:1' } }),
    ).toThrow(/one of redisUrl, sentinels and clusterNodes/);

    for (const onStoreFailure of ['serve', 'fail'] as const) {
      const gateway = createGateway({
        logger: silentLogger,
        threads: { redisUrl: `redis://${cluster.nodes[0]}`, onStoreFailure },
      });
      try {
        await expect(gateway.listen(0, '127.0.0.1')).rejects.toMatchObject({
          code: 'CONFIGURATION_ERROR',
          message: expect.stringMatching(
            /is a node of a Redis Cluster: name the cluster's nodes in REDIS_CLUSTER_NODES/,
          ),
        });
      } finally {
        await gateway.close().catch(() => {});
      }
    }
  });

  it('ends through B, from what A had stored, a run whose process was killed; the thread is free and restores', async () => {
    const env = {
      OPENAI_BASE_URL: baseURL,
      OPENAI_API_KEY: 'test-key',
      REDIS_CLUSTER_NODES: cluster.nodes.join(','),
      INSTANCE_LEASE_MS: '1500',
    };
    const a = await startGatewayProcess(env, children);
    const b = await startGatewayProcess(env, children);
    const threadId = 'cluster-killed';
    const origin = watch(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[tokens=500] [delay=5]')], { threadId }),
    });
    await origin.received(3);
    const live = watch(b.wsUrl, JOIN_RUN, { threadId });
    await origin.received(12);
    a.child.kill('SIGKILL');

    await live.done;
    const joined = watch(b.wsUrl, JOIN_RUN, { threadId });
    await joined.done;
    expect(joined.errors).toEqual([]);
    for (const events of [live.events, joined.events]) {
      expect(events.at(-1)).toMatchObject({
        __typename: 'RunFinishedEvent',
        status: { code: 'Failed', details: { code: 'INSTANCE_LOST' } },
      });
    }
    // What A's client was shown is a prefix of what every join replays, number for number.
    expect(textOfEvents(joined.events).startsWith(textOfEvents(origin.events))).toBe(true);
    expect(tokens(500).startsWith(textOfEvents(joined.events))).toBe(true);
    expect(textOfEvents(live.events)).toBe(textOfEvents(joined.events));
    const sequences = joined.events.map((event) => event.sequence);
    expect(new Set(sequences).size).toBe(sequences.length);

    // The thread is free again; its record has both runs.
    const next = watch(b.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=1] again')], { threadId }) });
    await next.done;
    expect(next.events.at(-1).status.code).toBe('Success');
    const thread = (await gql(b.url, THREAD, { threadId })).data.copilotThread;
    expect(thread.runs.map((run: any) => run.status.details?.code ?? run.status.code)).toEqual([
      'INSTANCE_LOST',
      'Success',
    ]);
  }, 60_000);

  it("carries a run across its primary's death (the replica promoted) with REDIS_WAIT_REPLICAS=1: every event a client was shown is kept, the run and its joiner end as documented", async () => {
    const threadId = 'cluster-failover';
    const runId = 'cluster-failover-run';
    const { a, b, run, joiner } = await streamingWithFollower('failover:', 10_000, threadId, runId, 150);
    expect(run.events.length).toBeGreaterThanOrEqual(10);

    const killed = await cluster.killPrimaryOf(`failover:{${threadId}}:lock`);
    // The replica is promoted; the old primary comes back as its replica (a restarted machine), so that the writes
    // REDIS_WAIT_REPLICAS=1 holds can be replicated again.
    await cluster.untilHealthy();
    await cluster.revive(killed);
    const events = await run.done;
    await joiner.done;

    // The run ends as documented: carried across the switch with every token, or (its writes not taken by a replica
    // within the lease: the promoted replica has none until the old primary is back as one) STORE_UNAVAILABLE.
    const end = events.at(-1);
    if (end.type === 'RUN_FINISHED') expect(agText(events)).toBe(tokens(150));
    else expect(end).toMatchObject({ type: 'RUN_ERROR', code: expect.stringMatching(/^(STORE_UNAVAILABLE)$/) });

    // Nothing the client was shown is missing from what the promoted replica has, numbered the same.
    const shown = events.filter((event) => event.type !== 'RUN_ERROR');
    const seen = Math.max(...shown.map((event) => event.sequence));
    const log = await storedLog('failover:', threadId, runId);
    expect(Math.max(...log.map((event) => event.sequence))).toBeGreaterThanOrEqual(seen);
    const storedText = (upTo: number) =>
      log
        .filter((event) => event.type === 'TextMessageContent' && event.sequence <= upTo)
        .map((event) => event.content)
        .join('');
    expect(storedText(seen)).toBe(agText(events));
    // The joiner ended too (no hang), having seen only stored events, numbered as stored.
    const joinerError = (joiner.errors.flat()[0] as any)?.extensions?.code;
    expect(joinerError ?? joiner.events.at(-1)?.__typename).toMatch(/^(RunFinishedEvent|STORE_UNAVAILABLE)$/);
    const joinerSeen = Math.max(...joiner.events.map((event) => event.sequence));
    expect(textOfEvents(joiner.events)).toBe(storedText(joinerSeen).slice(-textOfEvents(joiner.events).length || 0));

    // New runs on the thread are served and recorded.
    await cluster.untilReplicated();
    let again: any[] = [];
    for (let attempt = 0; attempt < 50; attempt++) {
      again = await agRun(a, threadId, `again-${attempt}`, '[tokens=2] after').done;
      if (again.at(-1)?.type === 'RUN_FINISHED') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(again.at(-1)).toMatchObject({ type: 'RUN_FINISHED' });
    const thread = (await gql(b.url, THREAD, { threadId })).data.copilotThread;
    expect(thread.runs.length).toBeGreaterThanOrEqual(2);
  }, 90_000);

  it("ends a follower on the other instance STORE_UNAVAILABLE, as the run's own client, when no replica takes the run's writes (its primary dead, not back)", async () => {
    const OUTCOMES = /^(STORE_UNAVAILABLE|INSTANCE_LOST)$/;
    const threadId = 'cluster-orphan';
    const { run, joiner } = await streamingWithFollower('orphan:', 3_000, threadId, 'cluster-orphan-run', 300);

    // The promoted replica has no replica of its own: no write of the run is acknowledged any more.
    await cluster.killPrimaryOf(`orphan:{${threadId}}:lock`);
    const events = await run.done;
    await joiner.done;
    // STORE_UNAVAILABLE: the run's instance gave its clients up after the lease with no write taken. Or, when A's
    // instance lease is kept on the same shard and the failover outlasted it (under load), B's sweep ended the run
    // first as a lost instance's, and A, finding it ended, tells its clients INSTANCE_LOST (PROTOCOL §7.5).
    expect(events.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: expect.stringMatching(OUTCOMES) });
    // The follower ends too (it does not hang), with one of those: as an error, or as the stored ending (which of the
    // two it hears first when both happen depends on which reaches B first).
    const joinerEnd = joiner.errors.flat()[0] as any;
    const joinerCode = joinerEnd
      ? joinerEnd.extensions?.code
      : joiner.events.at(-1)?.__typename === 'RunFinishedEvent' && joiner.events.at(-1).status.details?.code;
    expect(joinerCode).toMatch(OUTCOMES);
    // It saw only what was stored (and so shown to the run's client too, or about to be).
    expect(tokens(300).startsWith(textOfEvents(joiner.events))).toBe(true);
  }, 60_000);
});
