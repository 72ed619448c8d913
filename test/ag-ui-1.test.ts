import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { HttpAgent } from '@ag-ui/client';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import type { ServerAction } from '../src/actions/server-action.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest } from './support/harness.js';

// What AG-UI 1.0 adds, as @ag-ui/client 1.0's own HttpAgent (which declares protocolVersion, checks every event
// against 1.0's schemas and its lifecycle rules, and reads the outcome) takes it from the gateway: reasoning, the
// calls a run leaves for the client (pendingToolCallIds), a stop's "cancelled" outcome.

const fake = new FakeOpenAI();
let baseURL: string;
beforeAll(async () => {
  baseURL = await fake.start();
});
afterAll(() => fake.stop());

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
