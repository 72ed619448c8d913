import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { RunnableLambda } from '@langchain/core/runnables';
import { ChatOpenAI } from './clients/langchain-openai.js';
import { LangChainAdapter, toLangChainMessages } from '../src/adapters/langchain.js';
import type { ServerAction } from '../src/actions/server-action.js';
import type { Message } from '../src/core/messages.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, userMessage } from './support/harness.js';
import { TRANSPORTS, textOf } from './support/transports.js';

// The LangChain adapter: a real LangChain chat model (ChatOpenAI, LangChain's own OpenAI client)
// against the fake OpenAI server, a plain Runnable, and a chain function, through the gateway.

const fake = new FakeOpenAI();
let baseURL: string;
beforeAll(async () => {
  baseURL = await fake.start();
});
afterAll(() => fake.stop());
const { start } = gatewaysPerTest();
const chatModel = () =>
  new ChatOpenAI({
    model: 'fake-model',
    apiKey: 'test-key',
    configuration: { baseURL },
    maxRetries: 0,
    streaming: true,
  });

describe('the conversation as LangChain messages', () => {
  it('keeps roles, puts calls on the AI message they belong to and results in tool messages', async () => {
    const messages: Message[] = [
      { kind: 'text', id: 's', role: 'system', content: 'Be brief.' },
      { kind: 'text', id: 'u1', role: 'user', content: 'weather?' },
      { kind: 'text', id: 'a1', role: 'assistant', content: 'Checking.' },
      { kind: 'actionExecution', id: 'c1', name: 'weather', arguments: '{"city":"Paris"}', parentMessageId: 'a1' },
      { kind: 'result', id: 'r1', actionExecutionId: 'c1', actionName: 'weather', result: 'sunny' },
      { kind: 'actionExecution', id: 'c2', name: 'weather', arguments: '{"city":"Rome"}', parentMessageId: 'a1' },
      { kind: 'result', id: 'r2', actionExecutionId: 'c2', actionName: 'weather', result: 'rain' },
    ];
    const converted = await toLangChainMessages(messages);
    expect(converted.map((m) => m.constructor.name)).toEqual([
      'SystemMessage',
      'HumanMessage',
      'AIMessage',
      'ToolMessage',
      'AIMessage',
      'ToolMessage',
    ]);
    expect(converted[0]).toBeInstanceOf(SystemMessage);
    expect(converted[1]).toBeInstanceOf(HumanMessage);
    expect((converted[2] as AIMessage).tool_calls).toEqual([
      { id: 'c1', name: 'weather', args: { city: 'Paris' }, type: 'tool_call' },
    ]);
    expect((converted[3] as ToolMessage).tool_call_id).toBe('c1');
    expect((converted[4] as AIMessage).tool_calls).toEqual([
      { id: 'c2', name: 'weather', args: { city: 'Rome' }, type: 'tool_call' },
    ]);
  });
});

describe('LangChainAdapter', () => {
  const greet: ServerAction<{ name: string }> = {
    name: 'greet',
    description: 'Greets someone.',
    parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    handler: ({ name }) => `Hello, ${name}!`,
  };

  for (const transport of TRANSPORTS) {
    it(`runs a chat model with bound tools, continuing after a server-side action (${transport.name})`, async () => {
      const gateway = await start({
        adapter: new LangChainAdapter({ model: chatModel(), modelName: 'fake-model' }),
        actions: [greet],
      });
      const before = fake.requests.length;
      const outcome = await transport.run(
        gateway,
        runInput([userMessage('[tool=greet] [toolargs={"name":"Ann"}]')], { forwardedParameters: { stop: ['END'] } }),
      );
      expect(outcome.status.code).toBe('Success');
      expect(textOf(outcome)).toBe('Tool result received: Hello, Ann!');
      expect(fake.requests[before]).toMatchObject({
        stop: ['END'],
        tools: [{ type: 'function', function: { name: 'greet' } }],
      });
      const second = fake.requests[before + 1].messages;
      expect(second[1]).toMatchObject({
        role: 'assistant',
        tool_calls: [{ type: 'function', function: { name: 'greet', arguments: '{"name":"Ann"}' } }],
      });
      expect(second[2]).toMatchObject({
        role: 'tool',
        content: 'Hello, Ann!',
        tool_call_id: second[1].tool_calls[0].id,
      });
    });
  }

  it('streams any Runnable that yields strings or message chunks, dropping reasoning blocks', async () => {
    const runnable = RunnableLambda.from(async function* (messages: unknown[]) {
      yield 'You said: ';
      yield new AIMessageChunk({
        content: [
          { type: 'reasoning', reasoning: 'hmm' } as never,
          { type: 'text', text: String((messages.at(-1) as HumanMessage).content) },
        ],
      });
    });
    const gateway = await start({ adapter: new LangChainAdapter({ runnable: runnable as never }) });
    const outcome = await TRANSPORTS[2].run(gateway, runInput([userMessage('hello')]));
    expect(outcome.status.code).toBe('Success');
    expect(textOf(outcome)).toBe('You said: hello');
  });

  it('takes a chain function that answers with one message, tool calls included', async () => {
    const seen: unknown[] = [];
    const gateway = await start({
      adapter: new LangChainAdapter({
        chain: async ({ messages, tools, forwardedParameters }) => {
          seen.push({
            count: messages.length,
            tools: tools.map((tool) => tool.function.name),
            temperature: forwardedParameters.temperature,
          });
          return new AIMessage({
            content: '',
            tool_calls: [{ id: 'call-1', name: 'showAlert', args: { message: 'hi' } }],
          });
        },
      }),
    });
    const outcome = await TRANSPORTS[0].run(
      gateway,
      runInput([userMessage('alert me')], {
        forwardedParameters: { temperature: 0.4 },
        frontend: {
          url: 'http://localhost:3000/',
          actions: [
            { name: 'showAlert', description: 'Alerts.', jsonSchema: '{"type":"object"}', available: 'enabled' },
          ],
        },
      }),
    );
    expect(outcome.status.code).toBe('Success');
    expect(outcome.messages).toEqual([
      expect.objectContaining({ type: 'action', name: 'showAlert', args: '{"message":"hi"}', status: 'Success' }),
    ]);
    expect(seen).toEqual([{ count: 1, tools: ['showAlert'], temperature: 0.4 }]);
  });

  it('refuses forwarded parameters a LangChain model has no per-request equivalent for, before any call', async () => {
    const gateway = await start({ adapter: new LangChainAdapter({ model: chatModel(), modelName: 'fake-model' }) });
    const before = fake.requests.length;
    const outcome = await TRANSPORTS[2].run(
      gateway,
      runInput([userMessage('hi')], { forwardedParameters: { temperature: 0.2 } }),
    );
    expect(outcome.errors?.[0]?.extensions).toMatchObject({
      code: 'NOT_SUPPORTED',
      details: { field: 'forwardedParameters.temperature' },
    });
    expect(outcome.errors?.[0]?.message).toContain('forwardedParameters.temperature is not supported');
    expect(fake.requests.length).toBe(before);
  });

  it('refuses for a Runnable the parameters it cannot pass on, stop included', async () => {
    const runnable = RunnableLambda.from(async () => 'ok');
    const gateway = await start({ adapter: new LangChainAdapter({ runnable: runnable as never }) });
    const outcome = await TRANSPORTS[2].run(
      gateway,
      runInput([userMessage('hi')], { forwardedParameters: { stop: ['END'] } }),
    );
    expect(outcome.errors?.[0]?.extensions).toMatchObject({
      code: 'NOT_SUPPORTED',
      details: { field: 'forwardedParameters.stop' },
    });
  });

  it('puts the system and developer messages in one leading system message, as every chat model takes it', async () => {
    const converted = await toLangChainMessages([
      { kind: 'text', id: 's', role: 'system', content: 'Be brief.' },
      { kind: 'text', id: 'u', role: 'user', content: 'hi' },
      { kind: 'text', id: 'd', role: 'developer', content: 'In French.' },
    ]);
    expect(converted.map((m) => [m.constructor.name, m.content])).toEqual([
      ['SystemMessage', 'Be brief.\n\nIn French.'],
      ['HumanMessage', 'hi'],
    ]);
  });

  it('refuses options it cannot use', () => {
    expect(() => new LangChainAdapter({} as never)).toThrow(/exactly one of model/);
    expect(() => new LangChainAdapter({ model: {} as never })).toThrow(/must be a LangChain chat model/);
  });
});
