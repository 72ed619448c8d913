import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import { FakeAgUiAgent } from './support/fake-ag-ui-agent.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, type RunningGateway } from './support/harness.js';
import { until } from './support/threads.js';

// CopilotKit ≥1.50's own client, unmodified: @copilotkit/core 1.74 (what @copilotkit/react-core 1.74's
// provider runs), against the gateway in both of its transports. It discovers the runtime only in a
// browser, so the test gives it the one thing it reads of one: `window.location`.

const fake = new FakeOpenAI();
const researcher = new FakeAgUiAgent();
let baseURL: string;
let agentUrl: string;
let CopilotKitCore: typeof import('@copilotkit/core').CopilotKitCore;

beforeAll(async () => {
  [baseURL, agentUrl] = await Promise.all([fake.start(), researcher.start()]);
  (globalThis as any).window ??= { location: { href: 'http://localhost:3000/', origin: 'http://localhost:3000' } };
  ({ CopilotKitCore } = await import('@copilotkit/core'));
});
afterAll(async () => {
  await Promise.all([fake.stop(), researcher.stop()]);
  delete (globalThis as any).window;
});

const { start } = gatewaysPerTest({});

async function gateway(): Promise<RunningGateway> {
  return start({
    adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
    agents: { researcher: agUiAgent({ url: agentUrl, description: 'Researches things.' }) },
  });
}

/** A connected client, as the React provider makes one. */
async function client(url: string, transport: 'auto' | 'rest' | 'single' = 'auto') {
  const core = new CopilotKitCore({ runtimeUrl: url, runtimeTransport: transport });
  await until(
    async () => core.runtimeConnectionStatus,
    (status) => status === 'connected' || status === 'error',
    'the runtime discovered',
  );
  expect(core.runtimeConnectionStatus).toBe('connected');
  return core;
}

const user = (content: string, id = `u-${Math.random().toString(36).slice(2)}`) => ({
  id,
  role: 'user' as const,
  content,
});

describe.each(['auto', 'single'] as const)('@copilotkit/core 1.74 with transport %s', (transport) => {
  it('discovers the agents and chats with the model', async () => {
    const g = await gateway();
    const core = await client(g.url, transport);
    expect(core.runtimeTransport).toBe(transport === 'auto' ? 'rest' : 'single');
    expect(Object.keys(core.agents).sort()).toEqual(['default', 'researcher']);
    const agent = core.getAgent('default')!;
    agent.addMessage(user('[tokens=3]'));
    const result = await core.runAgent({ agent });
    expect(result.newMessages).toEqual([{ id: expect.any(String), role: 'assistant', content: 'tok0 tok1 tok2 ' }]);
  });

  it('runs a frontend tool in the client and sends the follow-up run by itself', async () => {
    const g = await gateway();
    const core = await client(g.url, transport);
    const shown: string[] = [];
    core.addTool({
      name: 'showAlert',
      description: 'Shows an alert in the browser.',
      parameters: z.object({ message: z.string() }),
      handler: async ({ message }) => {
        shown.push(message);
        return 'shown';
      },
    });
    const agent = core.getAgent('default')!;
    agent.addMessage(user('alert [tool=showAlert] [toolargs={"message":"hi there"}]'));
    await core.runAgent({ agent });
    await until(
      async () => agent.messages.at(-1) as any,
      (last) =>
        last?.role === 'assistant' && typeof last.content === 'string' && last.content.startsWith('Tool result'),
      'the follow-up run',
    );
    expect(shown).toEqual(['hi there']);
    expect(agent.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect((agent.messages.at(-1) as any).content).toBe('Tool result received: shown');
  });

  it("follows an agent's state", async () => {
    const g = await gateway();
    const core = await client(g.url, transport);
    const agent = core.getAgent('researcher')!;
    agent.addMessage(user('[state]'));
    await core.runAgent({ agent });
    expect(agent.state).toEqual({ step: 2 });
  });

  it('reports a failed run through its error path', async () => {
    const g = await gateway();
    const core = await client(g.url, transport);
    const errors: unknown[] = [];
    const agent = core.getAgent('default')!;
    agent.subscribe({ onRunErrorEvent: ({ event }: any) => void errors.push(event) });
    agent.addMessage(user('[fail=500]'));
    await core.runAgent({ agent }).catch(() => {});
    expect(errors).toEqual([expect.objectContaining({ code: 'UPSTREAM_UNAVAILABLE' })]);
  });

  it('restores a thread after a reload, and joins a run in flight', async () => {
    const g = await gateway();
    const first = await client(g.url, transport);
    const agent = first.getAgent('default')!;
    agent.addMessage(user('[tokens=2] hello', 'r1'));
    await first.runAgent({ agent });

    const reloaded = await client(g.url, transport);
    const again = reloaded.getAgent('default')!;
    again.threadId = agent.threadId;
    await reloaded.connectAgent({ agent: again });
    expect(again.messages.map((m: any) => [m.role, m.content])).toEqual([
      ['user', '[tokens=2] hello'],
      ['assistant', 'tok0 tok1 '],
    ]);

    agent.addMessage(user('[tokens=30] [delay=10]', 'r2'));
    const running = first.runAgent({ agent });
    await until(
      async () => agent.messages.length,
      (n) => n > 3,
      'the second run under way',
    );
    const watcher = await client(g.url, transport);
    const joined = watcher.getAgent('default')!;
    joined.threadId = agent.threadId;
    await Promise.all([running, watcher.connectAgent({ agent: joined })]);
    expect(joined.messages.at(-1)).toEqual(agent.messages.at(-1));
  });

  it('stops a run: the stream ends and the model call is closed', async () => {
    const g = await gateway();
    const core = await client(g.url, transport);
    const agent = core.getAgent('default')!;
    agent.addMessage(user('[tokens=500] [delay=20]'));
    const aborted = fake.abortedRequests;
    const running = core.runAgent({ agent });
    await until(
      async () => agent.messages.length,
      (n) => n > 1,
      'the run under way',
    );
    core.stopAgent({ agent });
    await running.catch(() => {});
    await until(
      async () => fake.abortedRequests,
      (n) => n > aborted,
      'the model request closed',
    );
    expect(agent.isRunning).toBe(false);
  });
});
