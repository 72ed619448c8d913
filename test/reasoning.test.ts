import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import { readEnvironment } from '../src/env.js';
import { createGateway } from '../src/gateway.js';
import { FakeAgUiAgent } from './support/fake-ag-ui-agent.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, runInput, silentLogger, userMessage, type RunningGateway } from './support/harness.js';
import { recordingOutput } from './support/model-output.js';
import { gql, watch } from './support/threads.js';

// The model's reasoning ("thinking"), from where models and agents show it (OpenAI-compatible servers'
// reasoning_content / reasoning, AG-UI agents' REASONING_* and 0.0.x agents' THINKING_*) to where clients can show
// it: AG-UI 1.0's REASONING_* events, the subscription's Reasoning*Event types. Never in the mutation's messages,
// never sent back to the model, never sent to a 0.0.x AG-UI client (its schemas refuse it).

const fake = new FakeOpenAI();
const agent = new FakeAgUiAgent();
let baseURL: string;
let agentUrl: string;

beforeAll(async () => {
  [baseURL, agentUrl] = await Promise.all([fake.start(), agent.start()]);
});
afterAll(async () => {
  await Promise.all([fake.stop(), agent.stop()]);
});

const { start } = gatewaysPerTest();
const adapter = () => new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 });
const gateway = () =>
  start({
    adapter: adapter(),
    agents: { researcher: agUiAgent({ url: agentUrl }) },
    threads: { listAnonymous: true },
  });

/** An AG-UI run's frames: each event with the SSE id it came with (if any). */
async function agRun(
  g: RunningGateway,
  agentId: string,
  threadId: string,
  text: string,
  protocolVersion?: string,
): Promise<{ id?: string; event: any }[]> {
  const response = await fetch(`${g.url}/agent/${agentId}/run`, {
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
      ...(protocolVersion ? { protocolVersion } : {}),
    }),
  });
  expect(response.status).toBe(200);
  return frames(await response.text());
}

function frames(sse: string): { id?: string; event: any }[] {
  return sse
    .split('\n\n')
    .filter((frame) => frame.includes('data: '))
    .map((frame) => {
      const id = /^id: (.*)$/m.exec(frame)?.[1];
      const data = frame.slice(frame.indexOf('data: ') + 'data: '.length);
      return { ...(id !== undefined ? { id } : {}), event: JSON.parse(data) };
    });
}

const types = (got: { event: any }[]) => got.map(({ event }) => event.type);
/** Names with runs of the same one made one (how many chunks a stream is cut into is not the point). */
const runs = (names: string[]) => names.filter((name, i) => name !== names[i - 1]);

describe('reasoning from an OpenAI-compatible server', () => {
  it.each([
    ['reasoning_content (DeepSeek, vLLM)', '[think]'],
    ['reasoning (OpenRouter, Ollama)', '[think-ollama]'],
  ])('reads %s as a reasoning message before the answer', async (_name, directive) => {
    const output = recordingOutput();
    await adapter().stream(
      {
        threadId: 't',
        runId: 'r',
        messages: [{ kind: 'text', id: 'u', role: 'user', content: `${directive} hi` }],
        tools: [],
        forwardedParameters: {},
        logger: silentLogger,
      },
      output,
      new AbortController().signal,
    );
    expect(output.log.slice(0, 4)).toEqual([
      'think undefined',
      'thought r1 Let me ',
      'thought r1 think.',
      'thinkend r1',
    ]);
    expect(output.log[4]).toMatch(/^start /);
  });
});

describe('reasoning from the Responses API', () => {
  it('shows a reasoning summary as reasoning, and never sends it back', async () => {
    const g = await start({
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0, apiStyle: 'responses' }),
    });
    const got = await agRun(g, 'default', 'responses-think', '[reasoning] hello', '1.0.0');
    expect(runs(types(got)).slice(1, 6)).toEqual([
      'REASONING_START',
      'REASONING_MESSAGE_START',
      'REASONING_MESSAGE_CONTENT',
      'REASONING_MESSAGE_END',
      'REASONING_END',
    ]);
    expect(got.find(({ event }) => event.type === 'REASONING_MESSAGE_CONTENT')?.event.delta).toBe('Thinking it over.');
    await agRun(g, 'default', 'responses-think', 'more', '1.0.0');
    expect(JSON.stringify(fake.requests.at(-1).input)).not.toContain('Thinking it over');
  });
});

describe('AG-UI clients', () => {
  it('get REASONING_* events when they speak AG-UI 1.0, each valid by its schemas, with SSE ids on whole events', async () => {
    const g = await gateway();
    const got = await agRun(g, 'default', 'think-1', '[think] hello', '1.0.0');
    expect(runs(types(got))).toEqual([
      'RUN_STARTED',
      'REASONING_START',
      'REASONING_MESSAGE_START',
      'REASONING_MESSAGE_CONTENT',
      'REASONING_MESSAGE_END',
      'REASONING_END',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    const { EventSchemas } = await import('@ag-ui/core/schemas');
    for (const { event } of got) EventSchemas.parse(event);
    const reasoning = got.filter(({ event }) => event.type.startsWith('REASONING_'));
    const messageId = reasoning[0].event.messageId;
    expect(reasoning.every(({ event }) => event.messageId === messageId)).toBe(true);
    expect(reasoning[1].event.role).toBe('reasoning');
    expect(reasoning.map(({ event }) => event.delta ?? '').join('')).toBe('Let me think.');
    // One engine event as two frames: the id only on the second, so a client that has the id has both.
    expect(reasoning[0].id).toBeUndefined();
    expect(reasoning[1].id).toMatch(/:1$/);
    const [end, spanEnd] = reasoning.slice(-2);
    expect([end.event.type, end.id]).toEqual(['REASONING_MESSAGE_END', undefined]);
    expect(spanEnd.event.type).toBe('REASONING_END');
    const contentIds = reasoning.filter(({ event }) => event.type === 'REASONING_MESSAGE_CONTENT').map(({ id }) => id);
    expect(spanEnd.id).toBe(`${contentIds[0]!.split(':')[0]}:${Number(contentIds.at(-1)!.split(':')[1]) + 1}`);

    // The model is never sent its reasoning back: the next turn's conversation has the answer only.
    await agRun(g, 'default', 'think-1', 'and then?', '1.0.0');
    const sent = JSON.stringify(fake.requests.at(-1).messages);
    expect(sent).toContain('Hello from the fake model.');
    expect(sent).not.toContain('think.');

    // A reload (connect) replays it, compacted; the web inspector's events have it; its messages do not.
    const connect = await fetch(`${g.url}/agent/default/connect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: 'think-1',
        runId: 'c',
        messages: [],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
        protocolVersion: '1.0.0',
      }),
    });
    const replayed = frames(await connect.text());
    const replayedContent = replayed.filter(({ event }) => event.type === 'REASONING_MESSAGE_CONTENT');
    expect(replayedContent.map(({ event }) => event.delta)).toEqual(['Let me think.']);
    for (const { event } of replayed) EventSchemas.parse(event);
    const inspected = await (await fetch(`${g.url}/threads/think-1/events`)).json();
    expect(inspected.events.map((event: any) => event.type)).toContain('REASONING_MESSAGE_CONTENT');
    const messages = await (await fetch(`${g.url}/threads/think-1/messages`)).json();
    expect(JSON.stringify(messages)).not.toContain('think.');
  });

  it('get the reasoning ended before RUN_ERROR when the model fails while it reasons', async () => {
    const g = await gateway();
    const got = await agRun(g, 'default', 'think-cut', '[think-cut] hello', '1.0.0');
    expect(runs(types(got))).toEqual([
      'RUN_STARTED',
      'REASONING_START',
      'REASONING_MESSAGE_START',
      'REASONING_MESSAGE_CONTENT',
      'REASONING_MESSAGE_END',
      'REASONING_END',
      'RUN_ERROR',
    ]);
    const { EventSchemas } = await import('@ag-ui/core/schemas');
    for (const { event } of got) EventSchemas.parse(event);
  });

  it('get none when they speak AG-UI 0.0.x (its schemas refuse them), and the run is the same otherwise', async () => {
    const g = await gateway();
    const got = await agRun(g, 'default', 'think-old', '[think] hello');
    expect(types(got).filter((type) => type.startsWith('REASONING'))).toEqual([]);
    expect(types(got)).toContain('TEXT_MESSAGE_CONTENT');
    expect(types(got).at(-1)).toBe('RUN_FINISHED');
  });

  it('all get it with agUiReasoning "always" (0.0.59, which CopilotKit 1.74 pins, takes it), and nothing else of 1.0', async () => {
    const g = await start({ adapter: adapter(), agUiReasoning: 'always' });
    const got = await agRun(g, 'default', 'think-always', '[think] hello');
    const { EventSchemas } = await import('./clients/ag-ui-core-0059.js');
    for (const { event } of got) EventSchemas.parse(event);
    expect(runs(types(got))).toContain('REASONING_MESSAGE_CONTENT');
    expect(got.some(({ event }) => event.outcome !== undefined || event.usage !== undefined)).toBe(false);
    expect(() => createGateway({ logger: silentLogger, agUiReasoning: 'sometimes' as never })).toThrow(
      /options.agUiReasoning must be "declared" or "always"/,
    );
    expect(readEnvironment({ AG_UI_REASONING: 'always' }).agUiReasoning).toBe('always');
    expect(() => readEnvironment({ AG_UI_REASONING: 'yes' })).toThrow(/AG_UI_REASONING must be declared or always/);
  });

  it("pass on an AG-UI agent's reasoning, and a 0.0.x agent's retired THINKING_* events as reasoning", async () => {
    const g = await gateway();
    const modern = await agRun(g, 'researcher', 'agent-think', '[thinking]', '1.0.0');
    const content = (got: { event: any }[]) =>
      got
        .filter(({ event }) => event.type === 'REASONING_MESSAGE_CONTENT')
        .map(({ event }) => event.delta)
        .join('');
    expect(content(modern)).toBe('hmm');
    const old = await agRun(g, 'researcher', 'agent-think-old', '[thinking-0.0]', '1.0.0');
    expect(content(old)).toBe('old style');
    expect(types(old).filter((type) => type.startsWith('REASONING'))).toEqual([
      'REASONING_START',
      'REASONING_MESSAGE_START',
      'REASONING_MESSAGE_CONTENT',
      'REASONING_MESSAGE_END',
      'REASONING_END',
    ]);
    expect(types(old)).toContain('TEXT_MESSAGE_CONTENT');
  });
});

describe('GraphQL', () => {
  it('streams reasoning on the subscription as typed events, and leaves it out of the mutation', async () => {
    const g = await gateway();
    const subscription = /* GraphQL */ `
      subscription Run($data: GenerateCopilotResponseInput!) {
        copilotRun(data: $data) {
          __typename
          ... on ReasoningStartEvent {
            messageId
            sequence
          }
          ... on ReasoningContentEvent {
            messageId
            content
          }
          ... on ReasoningEndEvent {
            messageId
          }
          ... on TextMessageContentEvent {
            content
          }
        }
      }
    `;
    const run = watch(g.wsUrl, subscription, {
      data: runInput([userMessage('[think] hi')], { threadId: 'gql-think' }),
    });
    await run.done;
    expect(run.errors).toEqual([]);
    const names = run.events.map((event) => event.__typename);
    expect(runs(names).slice(1, 5)).toEqual([
      'ReasoningStartEvent',
      'ReasoningContentEvent',
      'ReasoningEndEvent',
      'TextMessageStartEvent',
    ]);
    expect(run.events[1].sequence).toBe(1);
    expect(
      run.events
        .filter((event) => event.__typename === 'ReasoningContentEvent')
        .map((event) => event.content)
        .join(''),
    ).toBe('Let me think.');

    const answer = await gql(
      g.url,
      /* GraphQL */ `
        mutation ($data: GenerateCopilotResponseInput!) {
          generateCopilotResponse(data: $data) {
            messages {
              __typename
              ... on TextMessageOutput {
                content
              }
            }
          }
        }
      `,
      { data: runInput([userMessage('[think] hi')]) },
    );
    expect(answer.errors).toBeUndefined();
    const messages = answer.data.generateCopilotResponse.messages;
    expect(messages.map((message: any) => message.__typename)).toEqual(['TextMessageOutput']);
    expect([messages[0].content].flat().join('')).toBe('Hello from the fake model.');
  });
});
