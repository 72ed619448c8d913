import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { readEnvironment } from '../src/env.js';
import { createGateway } from '../src/gateway.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, silentLogger, type RunningGateway } from './support/harness.js';
import { RedisServer } from './support/redis.js';

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
