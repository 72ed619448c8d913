import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { readEnvironment } from '../src/env.js';
import { createGateway } from '../src/gateway.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, silentLogger, type RunningGateway } from './support/harness.js';
import type { SequencedEvent } from '../src/core/events.js';
import type { Message } from '../src/core/messages.js';
import type { RedisRunLog } from '../src/threads/redis/run-log.js';
import { RedisServer, startRedisStore } from './support/redis.js';

// REDIS_WAIT_REPLICAS: a run's events are shown to its clients only once the replicas asked for have them (Redis's
// WAIT), so that whatever a client saw survives the primary's death; replicas that do not take them stall the run,
// whose clients are then told STORE_UNAVAILABLE, not shown what could be lost.

const fake = new FakeOpenAI();
let baseURL: string;
let primary: RedisServer;
let replica: RedisServer;
let replicaClient: Redis;
beforeAll(async () => {
  [baseURL, primary] = await Promise.all([fake.start(), RedisServer.start()]);
  replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  replicaClient = new Redis({ port: replica.port, host: '127.0.0.1' });
  const primaryClient = new Redis({ port: primary.port, host: '127.0.0.1' });
  // The replica's first sync done.
  for (let i = 0; i < 100 && (await primaryClient.wait(1, 100)) < 1; i++);
  primaryClient.disconnect();
}, 30_000);
afterAll(async () => {
  replicaClient.disconnect();
  replica.resume();
  await Promise.all([fake.stop(), primary.close(), replica.close()]);
});

const { start } = gatewaysPerTest();
const gateway = (prefix: string) =>
  start({
    adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
    threads: { redisUrl: primary.url, keyPrefix: prefix, waitReplicas: 1, leaseMs: 1_500 },
  });

/** Posts an AG-UI run; returns the body's reader, to read its frames as they come. */
async function agRun(g: RunningGateway, threadId: string, text: string) {
  const response = await fetch(`${g.url}/agent/default/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      threadId,
      runId: `${threadId}-run`,
      messages: [{ id: `u-${threadId}`, role: 'user', content: text }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    }),
  });
  expect(response.status).toBe(200);
  return response.body!.getReader();
}

describe('REDIS_WAIT_REPLICAS', () => {
  it('is read from the environment, and needs Redis', () => {
    expect(readEnvironment({ REDIS_URL: 'redis://r:6379', REDIS_WAIT_REPLICAS: '1' }).threads.waitReplicas).toBe(1);
    expect(readEnvironment({ REDIS_URL: 'redis://r:6379', REDIS_WAIT_REPLICAS: '0' }).threads.waitReplicas).toBe(0);
    expect(() => readEnvironment({ REDIS_WAIT_REPLICAS: 'one' })).toThrow(/REDIS_WAIT_REPLICAS must be a whole number/);
    expect(() => createGateway({ logger: silentLogger, threads: { waitReplicas: 1 } })).toThrow(/goes with Redis/);
  });

  it('shows a client only events the replica already has', async () => {
    const g = await gateway('wait1:');
    const reader = await agRun(g, 'replicated', '[tokens=40] [delay=10]');
    const decoder = new TextDecoder();
    let text = '';
    let checks = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      const ids = [...text.matchAll(/^id: replicated-run:(\d+)$/gm)].map((match) => Number(match[1]));
      if (ids.length === 0) continue;
      // Everything this client has seen is on the replica at this moment.
      const seen = Math.max(...ids);
      const entries = await replicaClient.xrange('wait1:{replicated}:log:replicated-run', '-', '+');
      const stored = entries.flatMap(([, fields]) => JSON.parse(fields[1]) as { sequence: number }[]);
      expect(Math.max(...stored.map((event) => event.sequence))).toBeGreaterThanOrEqual(seen);
      checks++;
    }
    expect(text).toContain('RUN_FINISHED');
    expect(checks).toBeGreaterThan(5);
  });

  it('waits for the replica after a write answered dup (stored by an earlier attempt on another connection)', async () => {
    // A run's write reaches the primary, the connection drops before its answer, and the write is sent again on a new
    // connection: answered dup. It must be waited for like any write, and the WAIT must cover the first attempt's
    // write (Redis 7.2+ count in WAIT only the connection's own writes: the script writes the record's `last` again).
    // Two stores on one key prefix stand for the two connections: one writes (no WAIT), the other
    // (REDIS_WAIT_REPLICAS=1) sends the same batch while the replica, frozen, has not taken the first.
    const keyPrefix = 'dup:';
    const writer = await startRedisStore({ url: primary.url }, { keyPrefix, leaseMs: 60_000 });
    const retrier = await startRedisStore({ url: primary.url }, { keyPrefix, leaseMs: 60_000, waitReplicas: 1 });
    const direct = new Redis({ port: primary.port, host: '127.0.0.1' });
    try {
      const user = { kind: 'text', id: 'm1', role: 'user', content: 'hi', createdAt: new Date(0).toISOString() };
      const messages = [user as unknown as Message];
      const { runId } = await writer.claim('dup', 'run-1', 'fresh-1');
      const log = writer.open('dup', runId, { messages, newMessages: messages }) as RedisRunLog;
      const keys = retrier.records.runKeys('dup', runId);
      const stored = async (sequence: number) => {
        for (let i = 0; i < 500 && Number(await direct.hget(keys.run, 'last')) !== sequence; i++)
          await new Promise((resolve) => setTimeout(resolve, 10));
        expect(Number(await direct.hget(keys.run, 'last'))).toBe(sequence);
      };
      log.append({ type: 'RunStarted', threadId: 'dup', runId, sequence: 0 } as unknown as SequencedEvent);
      await stored(0);
      // Everything so far, the retrier's own writes at its start included, is on the replica.
      expect(await (retrier.records.redis as Redis).wait(1, 5_000)).toBe(1);
      replica.pause();
      try {
        const event = { type: 'TextMessageStart', messageId: 'a1', parentMessageId: null, role: 'assistant' };
        const events = [{ ...event, sequence: 1 }];
        log.append(events[0] as unknown as SequencedEvent);
        await stored(1); // on the primary only
        const batch = { owner: writer.instanceId, first: 1, last: 1, events: JSON.stringify(events), states: '[]' };
        const again = retrier.records.appendEvents(keys, batch);
        await expect(again).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
        // What the WAIT of Redis 7.2+ needs, seen on any version: the dup of a write to be waited for (no channel) is
        // itself a write the replica is sent; one that is not waited for writes nothing (it fails nothing under
        // maxmemory either).
        const offset = async () => Number(/master_repl_offset:(\d+)/.exec(await direct.info('replication'))![1]);
        const before = await offset();
        expect(await retrier.records.redis.cgAppendEvents(keys.run, keys.log, 1, 1, batch.events, '')).toBe('dup');
        const after = await offset();
        expect(after).toBeGreaterThan(before);
        expect(await retrier.records.redis.cgAppendEvents(keys.run, keys.log, 1, 1, batch.events, keys.channel)).toBe(
          'dup',
        );
        expect(await offset()).toBe(after);
      } finally {
        replica.resume();
      }
    } finally {
      direct.disconnect();
      await Promise.all([writer.close(), retrier.close()]);
    }
  }, 30_000);

  it('stalls a run whose events the replica does not take, and ends it STORE_UNAVAILABLE without showing them', async () => {
    const g = await gateway('wait2:');
    replica.pause();
    try {
      const reader = await agRun(g, 'stalled', '[tokens=5]');
      const decoder = new TextDecoder();
      let text = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      expect(text).toContain('"code":"STORE_UNAVAILABLE"');
      expect(text).not.toContain('tok0');
    } finally {
      replica.resume();
    }
  }, 30_000);
});
