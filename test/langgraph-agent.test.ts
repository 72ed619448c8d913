import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { EmptyAdapter } from '../src/adapters/empty.js';
import { langGraphAgent, langGraphThreadId } from '../src/agents/langgraph.js';
import { FakeLangGraph } from './support/fake-langgraph.js';
import { eventually, gatewaysPerTest, runInput, userMessage, type RunningGateway } from './support/harness.js';
import { startedIds } from './support/threads.js';
import { RUN_SUBSCRIPTION, TRANSPORTS, textOf } from './support/transports.js';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

// LangGraph Platform through @langchain/langgraph-sdk: assistants, threads, runs.stream, interrupts,
// state, cancellation.

const platform = new FakeLangGraph();
let deploymentUrl: string;
const { start } = gatewaysPerTest();
const stock = TRANSPORTS.find((transport) => transport.name === 'multipart')!;
const THREAD = '6f1c2c1e-8d4b-4a55-9a7e-0c1d2e3f4a5b';

beforeAll(async () => {
  deploymentUrl = await platform.start();
});

afterAll(async () => {
  await platform.stop();
});

function gateway(overrides: Record<string, unknown> = {}, options: Parameters<typeof start>[0] = {}) {
  return start({
    adapter: new EmptyAdapter(),
    agents: {
      chat: langGraphAgent({
        deploymentUrl,
        graphId: 'chat',
        apiKey: 'lsv2-test',
        description: 'Chats.',
        retry: { baseDelayMs: 1, maxDelayMs: 5 },
        ...overrides,
      }),
    },
    ...options,
  });
}

const run = (
  g: RunningGateway,
  messages: unknown[],
  extra: Record<string, unknown> = {},
  properties?: Record<string, unknown>,
) =>
  stock.run(g, runInput(messages, { agentSession: { agentName: 'chat' }, threadId: THREAD, ...extra }), { properties });

async function graphql(g: RunningGateway, query: string) {
  return (
    await fetch(g.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    })
  ).json() as Promise<any>;
}

describe('a LangGraph run', () => {
  it("finds the assistant once, creates the thread, and sends the conversation with CopilotKit's actions", async () => {
    platform.threads.delete(THREAD);
    const g = await gateway();
    const searchesBefore = platform.calls.filter((call) => call === 'POST /assistants/search').length;
    const now = new Date().toISOString();
    const first = await run(
      g,
      [
        { id: 'sys', createdAt: now, textMessage: { role: 'system', content: 'You are CopilotKit.' } },
        { id: 'u1', createdAt: now, textMessage: { role: 'user', content: '[tokens=3]' } },
      ],
      {
        frontend: {
          actions: [{ name: 'showAlert', description: 'Alerts.', jsonSchema: '{"type":"object","properties":{}}' }],
          url: 'http://localhost:3000/',
        },
        agentStates: [{ agentName: 'chat', state: '{"topic":"ai"}', config: '{"configurable":{"depth":2}}' }],
        context: [{ description: 'Page', value: 'Home' }],
      },
    );
    expect(first.status.code).toBe('Success');
    expect(textOf(first)).toBe('tok0 tok1 tok2 ');
    const body = platform.runs.at(-1)!.body;
    expect(body).toMatchObject({
      assistant_id: 'asst-chat',
      stream_mode: ['events', 'values', 'updates'],
      config: { configurable: { depth: 2 } },
      input: {
        topic: 'ai',
        messages: [{ id: 'u1', type: 'human', content: '[tokens=3]' }],
        copilotkit: {
          actions: [{ name: 'showAlert', description: 'Alerts.', parameters: { type: 'object', properties: {} } }],
          context: [{ description: 'Page', value: 'Home' }],
        },
      },
    });
    expect(platform.runs.at(-1)!.headers['x-api-key']).toBe('lsv2-test');

    // The next turn sends only what the thread does not have yet.
    const aiMessage = platform.threads.get(THREAD)!.values.messages.at(-1);
    await run(g, [
      { id: 'u1', createdAt: now, textMessage: { role: 'user', content: '[tokens=3]' } },
      { id: aiMessage.id, createdAt: now, textMessage: { role: 'assistant', content: aiMessage.content } },
      { id: 'u2', createdAt: now, textMessage: { role: 'user', content: '[tokens=1]' } },
    ]);
    expect(platform.runs.at(-1)!.body.input.messages).toEqual([{ id: 'u2', type: 'human', content: '[tokens=1]' }]);
    expect(platform.calls.filter((call) => call === 'POST /assistants/search').length - searchesBefore).toBe(1);
  });

  it("ends with the thread's final state, its messages in CopilotKit's form, at __end__", async () => {
    platform.threads.delete(THREAD);
    const g = await gateway();
    const outcome = await run(g, [userMessage('[state]', 'u-state')]);
    const last = outcome.messages.filter((m) => m.type === 'state').at(-1) as any;
    expect(last).toMatchObject({ agentName: 'chat', nodeName: '__end__', active: false, running: true });
    expect(last.state.step).toBe(2);
    expect(last.state.messages).toEqual([
      { role: 'user', content: '[state]', id: 'u-state' },
      expect.objectContaining({ role: 'assistant', content: 'State updated. ' }),
    ]);
  });

  it("names a tool call's parent message as the run wrote it, when the graph used that message's id twice", async () => {
    // The run gives the second message a new id (an id names one message of a run): the call's parent is that one.
    const g = await gateway();
    const { texts, callParent } = await startedIds(
      g.wsUrl,
      runInput([userMessage('[reused-id]')], { agentSession: { agentName: 'chat' }, threadId: 'lg-reused' }),
    );
    expect(texts).toHaveLength(2);
    expect(texts[0]).toBe('lg-reused');
    expect(texts[1]).not.toBe('lg-reused');
    expect(callParent).toBe(texts[1]);
  });

  it('maps a thread id that is not a UUID to the same UUID every time', async () => {
    expect(langGraphThreadId('thread-1')).toBe(langGraphThreadId('thread-1'));
    expect(langGraphThreadId('thread-1')).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(langGraphThreadId(THREAD.toUpperCase())).toBe(THREAD);
    const g = await gateway();
    await run(g, [userMessage('[tokens=1]')], { threadId: 'my-thread' });
    expect(platform.runs.at(-1)!.threadId).toBe(langGraphThreadId('my-thread'));
  });
});

describe('langGraphThreadId', () => {
  it('keeps the UUIDs of well-formed thread ids as they always were', () => {
    expect(langGraphThreadId('thread-1')).toBe('df819c42-bcf1-5985-9495-863e7794d024');
    expect(langGraphThreadId('chat \u00e9 \u{1F4AC}')).toBe('60499407-2b30-5e9b-abef-a2d0a49b2958');
  });

  it('never maps two thread ids to one LangGraph thread, lone surrogates included', () => {
    // As UTF-8, each of these is the same bytes (a lone surrogate becomes U+FFFD).
    const ids = ['chat\uD800', 'chat\uD801', 'chat\uDC00', 'chat\uFFFD'].map(langGraphThreadId);
    expect(new Set(ids).size).toBe(4);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(langGraphThreadId('chat\uD800')).toBe(langGraphThreadId('chat\uD800'));
  });
});

describe('headers', () => {
  it("sends the API key, hook headers, and a client's authorization when forwarding is on", async () => {
    const g = await gateway({
      forwardAuthorization: true,
      onBeforeRequest: ({ call }: { call: string }) => ({ headers: { 'x-call': call } }),
    });
    await run(g, [userMessage('[tokens=1]')], {}, { authorization: 'user-token' });
    expect(platform.runs.at(-1)!.headers).toMatchObject({
      'x-api-key': 'lsv2-test',
      'x-call': 'run',
      authorization: 'Bearer user-token',
    });
    const closed = await gateway();
    await run(closed, [userMessage('[tokens=1]')], {}, { authorization: 'user-token' });
    expect(platform.runs.at(-1)!.headers.authorization).toBeUndefined();
  });
});

describe('interrupts', () => {
  it("streams an interrupt and resumes the graph with the client's answer as a command", async () => {
    platform.threads.delete(THREAD);
    const g = await gateway();
    const interrupted = await run(g, [userMessage('[interrupt]', 'u-int')]);
    expect(interrupted.metaEvents).toEqual([{ name: 'LangGraphInterruptEvent', value: 'approve?' }]);
    const resumed = await run(g, [userMessage('[interrupt]', 'u-int')], {
      metaEvents: [{ name: 'LangGraphInterruptEvent', value: 'approve?', response: '{"approved":true}' }],
    });
    expect(platform.runs.at(-1)!.body).toMatchObject({ input: null, command: { resume: { approved: true } } });
    expect(textOf(resumed)).toBe('Resumed with: {"approved":true}');
  });

  it("passes an interrupt made with CopilotKit's SDK on with its messages", async () => {
    platform.threads.delete(THREAD);
    const g = await gateway();
    const interrupted = await run(g, [userMessage('[copilotkit-interrupt]')]);
    expect(interrupted.metaEvents).toEqual([
      {
        name: 'CopilotKitLangGraphInterruptEvent',
        value: '{"question":"approve?"}',
        messages: [{ type: 'TextMessageOutput', id: 'int-msg', content: 'Please approve.' }],
      },
    ]);
  });
});

describe('failures and aborts', () => {
  // A thread left waiting on an interrupt would take the next messages as the answer.
  beforeEach(() => {
    platform.threads.delete(THREAD);
  });

  it('fails the run with AGENT_ERROR when the graph raises', async () => {
    const outcome = await run(await gateway(), [userMessage('[agent-error]')]);
    expect(outcome.status.details).toMatchObject({
      code: 'AGENT_ERROR',
      description: 'Agent "chat" reported an error: ValueError: The agent broke down.',
    });
  });

  it('cancels the run on the deployment when the client goes away', async () => {
    const g = await gateway();
    const before = platform.cancelled.length;
    await stock.run(g, runInput([userMessage('[stall]')], { agentSession: { agentName: 'chat' }, threadId: THREAD }), {
      abortOnFirstText: true,
    });
    await eventually(() => platform.cancelled.length > before, 'the LangGraph run to be cancelled');
    expect(platform.cancelled.at(-1)!.threadId).toBe(THREAD);
  });

  it('reports a cut stream as interrupted, and cancels the run it left behind', async () => {
    const g = await gateway();
    const before = platform.cancelled.length;
    const outcome = await run(g, [userMessage('[cut]')]);
    expect(outcome.status).toMatchObject({
      code: 'Failed',
      reason: 'MESSAGE_STREAM_INTERRUPTED',
      details: { code: 'UPSTREAM_STREAM_INTERRUPTED' },
    });
    expect(outcome.status.details.description).toContain('agent "chat"');
    await eventually(() => platform.cancelled.length > before, 'the broken run to be cancelled');
  });

  it('closes the stream and cancels the run when the graph sends something unreadable', async () => {
    const g = await gateway();
    const aborted = platform.abortedRequests;
    const cancelled = platform.cancelled.length;
    const outcome = await run(g, [userMessage('[bad-event]')]);
    expect(outcome.status.details).toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
    // The graph sends nothing more: only the gateway closing its request ends the stream.
    await eventually(() => platform.abortedRequests > aborted, 'the stream to be closed');
    await eventually(() => platform.cancelled.length > cancelled, 'the run to be cancelled');
  });

  it("fails a run whose state sent again at each node comes to over 64 MiB, and passes a smaller run's on", async () => {
    // After one large values chunk, each small event from another node sends the whole state again (found in review).
    const failed = await run(await gateway(), [userMessage('[node-hops=100]')]);
    expect(failed.status).toMatchObject({ code: 'Failed', details: { code: 'UPSTREAM_BAD_RESPONSE' } });
    expect(failed.status.details.description).toMatch(/^Agent "chat" sent more state updates than .* over 64 MiB\.$/);
    const states = failed.messages.filter((m: any) => m.type === 'state');
    expect(states.length).toBeGreaterThan(10);
    expect(states.length).toBeLessThan(64);
    platform.threads.delete(THREAD);
    const passed = await run(await gateway(), [userMessage('[node-hops=10]')]);
    expect(passed.status.code).toBe('Success');
    const nodes = passed.messages.filter((m: any) => m.type === 'state').map((m: any) => m.nodeName);
    // The first values chunk (before any node), each hop, and the thread's final state.
    expect(nodes).toEqual(['', ...Array.from({ length: 5 }, () => ['plan', 'act']).flat(), '__end__']);
  }, 60_000);

  it('keeps URLs out of what the deployment says in an error', async () => {
    const outcome = await run(await gateway(), [userMessage('[fail=422]')]);
    expect(outcome.status.details.description).toBe(
      'Agent "chat" rejected the request (HTTP 422): fake failure 422, see <url>',
    );
  });

  it('does not fail one run because another, sharing its assistant lookup, was abandoned', async () => {
    platform.searchDelayMs = 150;
    try {
      const g = await gateway();
      const client = createClient({ url: g.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
      const input = (id: string) => ({
        data: runInput([userMessage('[tokens=2]')], {
          agentSession: { agentName: 'chat' },
          threadId: `${THREAD.slice(0, -2)}${id}`,
        }),
      });
      // The first run is abandoned while the (shared) lookup is still going on.
      const abandon = client.subscribe(
        { query: RUN_SUBSCRIPTION, variables: input('01') },
        { next: () => {}, error: () => {}, complete: () => {} },
      );
      const second = (async () => {
        const events: any[] = [];
        for await (const result of client.iterate({ query: RUN_SUBSCRIPTION, variables: input('02') }))
          events.push((result.data as any).copilotRun);
        return events;
      })();
      await new Promise((resolve) => setTimeout(resolve, 30));
      abandon();
      const events = await second;
      expect(events.at(-1)).toMatchObject({ __typename: 'RunFinishedEvent', status: { code: 'Success' } });
      await client.dispose();
    } finally {
      platform.searchDelayMs = 0;
    }
  });

  it('retries a refused run stream and then reports the upstream code', async () => {
    const g = await gateway({ retry: { baseDelayMs: 1, maxDelayMs: 5, maxRetries: 2 } });
    const before = platform.runs.length;
    const outcome = await run(g, [userMessage('[fail=503]')]);
    expect(platform.runs.length - before).toBe(3);
    expect(outcome.status.details).toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      description: 'Agent "chat" failed (HTTP 503).',
    });
  });

  it('says clearly when the deployment has no assistant for the graph', async () => {
    const outcome = await run(await gateway({ graphId: 'missing' }), [userMessage('hi')]);
    expect(outcome.status.details).toMatchObject({
      code: 'UPSTREAM_REJECTED',
      description: 'The LangGraph deployment of agent "chat" has no assistant for graph "missing".',
    });
  });
});

describe('loadAgentState', () => {
  it("returns the thread's state and messages, or threadExists false for a thread the deployment does not know", async () => {
    platform.threads.set(THREAD, {
      values: {
        topic: 'ai',
        messages: [
          { type: 'human', id: 'h1', content: 'hi' },
          { type: 'ai', id: 'a1', content: 'hello', tool_calls: [] },
        ],
      },
      interrupts: [],
    });
    const g = await gateway();
    const known = await graphql(
      g,
      `{ loadAgentState(data: { threadId: "${THREAD}", agentName: "chat" }) { threadExists state messages } }`,
    );
    expect(known.data.loadAgentState).toEqual({
      threadExists: true,
      state: '{"topic":"ai"}',
      messages: JSON.stringify([
        { role: 'user', content: 'hi', id: 'h1' },
        { role: 'assistant', content: 'hello', id: 'a1', parentMessageId: 'a1' },
      ]),
    });
    const unknown = await graphql(
      g,
      '{ loadAgentState(data: { threadId: "never-seen", agentName: "chat" }) { threadExists state messages } }',
    );
    expect(unknown.data.loadAgentState).toEqual({ threadExists: false, state: '{}', messages: '[]' });
  });
});
