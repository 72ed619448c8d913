import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { CopilotRuntimeClient } from '@copilotkit/runtime-client-gql';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { RestRuntimeAgent } from './support/ag-ui-client.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { RedisServer } from './support/redis.js';
import { startGatewayProcess, type GatewayProcess } from './support/gateway-process.js';
import {
  COPILOT_RUN,
  JOIN_RUN,
  STOP,
  THREAD,
  compactEvents,
  expectLogBeginsWith,
  gql,
  storedLog,
  textOfEvents,
  until,
  watch,
} from './support/threads.js';

// Several gateway processes on one Redis, started as `npm start` starts them (scripts/start.mjs with
// REDIS_URL): runs joined and stopped across processes, a process killed mid-run, Redis restarted
// mid-run, Redis down.

const LEASE_MS = 1_500;
const fake = new FakeOpenAI();
let redis: RedisServer;
let baseURL: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  [baseURL, redis] = await Promise.all([fake.start(), RedisServer.start({ persistent: true })]);
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});
afterAll(async () => {
  await Promise.all([fake.stop(), redis.close()]);
});

/** The full text of a `[tokens=N]` answer. */
const tokens = (n: number) => Array.from({ length: n }, (_, i) => `tok${i} `).join('');

/** Starts a gateway process as npm start does, on the test's Redis; resolves with its URLs once it is ready. */
function startProcess(env: Record<string, string> = {}): Promise<GatewayProcess> {
  return startGatewayProcess(
    {
      OPENAI_BASE_URL: baseURL,
      OPENAI_API_KEY: 'test-key',
      REDIS_URL: redis.url,
      INSTANCE_LEASE_MS: String(LEASE_MS),
      ...env,
    },
    children,
  );
}

describe('several gateway processes on one Redis', () => {
  it('joins and stops through B a run started on A', async () => {
    const a = await startProcess();
    const b = await startProcess();
    const threadId = 'processes-join-stop';
    const aborted = fake.abortedRequests;
    const origin = watch(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[tokens=500] [delay=20]')], { threadId }),
      onDisconnect: 'CONTINUE',
    });
    await origin.received(4);
    const joined = watch(b.wsUrl, JOIN_RUN, { threadId });
    await joined.received(4);
    const restored = await gql(b.url, THREAD, { threadId });
    expect(restored.data.copilotThread.runs[0]).toMatchObject({ finishedAt: null, status: { code: 'Pending' } });

    expect((await gql(b.url, STOP, { threadId })).data.stopCopilotRun).toBe(true);
    await Promise.all([origin.done, joined.done]);
    for (const events of [origin.events, joined.events]) {
      expect(events.at(-1).status).toMatchObject({ code: 'Failed', details: { code: 'RUN_STOPPED' } });
    }
    // B saw what A's client saw, numbered the same.
    expect(textOfEvents(joined.events)).toBe(textOfEvents(origin.events));
    expect(joined.events.at(-1).sequence).toBe(origin.events.at(-1).sequence);
    await until(
      async () => fake.abortedRequests,
      (n) => n > aborted,
      'the model request closed by A',
    );
  }, 60_000);

  it('ends through B, from what A had stored, a run whose process was killed, and frees its thread', async () => {
    const a = await startProcess();
    const b = await startProcess();
    const threadId = 'processes-killed';
    const origin = watch(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[tokens=500] [delay=5]')], { threadId }),
    });
    await origin.received(3);
    // A second client follows the run live through B.
    const live = watch(b.wsUrl, JOIN_RUN, { threadId });
    await origin.received(12);
    const killedAt = Date.now();
    a.child.kill('SIGKILL');

    const joined = watch(b.wsUrl, JOIN_RUN, { threadId });
    await Promise.all([joined.done, live.done]);
    const tookMs = Date.now() - killedAt;
    expect(joined.errors).toEqual([]);
    const text = textOfEvents(joined.events);
    expect(tokens(500).startsWith(text)).toBe(true);
    const last = joined.events.at(-1);
    expect(last.__typename).toBe('RunFinishedEvent');
    expect(last.status).toMatchObject({
      code: 'Failed',
      reason: 'MESSAGE_STREAM_INTERRUPTED',
      details: { code: 'INSTANCE_LOST' },
    });
    expect(last.status.details.description).toMatch(/instance/);
    // Its open message was closed before the end, and sequences never repeat.
    expect(joined.events.at(-2)).toMatchObject({
      __typename: 'TextMessageEndEvent',
      messageStatus: { __typename: 'FailedMessageStatus' },
    });
    const sequences = joined.events.map((event) => event.sequence);
    expect(new Set(sequences).size).toBe(sequences.length);
    // Bounded by the lease (and a beat of the survivor); far under the default's 15 s.
    expect(tookMs).toBeLessThan(LEASE_MS * 4);

    // Every client's view is a prefix of the log every join replays, number for number: nothing A's
    // client was shown is missing from it or named differently there, whatever A had not yet written.
    const log = await storedLog(redis.url, 'cg:', threadId, origin.events[0].runId);
    expectLogBeginsWith(log, origin.events);
    expect(compactEvents(live.events)).toEqual(compactEvents(log));
    expect(text).toBe(
      log
        .filter((event) => event.type === 'TextMessageContent')
        .map((event) => event.content)
        .join(''),
    );
    // Resumed from the last number A's client had, it gets exactly the rest.
    const resumed = watch(b.wsUrl, JOIN_RUN, { threadId, afterSequence: origin.events.at(-1).sequence });
    await resumed.done;
    expect(textOfEvents(origin.events) + textOfEvents(resumed.events)).toBe(text);
    expect(resumed.events.at(-1)).toMatchObject({ __typename: 'RunFinishedEvent', sequence: last.sequence });

    // The thread is free again, and its transcript kept what was stored.
    const next = watch(b.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=1] again')], { threadId }) });
    await next.done;
    expect(next.events.at(-1).status.code).toBe('Success');
    const thread = (await gql(b.url, THREAD, { threadId })).data.copilotThread;
    expect(thread.runs.map((run: any) => run.status.details?.code ?? run.status.code)).toEqual([
      'INSTANCE_LOST',
      'Success',
    ]);
    // The killed run's message and what it had stored, then the next run's.
    expect(thread.messages.map((message: any) => message.content.join(''))).toEqual([
      '[tokens=500] [delay=5]',
      text,
      '[tokens=1] again',
      'tok0 ',
    ]);
  }, 60_000);
});

describe('SIGTERM', () => {
  it('drains a process mid-run: unready and refusing new runs at once, the run ended with SHUTTING_DOWN after the grace period, every event kept, exit code 0', async () => {
    const a = await startProcess({ SHUTDOWN_GRACE_MS: '1500' });
    const b = await startProcess();
    const threadId = 'processes-sigterm';
    const aborted = fake.abortedRequests;
    const origin = watch(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[tokens=2000] [delay=10]')], { threadId }),
      onDisconnect: 'CONTINUE',
    });
    await origin.received(10);
    const exited = new Promise<number | null>((resolve) => a.child.once('exit', (code) => resolve(code)));
    a.child.kill('SIGTERM');

    // Within the grace period: out of rotation, and new runs go elsewhere.
    const ready = await until(
      () => fetch(new URL('/ready', a.url)).then((response) => response.status),
      (status) => status === 503,
      'A unready',
    );
    expect(ready).toBe(503);
    const refused = await gql(
      a.url,
      'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId } }',
      { data: runInput([userMessage('late')]) },
    );
    expect(refused.errors[0].extensions).toMatchObject({ code: 'SHUTTING_DOWN' });

    await origin.done;
    expect(await exited).toBe(0);
    const last = origin.events.at(-1);
    expect(last.status).toMatchObject({ code: 'Failed', details: { code: 'SHUTTING_DOWN' } });
    await until(
      async () => fake.abortedRequests,
      (n) => n > aborted,
      'the model request closed by A',
    );

    // B has the whole run, exactly as A's client saw it, and the thread is free.
    const joined = watch(b.wsUrl, JOIN_RUN, { threadId });
    await joined.done;
    expect(textOfEvents(joined.events)).toBe(textOfEvents(origin.events));
    expect(joined.events.at(-1).sequence).toBe(last.sequence);
    expect(joined.events.at(-1).status).toMatchObject({ details: { code: 'SHUTTING_DOWN' } });
    const next = watch(b.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=1] again')], { threadId }) });
    await next.done;
    expect(next.events.at(-1).status.code).toBe('Success');
  }, 60_000);
});

describe('Redis going away', () => {
  const { start } = gatewaysPerTest();
  let prefix = 0;
  const options = (threads: Record<string, unknown> = {}) => ({
    adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
    threads: { redisUrl: redis.url, keyPrefix: `restart${++prefix}:`, leaseMs: LEASE_MS, ...threads },
  });

  it('loses no event of a run when Redis restarts in the middle of it', async () => {
    const a = await start(options());
    const threadId = 'redis-restart';
    const run = watch(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=100] [delay=15]')], { threadId }) });
    await run.received(10);
    await redis.restart();
    await run.done;
    expect(run.events.at(-1).status.code).toBe('Success');
    expect(textOfEvents(run.events)).toBe(tokens(100));

    // Every event reached Redis: a join replays the whole run, in order.
    const thread = await until(
      () => gql(a.url, THREAD, { threadId }),
      (answer) => answer.data?.copilotThread?.runs[0]?.finishedAt,
      'the run recorded after the restart',
    );
    expect(thread.data.copilotThread.runs[0].lastSequence).toBe(103);
    const joined = watch(a.wsUrl, JOIN_RUN, { threadId });
    await joined.done;
    expect(textOfEvents(joined.events)).toBe(tokens(100));
    expect(joined.events.at(-1).sequence).toBe(103);
  }, 60_000);

  it('keeps followers following when the subscriber connection is cut just before the end', async () => {
    const shared = options();
    const a = await start(shared);
    const b = await start({
      ...shared,
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
    });
    const threadId = 'pubsub-cut';
    const run = watch(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=30] [delay=15]')], { threadId }) });
    await run.received(3);
    const joined = watch(b.wsUrl, JOIN_RUN, { threadId });
    await joined.received(2);
    const admin = new Redis(redis.url);
    try {
      await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await Promise.all([run.done, joined.done]);
    } finally {
      admin.disconnect();
    }
    expect(joined.errors).toEqual([]);
    expect(textOfEvents(joined.events)).toBe(tokens(30));
    expect(joined.events.at(-1).status.code).toBe('Success');
  }, 30_000);

  it("shows a run's events only once Redis has them: while its writes are held its client waits, then gets the whole run as recorded; a new run's claim waits too", async () => {
    const shared = options({ leaseMs: 20_000 });
    const a = await start(shared);
    const threadId = 'redis-slow';
    const run = watch(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=30] [delay=10]')], { threadId }) });
    await run.received(5);
    const runId = run.events[0].runId;
    const admin = new Redis(redis.url);
    let next: ReturnType<typeof watch> | undefined;
    try {
      // Every write waits (CLIENT PAUSE WRITE) until UNPAUSE below; reads go on.
      await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
      // The model answers whole meanwhile (30 tokens, 10 ms apart), and the run ends in the gateway.
      await new Promise((resolve) => setTimeout(resolve, 800));
      const stored = Number(await admin.hget(`${shared.threads.keyPrefix}{${threadId}}:run:${runId}`, 'last'));
      // The client was shown nothing Redis does not have.
      expect(run.events.at(-1).sequence).toBeLessThanOrEqual(stored);
      expect(run.events.map((event) => event.__typename)).not.toContain('RunFinishedEvent');
      // A run on another thread: its claim (a write) waits for Redis.
      next = watch(a.wsUrl, COPILOT_RUN, {
        data: runInput([userMessage('[tokens=3]')], { threadId: 'redis-slow-next' }),
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(next.events).toEqual([]);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
      admin.disconnect();
    }
    await Promise.all([run.done, next.done]);
    expect(run.errors).toEqual([]);
    expect(run.events.at(-1).status.code).toBe('Success');
    expect(textOfEvents(run.events)).toBe(tokens(30));
    expect(next.events.at(-1).status.code).toBe('Success');
    expect(textOfEvents(next.events)).toBe(tokens(3));

    const thread = await until(
      () => gql(a.url, THREAD, { threadId }),
      (answer) => answer.data?.copilotThread?.runs[0]?.finishedAt,
      'the run recorded',
    );
    expect(thread.data.copilotThread.runs[0].lastSequence).toBe(33);
    const log = await storedLog(redis.url, shared.threads.keyPrefix, threadId, runId);
    expect(compactEvents(run.events)).toEqual(compactEvents(log));
  }, 60_000);

  it("ends a run's clients with STORE_UNAVAILABLE when Redis takes none of its events for longer than the lease, and completes its record with that end once Redis answers", async () => {
    const shared = options();
    const a = await start(shared);
    const threadId = 'redis-stalled';
    const aborted = fake.abortedRequests;
    const run = watch(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[tokens=1000] [delay=10]')], { threadId }),
    });
    await run.received(5);
    const runId = run.events[0].runId;
    const admin = new Redis(redis.url);
    try {
      await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
      await run.done;
      // Told with an error, not an event: its number could name another event in the log later.
      expect(run.errors).toEqual([
        [expect.objectContaining({ extensions: expect.objectContaining({ code: 'STORE_UNAVAILABLE' }) })],
      ]);
      expect(run.events.map((event) => event.__typename)).not.toContain('RunFinishedEvent');
      await until(
        async () => fake.abortedRequests,
        (n) => n > aborted,
        'the model request closed',
      );
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
      admin.disconnect();
    }
    const thread = await until(
      () => gql(a.url, THREAD, { threadId }),
      (answer) => answer.data?.copilotThread?.runs[0]?.finishedAt,
      'the run recorded once Redis answered',
    );
    expect(thread.data.copilotThread.runs[0].status).toMatchObject({
      code: 'Failed',
      details: { code: 'STORE_UNAVAILABLE' },
    });
    expectLogBeginsWith(await storedLog(redis.url, shared.threads.keyPrefix, threadId, runId), run.events);
    // The thread is free for the next run.
    const next = watch(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=2] again')], { threadId }) });
    await next.done;
    expect(next.events.at(-1).status.code).toBe('Success');
  }, 60_000);

  it("ends the stock client's answer (status Failed) and an AG-UI run (RUN_ERROR) with STORE_UNAVAILABLE when Redis stalls past the lease", async () => {
    const shared = options();
    const a = await start(shared);
    const client = new CopilotRuntimeClient({ url: a.url });
    const answer = client
      .generateCopilotResponse({
        data: runInput([userMessage('[tokens=1000] [delay=10]')], { threadId: 'stalled-stock' }) as any,
      })
      .toPromise();
    const agUi = new RestRuntimeAgent(a.url, 'default', { threadId: 'stalled-ag-ui' });
    agUi.messages.push({ id: 'stalled-ag-ui-1', role: 'user', content: '[tokens=1000] [delay=10]' });
    const agUiEvents: any[] = [];
    const agUiRun = agUi.runAgent({}, { onEvent: ({ event }: any) => void agUiEvents.push(event) }).catch(() => {});
    for (const threadId of ['stalled-stock', 'stalled-ag-ui']) {
      await until(
        () => gql(a.url, THREAD, { threadId }),
        (thread) => thread.data?.copilotThread?.runs[0]?.lastSequence > 3,
        `the run on ${threadId} under way`,
      );
    }
    const admin = new Redis(redis.url);
    try {
      await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
      const result = await answer;
      const response = result.data!.generateCopilotResponse as any;
      expect(response.status).toMatchObject({
        code: 'Failed',
        details: { code: 'STORE_UNAVAILABLE', requestId: expect.any(String) },
      });
      // The message left open ends as the run does, with its description (PROTOCOL.md §4.5).
      const text = response.messages.find((message: any) => message.__typename === 'TextMessageOutput');
      expect(text.status).toMatchObject({ code: 'Failed', reason: response.status.details.description });
      await agUiRun;
      expect(agUiEvents.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'STORE_UNAVAILABLE' });
      expect(agUiEvents.map((event) => event.type)).not.toContain('RUN_FINISHED');
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
      admin.disconnect();
    }
  }, 60_000);

  it("writes a run's record again when Redis loses part of it (a restore from an older snapshot), and frees its thread", async () => {
    const shared = options();
    const keyPrefix = shared.threads.keyPrefix;
    const a = await start(shared);
    const admin = new Redis(redis.url);
    try {
      const damages: [string, (run: string) => Promise<unknown>][] = [
        ['rolled-back', (run) => admin.hset(`${keyPrefix}{rolled-back}:run:${run}`, 'last', 2)],
        [
          'wiped',
          (run) =>
            admin.del(`${keyPrefix}{wiped}:run:${run}`, `${keyPrefix}{wiped}:log:${run}`, `${keyPrefix}{wiped}:lock`),
        ],
      ];
      for (const [threadId, damage] of damages) {
        const run = watch(a.wsUrl, COPILOT_RUN, {
          data: runInput([userMessage('[tokens=60] [delay=10]')], { threadId }),
        });
        await run.received(10);
        await damage(run.events[0].runId);
        await run.done;
        expect(run.events.at(-1).status.code).toBe('Success');
        const recorded = await until(
          () => gql(a.url, THREAD, { threadId }),
          (answer) => answer.data?.copilotThread?.runs[0]?.finishedAt,
          `${threadId}: the record written again`,
        );
        expect(recorded.data.copilotThread.runs[0].lastSequence).toBe(63);
        const joined = watch(a.wsUrl, JOIN_RUN, { threadId });
        await joined.done;
        expect(textOfEvents(joined.events)).toBe(tokens(60));
        const next = watch(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=1]')], { threadId }) });
        await next.done;
        expect(next.errors).toEqual([]);
      }
    } finally {
      admin.disconnect();
    }
  }, 30_000);

  it('stops a run this instance lost to another (its lease ran out meanwhile)', async () => {
    const shared = options();
    const a = await start(shared);
    const admin = new Redis(redis.url);
    try {
      const threadId = 'lost-lease';
      const aborted = fake.abortedRequests;
      const run = watch(a.wsUrl, COPILOT_RUN, {
        data: runInput([userMessage('[tokens=300] [delay=10]')], { threadId }),
      });
      await run.received(5);
      // What another instance writes when it ends the run of an instance it takes for dead.
      const failed = {
        code: 'Failed',
        reason: 'MESSAGE_STREAM_INTERRUPTED',
        details: { code: 'INSTANCE_LOST', description: 'lost', originalError: {} },
      };
      await admin.hset(
        `${shared.threads.keyPrefix}{${threadId}}:run:${run.events[0].runId}`,
        'status',
        JSON.stringify(failed),
      );
      await run.done;
      // Its client is told with an error, not an event: what the run does from now on is not stored, and
      // a number this instance gave an event could name another in the log the other instance ended.
      expect(run.errors).toEqual([
        [expect.objectContaining({ extensions: expect.objectContaining({ code: 'INSTANCE_LOST' }) })],
      ]);
      expect(run.events.map((event) => event.__typename)).not.toContain('RunFinishedEvent');
      await until(
        async () => fake.abortedRequests,
        (n) => n > aborted,
        'the model request closed',
      );
    } finally {
      admin.disconnect();
    }
  }, 30_000);

  it('lets Redis expire a thread THREAD_TTL_SECONDS after its last run', async () => {
    const a = await start(options({ ttlSeconds: 1 }));
    const threadId = 'expiring';
    const run = watch(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=2]')], { threadId }) });
    await run.done;
    await until(
      () => gql(a.url, THREAD, { threadId }),
      (answer) => answer.data?.copilotThread?.runs[0]?.finishedAt,
      'the run recorded',
    );
    const gone = await until(
      () => gql(a.url, THREAD, { threadId }),
      (answer) => answer.data?.copilotThread === null,
      'the thread expired',
      5_000,
    );
    expect(gone.data.copilotThread).toBeNull();
  }, 30_000);

  it('serves new runs unrecorded while Redis is down (onStoreFailure "serve"), or refuses them with STORE_UNAVAILABLE ("fail"); thread reads fail clearly', async () => {
    const serving = await start(options());
    const failing = await start(options({ onStoreFailure: 'fail' }));
    const ready = async (url: string) => {
      const response = await fetch(new URL('/ready', url));
      return { status: response.status, body: await response.json() };
    };
    expect(await ready(serving.url)).toEqual({
      status: 200,
      body: {
        status: 'ready',
        checks: { listening: true, leaving: false, draining: false, threadStore: { kind: 'redis', reachable: true } },
      },
    });
    await redis.stop();
    try {
      // Still serving (degraded) is ready; refusing new runs is not.
      const degraded = await until(
        () => ready(serving.url),
        (answer) => answer.body.checks.threadStore.reachable === false,
        'Redis seen down',
      );
      expect(degraded).toEqual({
        status: 200,
        body: {
          status: 'ready',
          checks: {
            listening: true,
            leaving: false,
            draining: false,
            threadStore: { kind: 'redis', reachable: false, onStoreFailure: 'serve' },
          },
        },
      });
      expect(await ready(failing.url)).toMatchObject({ status: 503, body: { status: 'not ready' } });
      const served = watch(serving.wsUrl, COPILOT_RUN, {
        data: runInput([userMessage('[tokens=2]')], { threadId: 'redis-down' }),
      });
      await served.done;
      expect(served.events.at(-1).status.code).toBe('Success');

      const refused = watch(failing.wsUrl, COPILOT_RUN, {
        data: runInput([userMessage('[tokens=2]')], { threadId: 'redis-down' }),
      });
      await refused.done;
      expect((refused.errors[0] as any).extensions.code).toBe('STORE_UNAVAILABLE');

      const read = await gql(serving.url, THREAD, { threadId: 'redis-down' });
      expect(read.errors[0].extensions.code).toBe('STORE_UNAVAILABLE');
      expect((await gql(serving.url, STOP, { threadId: 'redis-down' })).errors[0].extensions.code).toBe(
        'STORE_UNAVAILABLE',
      );
    } finally {
      await redis.restart();
    }
    // Back: runs are recorded again.
    await until(
      async () => {
        const run = watch(failing.wsUrl, COPILOT_RUN, {
          data: runInput([userMessage('[tokens=1]')], { threadId: 'redis-back' }),
        });
        await run.done;
        return run.errors.length === 0;
      },
      (ok) => ok,
      'a run admitted once Redis is back',
    );
    const thread = await until(
      () => gql(failing.url, THREAD, { threadId: 'redis-back' }),
      (answer) => answer.data?.copilotThread?.runs.length > 0,
      'the run recorded',
    );
    expect(thread.data.copilotThread.runs.at(-1).status.code).toBe('Success');
  }, 60_000);
});
