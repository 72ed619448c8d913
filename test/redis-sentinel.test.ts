import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { readEnvironment } from '../src/env.js';
import { createGateway } from '../src/gateway.js';
import type { ThreadsOptions } from '../src/threads/options.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, silentLogger, type RunningGateway } from './support/harness.js';
import { RedisSentinels } from './support/redis-sentinel.js';
import { startRedisStore } from './support/redis.js';

// Redis behind Sentinel (a primary, a replica, three Sentinels on loopback): the gateway finds the primary through
// the Sentinels, and after the primary dies and the replica is promoted it finds the new one and carries on; a run
// streaming across the switch ends as documented (finished, or failed with a store code), never hangs.

const fake = new FakeOpenAI();
let baseURL: string;
let redis: RedisSentinels;
beforeAll(async () => {
  [baseURL, redis] = await Promise.all([fake.start(), RedisSentinels.start()]);
}, 30_000);
afterAll(() => Promise.all([fake.stop(), redis.close()]));

const { start } = gatewaysPerTest();

/** A gateway of the fake model whose threads are on the Sentinels' primary (both passwords given), with `more`. */
function startOnSentinels(more: ThreadsOptions): Promise<RunningGateway> {
  return start({
    adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
    threads: {
      sentinels: redis.addresses,
      sentinelName: redis.name,
      redisPassword: redis.password,
      sentinelPassword: redis.sentinelPassword,
      ...more,
    },
  });
}

/** An AG-UI run of the model; resolves with its SSE events once the stream ends. */
async function agRun(g: RunningGateway, threadId: string, text: string): Promise<any[]> {
  const response = await fetch(`${g.url}/agent/default/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      threadId,
      runId: `run-${Math.random().toString(36).slice(2)}`,
      messages: [{ id: `u-${Math.random().toString(36).slice(2)}`, role: 'user', content: text }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    }),
  });
  const body = await response.text();
  if (response.status !== 200) return [{ type: 'HTTP', status: response.status, body }];
  return body
    .split('\n\n')
    .filter((frame) => frame.includes('data: '))
    .map((frame) => JSON.parse(frame.slice(frame.indexOf('data: ') + 6)));
}

const text = (events: any[]) =>
  events
    .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
    .map((event) => event.delta)
    .join('');
const tokens = (n: number) => Array.from({ length: n }, (_, i) => `tok${i} `).join('');

describe('Redis Sentinel', () => {
  it('is configured by REDIS_SENTINELS and REDIS_SENTINEL_NAME, and refused half-configured', () => {
    expect(
      readEnvironment({ REDIS_SENTINELS: '10.0.0.5:26379, 10.0.0.6:26379', REDIS_SENTINEL_NAME: 'mymaster' }).threads,
    ).toMatchObject({ sentinels: ['10.0.0.5:26379', '10.0.0.6:26379'], sentinelName: 'mymaster' });
    expect(() => readEnvironment({ REDIS_SENTINELS: '10.0.0.5:26379' })).toThrow(/needs REDIS_SENTINEL_NAME/);
    expect(() =>
      readEnvironment({ REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_NAME: 'm', REDIS_URL: 'redis://x:6379' }),
    ).toThrow(/Set one of REDIS_URL, REDIS_SENTINELS/);
    expect(() => readEnvironment({ REDIS_SENTINEL_NAME: 'm' })).toThrow(/go with REDIS_SENTINELS/);
    expect(() =>
      createGateway({ logger: silentLogger, threads: { sentinels: ['nohost'], sentinelName: 'm' } }),
    ).toThrow(/is not "host:port"/);
  });

  it('keeps its connections when the Sentinels fail over another primary they watch', async () => {
    const g = await startOnSentinels({ keyPrefix: 'other:' });
    expect((await agRun(g, 'other-1', 'before')).at(-1)).toMatchObject({ type: 'RUN_FINISHED' });
    const primary = new Redis({ port: redis.primary.port, host: '127.0.0.1', password: redis.password });
    /** The ids of the primary's client connections but the Sentinels' (named `sentinel-…`) and this one. */
    const connections = async () => {
      const own = await primary.client('ID');
      const list = (await primary.client('LIST')) as string;
      return list
        .split('\n')
        .filter((line) => line && !/ name=sentinel-/.test(line) && !line.startsWith(`id=${own} `))
        .map((line) => /^id=(\d+)/.exec(line)![1])
        .sort();
    };
    try {
      const before = await connections();
      expect(before.length).toBeGreaterThanOrEqual(2); // the store's command and subscriber connections
      await redis.failOverOther();
      // Every Sentinel names the other primary's replica now (and has said so on +switch-master): a reconnection
      // would have been made within this pause.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await connections()).toEqual(before);
      expect((await agRun(g, 'other-2', 'after')).at(-1)).toMatchObject({ type: 'RUN_FINISHED' });
    } finally {
      primary.disconnect();
    }
  }, 60_000);

  it('asks the Sentinels for the primary at every reconnection without calling them unreachable', async () => {
    const store = await startRedisStore(redis.connection);
    const errors: string[] = [];
    const connection = store.records.redis as Redis;
    connection.on('error', (error: Error) => errors.push(error.message));
    try {
      // More reconnections than there are Sentinels: ioredis goes down its list of them unless it is restarted.
      for (let i = 0; i < 5; i++) {
        const ready = new Promise((resolve) => connection.once('ready', resolve));
        connection.disconnect(true);
        await ready;
      }
      expect(errors).toEqual([]);
      expect(await connection.ping()).toBe('PONG');
    } finally {
      await store.close();
    }
  });

  it('finds the new primary after a failover: runs go on, what was stored before is kept', async () => {
    const g = await startOnSentinels({ listAnonymous: true, keyPrefix: 'sent:' });
    const before = await agRun(g, 'sentinel-1', 'before the failover');
    expect(before.at(-1)).toMatchObject({ type: 'RUN_FINISHED' });
    await redis.untilReplicated();

    // A run streaming while the primary dies.
    const streaming = agRun(g, 'sentinel-2', '[tokens=150] [delay=20]');
    await new Promise((resolve) => setTimeout(resolve, 500));
    await redis.killPrimary();
    await redis.failedOver();
    const during = await streaming;
    const end = during.at(-1);
    if (end.type === 'RUN_FINISHED') {
      // Carried across the switch: every token, and the stored thread has them all.
      expect(text(during)).toBe(tokens(150));
    } else {
      expect(end).toMatchObject({
        type: 'RUN_ERROR',
        code: expect.stringMatching(/^(STORE_UNAVAILABLE|INSTANCE_LOST)$/),
      });
    }

    // New runs are served and recorded on the new primary (the first may still find it switching).
    let after: any[] = [];
    for (let attempt = 0; attempt < 100; attempt++) {
      after = await agRun(g, `sentinel-3-${attempt}`, 'after the failover');
      if (after.at(-1)?.type === 'RUN_FINISHED') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(after.at(-1)).toMatchObject({ type: 'RUN_FINISHED' });
    // Reads too may still answer STORE_UNAVAILABLE while the switch settles (the subscriber connection may still be
    // finding the new primary): the list is read once it answers, within 20 s.
    let listed: any;
    for (let attempt = 0; attempt < 100; attempt++) {
      const response = await fetch(`${g.url}/threads?agentId=default&limit=50`);
      listed = await response.json();
      if (response.status === 200) break;
      expect(listed.code).toBe('STORE_UNAVAILABLE');
      if (attempt === 99) throw new Error(`the list answered STORE_UNAVAILABLE for 20 s: ${JSON.stringify(listed)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const ids = listed.threads.map((thread: any) => thread.id);
    expect(ids).toContain('sentinel-1');
    expect(ids.some((id: string) => id.startsWith('sentinel-3-'))).toBe(true);
    const restored = await (await fetch(`${g.url}/threads/sentinel-1/messages`)).json();
    expect(restored.messages.map((message: any) => message.role)).toEqual(['user', 'assistant']);
  }, 60_000);
});
