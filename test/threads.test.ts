import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CopilotRuntimeClient } from '@copilotkit/runtime-client-gql';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import type { GatewayOptions } from '../src/gateway.js';
import { FakeAgUiAgent } from './support/fake-ag-ui-agent.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { RedisServer } from './support/redis.js';
import { RedisCluster } from './support/redis-cluster.js';
import { COPILOT_RUN, JOIN_RUN, STOP, THREAD, gql, textOfEvents, until, watch } from './support/threads.js';

// Threads, resumable runs and one run per thread, the same over both stores: in memory, and in a
// real redis-server, and in a real Redis Cluster of three primaries with a replica each (two gateways sharing it
// stand for two instances).

const fake = new FakeOpenAI();
const agent = new FakeAgUiAgent();
let redis: RedisServer;
let cluster: RedisCluster;
let baseURL: string;
let agentUrl: string;
let prefixes = 0;

beforeAll(async () => {
  [baseURL, agentUrl, redis, cluster] = await Promise.all([
    fake.start(),
    agent.start(),
    RedisServer.start(),
    RedisCluster.start(),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([fake.stop(), agent.stop(), redis.close(), cluster.close()]);
});

const { start } = gatewaysPerTest();

const STORES = [
  ['in memory', () => ({})],
  // A key prefix per gateway group keeps tests apart in the one Redis.
  ['in Redis', () => ({ redisUrl: redis.url, keyPrefix: `t${++prefixes}:`, leaseMs: 1_000 })],
  ['in Redis Cluster', () => ({ clusterNodes: cluster.nodes, keyPrefix: `t${++prefixes}:`, leaseMs: 1_000 })],
] as const;

describe.each(STORES)('threads %s', (kind, storeOptions) => {
  /** A gateway (and, with Redis, a second instance on the same store). */
  async function gateways(extra: GatewayOptions['threads'] = {}, more: GatewayOptions = {}) {
    const threads = { ...storeOptions(), ...extra };
    const options: GatewayOptions = {
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
      agents: { researcher: agUiAgent({ url: agentUrl }) },
      threads,
      ...more,
    };
    const a = await start(options);
    // In memory, "another instance" is the same one: the store is this process's.
    const b = kind === 'in memory' ? a : await start(options);
    return { a, b };
  }

  const thread = (url: string, threadId: string) =>
    gql(url, THREAD, { threadId }).then((answer) => answer.data.copilotThread);

  it('restores a conversation the stock client had: messages, runs and statuses; null for an unknown thread', async () => {
    const { a, b } = await gateways();
    const client = new CopilotRuntimeClient({ url: a.url });
    const threadId = `restore-${kind}`;
    const hello = userMessage('[tokens=3]', 'u1');
    const result = await client.generateCopilotResponse({ data: runInput([hello], { threadId }) as any }).toPromise();
    expect(result.error).toBeUndefined();

    const restored = await until(
      () => thread(b.url, threadId),
      (t) => t?.runs[0]?.finishedAt,
      'the run recorded',
    );
    expect(restored.messages.map((m: any) => [m.__typename, m.id, m.content.join('')])).toEqual([
      ['TextMessageOutput', 'u1', '[tokens=3]'],
      ['TextMessageOutput', expect.any(String), 'tok0 tok1 tok2 '],
    ]);
    expect(restored.runs).toHaveLength(1);
    const [run] = restored.runs;
    expect(run.status).toEqual({ code: 'Success' });
    // RunStarted, start, three chunks, end, RunFinished.
    expect(run.lastSequence).toBe(6);
    expect(new Date(run.finishedAt).getTime()).toBeGreaterThanOrEqual(new Date(run.startedAt).getTime());
    expect((await gql(b.url, THREAD, { threadId: 'never-ran' })).data.copilotThread).toBeNull();
  });

  it('completes a conversation from the store when a client sends only its new messages, and never doubles one sent again', async () => {
    const { a, b } = await gateways();
    const client = new CopilotRuntimeClient({ url: a.url });
    const threadId = `history-${kind}`;
    const first = userMessage('[tokens=2] first', 'h1');
    await client.generateCopilotResponse({ data: runInput([first], { threadId }) as any }).toPromise();
    const afterFirst = await until(
      () => thread(b.url, threadId),
      (t) => t?.runs[0]?.finishedAt,
      'the first run recorded',
    );
    const reply = afterFirst.messages[1];

    // Only the new message, through the other instance.
    const second = userMessage('[tokens=1] second', 'h2');
    await new CopilotRuntimeClient({ url: b.url })
      .generateCopilotResponse({ data: runInput([second], { threadId }) as any })
      .toPromise();
    const seen = fake.requests[fake.requests.length - 1].messages.map((m: any) => m.content);
    expect(seen).toEqual(['[tokens=2] first', 'tok0 tok1 ', '[tokens=1] second']);

    // The whole history, as the stock client sends it: taken as it is, nothing doubled.
    const afterSecond = await until(
      () => thread(a.url, threadId),
      (t) => t?.runs[1]?.finishedAt,
      'the second run recorded',
    );
    const history = afterSecond.messages.map((m: any) => ({
      id: m.id,
      createdAt: new Date().toISOString(),
      textMessage: { role: m.role, content: m.content.join('') },
    }));
    const third = userMessage('[tokens=1] third', 'h3');
    await client.generateCopilotResponse({ data: runInput([...history, third], { threadId }) as any }).toPromise();
    expect(fake.requests[fake.requests.length - 1].messages.map((m: any) => m.content)).toEqual([
      '[tokens=2] first',
      'tok0 tok1 ',
      '[tokens=1] second',
      'tok0 ',
      '[tokens=1] third',
    ]);
    const final = await until(
      () => thread(b.url, threadId),
      (t) => t?.runs[2]?.finishedAt,
      'the third run recorded',
    );
    const ids = final.messages.map((m: any) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.slice(0, 2)).toEqual(['h1', reply.id]);
    expect(final.messages).toHaveLength(6);
  });

  it("shows, while a run sent only its new message runs, the thread's history, that message and what the run has produced so far; and all of it once the run ends", async () => {
    const { a, b } = await gateways();
    const threadId = `running-read-${kind}`;
    await new CopilotRuntimeClient({ url: a.url })
      .generateCopilotResponse({ data: runInput([userMessage('[tokens=2] first', 'r1')], { threadId }) as any })
      .toPromise();
    await until(
      () => thread(b.url, threadId),
      (t) => t?.runs[0]?.finishedAt,
      'the first run recorded',
    );
    const run = watch(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[tokens=300] [delay=20] second', 'r2')], { threadId }),
    });
    await run.received(6);
    const during = await until(
      () => thread(b.url, threadId),
      (t) => t?.messages.length === 4,
      'the running run read with its output so far',
    );
    const contents = (t: any) => t.messages.map((m: any) => m.content.join(''));
    expect(contents(during).slice(0, 3)).toEqual(['[tokens=2] first', 'tok0 tok1 ', '[tokens=300] [delay=20] second']);
    expect(contents(during)[3]).toMatch(/^tok0 tok1 /);
    expect(during.runs[1].finishedAt).toBeNull();

    expect((await gql(b.url, STOP, { threadId })).data.stopCopilotRun).toBe(true);
    await run.done;
    const after = await until(
      () => thread(a.url, threadId),
      (t) => t?.runs[1]?.finishedAt,
      'the stopped run recorded',
    );
    expect(contents(after).slice(0, 3)).toEqual(['[tokens=2] first', 'tok0 tok1 ', '[tokens=300] [delay=20] second']);
    expect(contents(after)[3]).toBe(textOfEvents(run.events));
    expect(after.messages).toHaveLength(4);
  });

  it('refuses a second run on a busy thread with THREAD_BUSY before calling the model, from any instance, and frees the thread at the terminal event', async () => {
    const { a, b } = await gateways();
    const threadId = `busy-${kind}`;
    const running = watch(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[tokens=40] [delay=20]')], { threadId }),
    });
    await running.received(3);
    const calls = fake.requests.length;

    const refused = await gql(
      b.url,
      'mutation($data: GenerateCopilotResponseInput!) { generateCopilotResponse(data: $data) { threadId } }',
      {
        data: runInput([userMessage('[tokens=1] again')], { threadId }),
      },
    );
    expect(refused.errors[0].extensions.code).toBe('THREAD_BUSY');
    expect(refused.errors[0].extensions.details).toEqual({ threadId, runId: running.events[0].runId });
    const overWs = watch(b.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=1] again')], { threadId }) });
    await overWs.done;
    expect((overWs.errors[0] as any).extensions.code).toBe('THREAD_BUSY');
    expect(fake.requests.length).toBe(calls);

    await running.done;
    // The stock client's follow-up comes at once: the thread is already free, on every instance.
    const next = watch(b.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=1] next')], { threadId }) });
    await next.done;
    expect(next.errors).toEqual([]);
    expect(next.events.at(-1).status.code).toBe('Success');
  });

  it('keeps a CONTINUE run going when its client leaves, and replays it compacted to a client that joins later', async () => {
    const { a, b } = await gateways();
    const threadId = `continue-${kind}`;
    const first = watch(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[tokens=30] [delay=10]')], { threadId }),
      onDisconnect: 'CONTINUE',
    });
    await first.received(4);
    const seen = first.events.slice();
    await first.leave();

    const finished = await until(
      () => thread(b.url, threadId),
      (t) => t?.runs[0]?.finishedAt,
      'the run to finish without its client',
    );
    expect(finished.runs[0].status.code).toBe('Success');
    const { lastSequence } = finished.runs[0];
    expect(lastSequence).toBe(33);

    // Everything, from RunStarted, merged where that loses nothing.
    const all = watch(b.wsUrl, JOIN_RUN, { threadId });
    await all.done;
    expect(all.errors).toEqual([]);
    expect(all.events[0]).toMatchObject({ __typename: 'RunStartedEvent', sequence: 0, threadId });
    expect(all.events.at(-1)).toMatchObject({
      __typename: 'RunFinishedEvent',
      sequence: lastSequence,
      status: { code: 'Success' },
    });
    expect(textOfEvents(all.events)).toBe(Array.from({ length: 30 }, (_, i) => `tok${i} `).join(''));
    expect(all.events.length).toBeLessThan(10);
    const sequences = all.events.map((event) => event.sequence);
    expect(sequences).toEqual([...sequences].sort((x, y) => x - y));

    // After what the first client had: exactly the rest.
    const lastSeen = seen.at(-1).sequence;
    const rest = watch(b.wsUrl, JOIN_RUN, { threadId, runId: finished.runs[0].runId, afterSequence: lastSeen });
    await rest.done;
    expect(rest.events[0].sequence).toBeGreaterThan(lastSeen);
    expect(textOfEvents(seen) + textOfEvents(rest.events)).toBe(textOfEvents(all.events));
  });

  it('cancels the run (and its model call) when a CANCEL client leaves', async () => {
    const { a } = await gateways();
    const threadId = `cancel-${kind}`;
    const aborted = fake.abortedRequests;
    const run = watch(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=200] [delay=20]')], { threadId }) });
    await run.received(3);
    await run.leave();
    await until(
      async () => fake.abortedRequests,
      (n) => n > aborted,
      'the model request closed',
    );
    const ended = await until(
      () => thread(a.url, threadId),
      (t) => t?.runs[0]?.finishedAt,
      'the run ended',
    );
    expect(ended.runs[0].status.details.code).toBe('CLIENT_DISCONNECTED');
  });

  it('lets a client join a run live from another instance, and follow it to its end', async () => {
    const { a, b } = await gateways();
    const threadId = `live-${kind}`;
    const origin = watch(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[tokens=25] [delay=15]')], { threadId }),
    });
    await origin.received(5);
    const joined = watch(b.wsUrl, JOIN_RUN, { threadId });
    await Promise.all([origin.done, joined.done]);
    expect(joined.errors).toEqual([]);
    expect(textOfEvents(joined.events)).toBe(textOfEvents(origin.events));
    expect(joined.events.at(-1)).toEqual(origin.events.at(-1));
    expect(joined.events[0].sequence).toBe(0);
  });

  it('completes at once a join after the last event of a finished run, and two joins at once both follow to the end', async () => {
    const { a, b } = await gateways();
    const threadId = `rejoin-${kind}`;
    const run = watch(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=3]')], { threadId }) });
    await run.done;
    const last = run.events.at(-1).sequence;
    await until(
      () => thread(b.url, threadId),
      (t) => t?.runs[0]?.finishedAt,
      'the run recorded',
    );
    for (const afterSequence of [last, last + 10]) {
      const rejoined = watch(b.wsUrl, JOIN_RUN, { threadId, afterSequence });
      await rejoined.done;
      expect(rejoined.errors).toEqual([]);
      expect(rejoined.events).toEqual([]);
    }
    const live = watch(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=20] [delay=10]')], { threadId }) });
    await live.received(2);
    const [one, two] = [watch(b.wsUrl, JOIN_RUN, { threadId }), watch(b.wsUrl, JOIN_RUN, { threadId })];
    await Promise.all([live.done, one.done, two.done]);
    expect(textOfEvents(one.events)).toBe(textOfEvents(live.events));
    expect(textOfEvents(two.events)).toBe(textOfEvents(live.events));
  });

  it('answers RUN_NOT_FOUND for a run it does not have, and BAD_USER_INPUT for a negative afterSequence', async () => {
    const { b } = await gateways();
    const unknown = watch(b.wsUrl, JOIN_RUN, { threadId: 'nobody-here' });
    await unknown.done;
    expect((unknown.errors[0] as any).extensions).toMatchObject({
      code: 'RUN_NOT_FOUND',
      details: { threadId: 'nobody-here' },
    });
    const negative = watch(b.wsUrl, JOIN_RUN, { threadId: 'nobody-here', afterSequence: -3 });
    await negative.done;
    expect((negative.errors[0] as any).extensions.code).toBe('BAD_USER_INPUT');
  });

  it('stops a running run from another instance: the model call is closed and the run fails with RUN_STOPPED', async () => {
    const { a, b } = await gateways();
    const threadId = `stop-${kind}`;
    const aborted = fake.abortedRequests;
    const run = watch(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=500] [delay=20]')], { threadId }) });
    await run.received(3);
    expect((await gql(b.url, STOP, { threadId, runId: 'not-this-one' })).data.stopCopilotRun).toBe(false);
    expect((await gql(b.url, STOP, { threadId })).data.stopCopilotRun).toBe(true);
    await run.done;
    const last = run.events.at(-1);
    expect(last.__typename).toBe('RunFinishedEvent');
    expect(last.status).toMatchObject({
      code: 'Failed',
      reason: 'MESSAGE_STREAM_INTERRUPTED',
      details: { code: 'RUN_STOPPED' },
    });
    expect(last.status.details.description).toMatch(/stopped/);
    // The open message was closed as Failed before the end.
    expect(run.events.at(-2)).toMatchObject({
      __typename: 'TextMessageEndEvent',
      messageStatus: { __typename: 'FailedMessageStatus' },
    });
    await until(
      async () => fake.abortedRequests,
      (n) => n > aborted,
      'the model request closed',
    );
    expect((await gql(b.url, STOP, { threadId })).data.stopCopilotRun).toBe(false);
  });

  it('stops a run still being admitted (its onBeforeRequest hook still waiting): it ends RUN_STOPPED without calling the model', async () => {
    let entered!: () => void;
    const inHook = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { a, b } = await gateways(
      {},
      {
        hooks: {
          onBeforeRequest: async () => {
            entered();
            await gate;
          },
        },
      },
    );
    const threadId = `admitting-${kind}`;
    const calls = fake.requests.length;
    const run = watch(a.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=5]')], { threadId }) });
    await inHook;
    expect((await gql(b.url, STOP, { threadId })).data.stopCopilotRun).toBe(true);
    release();
    await run.done;
    expect(run.events.at(-1).status.details.code).toBe('RUN_STOPPED');
    expect(fake.requests.length).toBe(calls);
  });

  it('interrupts the active run instead of refusing, with onBusy "interrupt"', async () => {
    const { a, b } = await gateways({ onBusy: 'interrupt' });
    const threadId = `interrupt-${kind}`;
    const first = watch(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[tokens=500] [delay=20]')], { threadId }),
    });
    await first.received(3);
    const second = watch(b.wsUrl, COPILOT_RUN, { data: runInput([userMessage('[tokens=2]')], { threadId }) });
    await Promise.all([first.done, second.done]);
    expect(first.events.at(-1).status.details.code).toBe('RUN_STOPPED');
    expect(second.errors).toEqual([]);
    expect(second.events.at(-1).status.code).toBe('Success');
  });

  it('answers loadAgentState from the store for a thread an agent ran here, with the stock client', async () => {
    const { a, b } = await gateways();
    const threadId = `agent-${kind}`;
    const run = watch(a.wsUrl, COPILOT_RUN, {
      data: runInput([userMessage('[state]', 'as1')], { threadId, agentSession: { agentName: 'researcher' } }),
    });
    await run.done;
    expect(run.events.at(-1).status.code).toBe('Success');
    const client = new CopilotRuntimeClient({ url: b.url });
    const loaded = await until(
      () => client.loadAgentState({ threadId, agentName: 'researcher' }).toPromise(),
      (answer: any) => answer.data?.loadAgentState?.threadExists === true,
      'the state stored',
    );
    const state = (loaded as any).data.loadAgentState;
    expect(JSON.parse(state.state)).toEqual({ step: 2 });
    expect(JSON.parse(state.messages)).toEqual([
      { id: 'as1', role: 'user', content: '[state]' },
      { id: expect.any(String), role: 'assistant', content: 'State updated. ' },
    ]);
    // A thread it never ran: the agent is asked (AG-UI agents keep no state: threadExists false).
    const unknown = await client
      .loadAgentState({ threadId: 'unknown-agent-thread', agentName: 'researcher' })
      .toPromise();
    expect(unknown.data?.loadAgentState.threadExists).toBe(false);
    const restored = await thread(b.url, threadId);
    expect(restored.agentStates).toEqual([
      {
        agentName: 'researcher',
        nodeName: expect.any(String),
        state: JSON.stringify({ step: 2 }),
        running: expect.any(Boolean),
        runId: restored.runs[0].runId,
      },
    ]);
  });

  it('gives a repeated run id (the stock client sends the last one back) a new id rather than mixing two runs', async () => {
    const { a, b } = await gateways();
    const threadId = `rerun-${kind}`;
    const client = new CopilotRuntimeClient({ url: a.url });
    const one = await client
      .generateCopilotResponse({ data: runInput([userMessage('[tokens=1]')], { threadId, runId: 'r-1' }) as any })
      .toPromise();
    expect(one.data?.generateCopilotResponse.runId).toBe('r-1');
    await until(
      () => thread(b.url, threadId),
      (t) => t?.runs[0]?.finishedAt,
      'the first run recorded',
    );
    const two = await client
      .generateCopilotResponse({ data: runInput([userMessage('[tokens=1]')], { threadId, runId: 'r-1' }) as any })
      .toPromise();
    const second = two.data?.generateCopilotResponse.runId;
    expect(second).not.toBe('r-1');
    const recorded = await until(
      () => thread(b.url, threadId),
      (t) => t?.runs[1]?.finishedAt,
      'the second run recorded',
    );
    expect(recorded.runs.map((run: any) => run.runId)).toEqual(['r-1', second]);
  });
});
