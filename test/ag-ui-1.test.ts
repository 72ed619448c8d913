import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { HttpAgent } from '@ag-ui/client';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import type { ServerAction } from '../src/actions/server-action.js';
import { FakeAgUiAgent } from './support/fake-ag-ui-agent.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { watch } from './support/threads.js';

// What AG-UI 1.0 adds, as @ag-ui/client 1.0's own HttpAgent (which declares protocolVersion, checks every event
// against 1.0's schemas and its lifecycle rules, and reads the outcome) takes it from the gateway: reasoning, the
// calls a run leaves for the client (pendingToolCallIds), a stop's "cancelled" outcome.

const fake = new FakeOpenAI();
const upstreamAgent = new FakeAgUiAgent();
let baseURL: string;
let agentUrl: string;
beforeAll(async () => {
  [baseURL, agentUrl] = await Promise.all([fake.start(), upstreamAgent.start()]);
});
afterAll(() => Promise.all([fake.stop(), upstreamAgent.stop()]));

const { start } = gatewaysPerTest();
const sayHello: ServerAction<{ name: string }> = {
  name: 'sayHello',
  description: 'Greets someone.',
  parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  handler: ({ name }) => `Hello, ${name}!`,
};
const showAlert = {
  name: 'showAlert',
  description: 'Shows an alert in the browser.',
  parameters: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
};

async function gateway() {
  return start({
    adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
    actions: [sayHello],
  });
}

/** Runs the model through a stock 1.0 HttpAgent; resolves with what its subscriber saw. */
async function run(url: string, threadId: string, prompt: string) {
  const agent = new HttpAgent({ url: `${url}/agent/default/run`, threadId });
  agent.addMessage({ id: `u-${Math.random().toString(36).slice(2)}`, role: 'user', content: prompt });
  const seen: { finished?: any; reasoning: string[]; types: string[]; protocolVersion?: string } = {
    reasoning: [],
    types: [],
  };
  await agent.runAgent(
    { tools: [showAlert] },
    {
      onEvent: ({ event }) => void seen.types.push(event.type),
      onRunStartedEvent: ({ input }) => void (seen.protocolVersion = input.protocolVersion),
      onReasoningMessageContentEvent: ({ event }) => void seen.reasoning.push(event.delta),
      onRunFinishedEvent: (params) => void (seen.finished = params),
    },
  );
  return { seen, agent };
}

describe('@ag-ui/client 1.0', () => {
  it('declares protocol 1.0 and gets the frontend calls a run left as pendingToolCallIds, server-side ones not', async () => {
    const g = await gateway();
    const { seen, agent } = await run(g.url, 'pending-1', '[tools=showAlert,sayHello]');
    expect(seen.protocolVersion).toMatch(/^1\./);
    expect(seen.finished.outcome).toBe('success');
    const calls = (agent.messages.find((m) => m.role === 'assistant') as any)?.toolCalls ?? [];
    const alert = calls.find((call: any) => call.function.name === 'showAlert');
    expect(alert).toBeDefined();
    expect(seen.finished.pendingToolCallIds).toEqual([alert.id]);
    expect(seen.finished.event.outcome).toEqual({ type: 'success', pendingToolCallIds: [alert.id] });
  });

  it('gets no pendingToolCallIds when every call was answered in the run', async () => {
    const g = await gateway();
    const { seen } = await run(g.url, 'pending-2', '[tool=sayHello] [toolargs={"name":"Ann"}]');
    expect(seen.finished.outcome).toBe('success');
    expect(seen.finished.event.outcome).toBeUndefined();
    expect(seen.finished.pendingToolCallIds).toEqual([]);
  });

  it('takes reasoning, checked against its schemas and lifecycle rules', async () => {
    const g = await gateway();
    const { seen, agent } = await run(g.url, 'reasoning-1', '[think] hello');
    expect(seen.reasoning.join('')).toBe('Let me think.');
    expect(seen.types.indexOf('REASONING_START')).toBeLessThan(seen.types.indexOf('TEXT_MESSAGE_START'));
    const reasoning = agent.messages.filter((message) => (message.role as string) === 'reasoning');
    expect(reasoning).toHaveLength(1);
    expect(agent.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Hello from the fake model.' });
  });
});

describe('usage', () => {
  it("reports what the run's model calls used, added up per model, on RUN_FINISHED and the subscription", async () => {
    const g = await start({
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0, streamUsage: true }),
      actions: [sayHello],
    });
    expect(fake.requests.length).toBeGreaterThan(0);
    const before = fake.requests.length;
    // Two calls: the one that calls the server-side action, and the one after its result.
    const { seen } = await run(g.url, 'usage-1', '[tool=sayHello] [toolargs={"name":"Ann"}]');
    expect(fake.requests.length).toBe(before + 2);
    expect(fake.requests[before].stream_options).toEqual({ include_usage: true });
    const twoCalls = {
      provider: 'openai',
      model: 'fake-model',
      inputTokens: 22,
      outputTokens: 14,
      totalTokens: 36,
      reasoningTokens: 4,
      cachedInputTokens: 6,
    };
    expect(seen.finished.event.usage).toEqual([twoCalls]);

    const subscription = watch(
      g.wsUrl,
      /* GraphQL */ `
        subscription Run($data: GenerateCopilotResponseInput!) {
          copilotRun(data: $data) {
            __typename
            ... on RunFinishedEvent {
              usage {
                provider
                model
                inputTokens
                outputTokens
                totalTokens
                reasoningTokens
                cachedInputTokens
                cacheWriteInputTokens
              }
            }
          }
        }
      `,
      { data: runInput([userMessage('[tool=sayHello] [toolargs={"name":"Bo"}]')]) },
    );
    await subscription.done;
    expect(subscription.errors).toEqual([]);
    expect(subscription.events.at(-1).usage).toEqual([{ ...twoCalls, cacheWriteInputTokens: null }]);
  });

  it('is not asked of servers other than OpenAI unless configured, and not sent to 0.0.x clients', async () => {
    const g = await gateway();
    const before = fake.requests.length;
    const { seen } = await run(g.url, 'usage-2', 'hello');
    expect(fake.requests[before].stream_options).toBeUndefined();
    expect(seen.finished.event.usage).toBeUndefined();
    const usageGateway = await start({
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0, apiStyle: 'responses' }),
    });
    const response = await fetch(`${usageGateway.url}/agent/default/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: 'usage-old',
        runId: 'r',
        messages: [{ id: 'u', role: 'user', content: 'hello' }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
      }),
    });
    const text = await response.text();
    expect(text).toContain('RUN_FINISHED');
    expect(text).not.toContain('"usage"');
    // The same run for a 1.0 client: the Responses API always reports usage.
    const modern = await run(usageGateway.url, 'usage-new', 'hello');
    expect(modern.seen.finished.event.usage).toEqual([
      {
        provider: 'openai',
        model: 'fake-model',
        inputTokens: 21,
        outputTokens: 9,
        totalTokens: 30,
        reasoningTokens: 4,
        cachedInputTokens: 0,
      },
    ]);
  });

  it("passes an AG-UI agent's usage on, naming the agent where it names no provider", async () => {
    const g = await start({
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
      agents: { researcher: agUiAgent({ url: agentUrl }) },
    });
    const agent = new HttpAgent({ url: `${g.url}/agent/researcher/run`, threadId: 'agent-usage' });
    agent.addMessage({ id: 'u1', role: 'user', content: '[usage] hello' });
    let finished: any;
    await agent.runAgent({}, { onRunFinishedEvent: ({ event }) => void (finished = event) });
    expect(finished.usage).toEqual([
      { provider: 'anthropic', model: 'claude-x', inputTokens: 5, outputTokens: 3 },
      { provider: 'researcher', model: 'local-llm', totalTokens: 9 },
    ]);
  });
});
