import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EmptyAdapter } from '../src/adapters/empty.js';
import { LineEndings, agUiAgent } from '../src/ag-ui/agent.js';
import { FakeAgUiAgent } from './support/fake-ag-ui-agent.js';
import { eventually, gatewaysPerTest, runInput, userMessage, type RunningGateway } from './support/harness.js';
import { failOnProcessErrors } from './support/process-errors.js';
import { startedIds } from './support/threads.js';
import { TRANSPORTS, textOf } from './support/transports.js';

// An unhandled rejection or listener error anywhere in this file reaches Node's own process (jest's sandbox
// never sees it): checked after each test.
failOnProcessErrors();

// AG-UI agents: the RunAgentInput the gateway sends, and every kind of event it reads back.

const agent = new FakeAgUiAgent();
let agentUrl: string;
const { start } = gatewaysPerTest();
const stock = TRANSPORTS.find((transport) => transport.name === 'multipart')!;

beforeAll(async () => {
  agentUrl = await agent.start();
});

afterAll(async () => {
  await agent.stop();
});

function gateway(options: Parameters<typeof start>[0] = {}) {
  return start({
    adapter: new EmptyAdapter(),
    agents: {
      researcher: agUiAgent({
        url: agentUrl,
        description: 'Researches things.',
        retry: { baseDelayMs: 1, maxDelayMs: 5 },
      }),
    },
    ...options,
  });
}

const run = (
  g: RunningGateway,
  prompt: string,
  extra: Record<string, unknown> = {},
  properties?: Record<string, unknown>,
) =>
  stock.run(
    g,
    runInput([userMessage(prompt)], { agentSession: { agentName: 'researcher' }, threadId: 'thread-agui', ...extra }),
    { properties },
  );

describe('the RunAgentInput', () => {
  it("carries the conversation, tools, context, state and forwarded props in AG-UI's shapes", async () => {
    const g = await gateway({ actions: [{ name: 'lookup', description: 'Looks up.', handler: () => 'x' }] });
    const now = new Date().toISOString();
    const outcome = await stock.run(
      g,
      runInput(
        [
          { id: 'sys', createdAt: now, textMessage: { role: 'system', content: 'Be brief.' } },
          { id: 'u1', createdAt: now, textMessage: { role: 'user', content: 'Find it.' } },
          { id: 'a1', createdAt: now, textMessage: { role: 'assistant', content: 'Looking.' } },
          {
            id: 'c1',
            createdAt: now,
            actionExecutionMessage: { name: 'showAlert', arguments: '{"message":"hi"}', parentMessageId: 'a1' },
          },
          {
            id: 'result-c1',
            createdAt: now,
            resultMessage: { actionExecutionId: 'c1', actionName: 'showAlert', result: 'shown' },
          },
          { id: 'u2', createdAt: now, textMessage: { role: 'user', content: '[tokens=1]' } },
        ],
        {
          agentSession: { agentName: 'researcher', nodeName: 'plan' },
          threadId: 'thread-agui',
          runId: 'run-agui',
          frontend: {
            actions: [
              {
                name: 'showAlert',
                description: 'Alerts.',
                jsonSchema: '{"type":"object","properties":{"message":{"type":"string"}}}',
              },
            ],
            url: 'http://localhost:3000/',
          },
          context: [{ description: 'Page', value: 'Settings' }],
          agentStates: [{ agentName: 'researcher', state: '{"topic":"ai"}', config: '{"configurable":{"depth":2}}' }],
        },
      ),
      { properties: { tenant: 'acme', authorization: 'secret-user-token' } },
    );
    expect(outcome.status.code).toBe('Success');
    const input = agent.lastInput;
    expect(input).toMatchObject({
      threadId: 'thread-agui',
      runId: 'run-agui',
      state: { topic: 'ai' },
      context: [{ description: 'Page', value: 'Settings' }],
      forwardedProps: { tenant: 'acme', config: { configurable: { depth: 2 } }, nodeName: 'plan' },
    });
    expect(JSON.stringify(input)).not.toContain('secret-user-token');
    expect(input.messages).toEqual([
      { id: 'sys', role: 'system', content: 'Be brief.' },
      { id: 'u1', role: 'user', content: 'Find it.' },
      {
        id: 'a1',
        role: 'assistant',
        content: 'Looking.',
        toolCalls: [{ id: 'c1', type: 'function', function: { name: 'showAlert', arguments: '{"message":"hi"}' } }],
      },
      { id: 'result-c1', role: 'tool', toolCallId: 'c1', content: 'shown' },
      { id: 'u2', role: 'user', content: '[tokens=1]' },
    ]);
    expect(input.tools.map((tool) => tool.name)).toEqual(['showAlert', 'lookup']);
  });

  it('gives each run its own input, even at the same time', async () => {
    const g = await gateway();
    const runs = ['a', 'b', 'c'].map((topic) =>
      run(g, '[tokens=2]', {
        threadId: `thread-${topic}`,
        agentStates: [{ agentName: 'researcher', state: JSON.stringify({ topic }) }],
      }),
    );
    await Promise.all(runs);
    const seen = agent.requests
      .slice(-3)
      .map((request) => [request.input.threadId, (request.input.state as any).topic]);
    expect(seen.sort()).toEqual([
      ['thread-a', 'a'],
      ['thread-b', 'b'],
      ['thread-c', 'c'],
    ]);
  });
});

describe('AG-UI events', () => {
  it('reads TEXT_MESSAGE_CHUNK events as one text message', async () => {
    const outcome = await run(await gateway(), '[chunks] [say=Chunked hello there]');
    expect(outcome.messages).toEqual([
      expect.objectContaining({ type: 'text', content: 'Chunked hello there', status: 'Success' }),
    ]);
  });

  it('writes out messages of a MESSAGES_SNAPSHOT the client has not seen, once', async () => {
    const outcome = await run(await gateway(), '[snapshot]');
    expect(outcome.messages.filter((m) => m.type === 'text').map((m: any) => m.content)).toEqual([
      'Streamed. ',
      'Never streamed.',
    ]);
  });

  it("names a tool call's parent message as the run wrote it, when the agent used that message's id twice", async () => {
    // The run gives the second message a new id (an id names one message of a run): the call's parent is that one.
    const g = await gateway();
    const { texts, callParent } = await startedIds(
      g.wsUrl,
      runInput([userMessage('[reused-id]')], {
        agentSession: { agentName: 'researcher' },
        threadId: 'thread-reused-id',
      }),
    );
    expect(texts).toHaveLength(2);
    expect(texts[0]).toBe('agui-reused');
    expect(texts[1]).not.toBe('agui-reused');
    expect(callParent).toBe(texts[1]);
  });

  it('applies a state delta to the whole state it holds', async () => {
    const outcome = await run(await gateway(), '[delta]');
    const states = outcome.messages.filter((m) => m.type === 'state').map((m: any) => m.state);
    expect(states.slice(0, 2)).toEqual([
      { step: 1, topic: 'ai' },
      { step: 2, topic: 'ai', notes: ['a'] },
    ]);
  });

  it("names the node of a step in the agent's state", async () => {
    const outcome = await run(await gateway(), '[steps]');
    const states = outcome.messages.filter((m) => m.type === 'state') as any[];
    expect(states.find((m) => m.state.step === 1)).toMatchObject({ nodeName: 'planning', active: true });
  });

  it('reads SSE with CRLF line ends', async () => {
    const outcome = await run(await gateway(), '[crlf] [tokens=3]');
    expect(outcome.status.code).toBe('Success');
    expect(textOf(outcome)).toBe('tok0 tok1 tok2 ');
  });

  it('reads a tool result the agent reports for its own tool', async () => {
    const outcome = await run(await gateway(), '[own-tool]');
    expect(outcome.messages.filter((m) => m.type !== 'state')).toEqual([
      expect.objectContaining({ type: 'action', name: 'ownSearch', args: '{"q":"x"}' }),
      expect.objectContaining({ type: 'result', actionName: 'ownSearch', result: 'found it' }),
    ]);
  });

  it('shows the arguments of a PredictState tool as state while they stream', async () => {
    const outcome = await run(await gateway(), '[predict]');
    const drafts = outcome.messages.filter((m) => m.type === 'state').map((m: any) => m.state.draft);
    expect(drafts.at(-1)).toBe('Hello world');
    expect(drafts.length).toBeGreaterThan(1);
  });

  it('executes a server-side action the agent calls and runs the agent again with its result', async () => {
    const g = await gateway({
      actions: [
        { name: 'lookupOrder', description: 'Looks up.', handler: ({ id }: { id: string }) => `order ${id} shipped` },
      ],
    });
    const outcome = await run(g, '[server-tool=lookupOrder] [toolargs={"id":"A1"}]');
    expect(outcome.status.code).toBe('Success');
    expect(textOf(outcome)).toBe('Tool result received: order A1 shipped');
    expect(agent.lastInput.messages.at(-1)).toMatchObject({ role: 'tool', content: 'order A1 shipped' });
  });

  it('passes an interrupt outcome on, and sends the answer back as command.resume and a resume entry', async () => {
    const g = await gateway();
    const interrupted = await run(g, '[ag-ui-interrupt]');
    expect(interrupted.status.code).toBe('Success');
    expect(interrupted.metaEvents).toHaveLength(1);
    const value = interrupted.metaEvents[0].value;
    expect(JSON.parse(value)).toEqual({ id: 'int-1', reason: 'approval', message: 'Approve the plan?' });

    const resumed = await run(g, '[ag-ui-interrupt]', {
      metaEvents: [{ name: 'LangGraphInterruptEvent', value, response: '{"approved":true}' }],
    });
    expect(textOf(resumed)).toBe('Resumed with: {"approved":true}');
    expect(agent.lastInput.resume).toEqual([{ interruptId: 'int-1', status: 'resolved', payload: { approved: true } }]);
    expect(agent.lastInput.forwardedProps).toMatchObject({ command: { resume: '{"approved":true}' } });
  });

  it('passes reasoning on (the mutation leaves it out), drops RAW and unknown custom events, and goes on', async () => {
    const outcome = await run(await gateway(), '[thinking]');
    expect(outcome.status.code).toBe('Success');
    expect(outcome.messages.map((m) => m.type)).toEqual(['text']);
    expect(textOf(outcome)).toBe('After thinking.');
  });
});

describe('AG-UI failures', () => {
  it('fails a run whose stream ends without RUN_FINISHED', async () => {
    const outcome = await run(await gateway(), '[no-finish]');
    expect(outcome.status).toMatchObject({
      code: 'Failed',
      reason: 'MESSAGE_STREAM_INTERRUPTED',
      details: {
        code: 'UPSTREAM_STREAM_INTERRUPTED',
        description: 'The stream of agent "researcher" ended before RUN_FINISHED.',
      },
    });
    expect(textOf(outcome)).toBe('tok0 ');
  });

  it('fails a run whose connection is cut in the middle of an event, without an unhandled rejection', async () => {
    const outcome = await run(await gateway(), '[cut]');
    expect(outcome.status).toMatchObject({ code: 'Failed', details: { code: 'UPSTREAM_STREAM_INTERRUPTED' } });
    expect(outcome.status.details.description).toContain('agent "researcher"');
    await new Promise((resolve) => setTimeout(resolve, 30));
    // No unhandled rejection: failOnProcessErrors checks after each test.
  });

  it('fails a run on an event that does not follow the AG-UI schema, naming the agent, and closes the stream', async () => {
    const aborted = agent.abortedRequests;
    const outcome = await run(await gateway(), '[bad-event]');
    await eventually(() => agent.abortedRequests > aborted, 'the stream to be closed');
    expect(outcome.status.details.code).toBe('UPSTREAM_BAD_RESPONSE');
    expect(outcome.status.details.description).toMatch(
      /^Agent "researcher" sent a TEXT_MESSAGE_CONTENT event that does not follow the AG-UI schema \(delta: /,
    );
  });

  it("fails a run whose agent's state updates (each the whole state) come to over 64 MiB, and passes a smaller run's on", async () => {
    // Found from outside: 2,000 steps of a 1 MiB state (1.1 MB from the agent) ended the process out of memory.
    const failed = await run(await gateway(), '[state-steps=100]');
    expect(failed.status).toMatchObject({ code: 'Failed', details: { code: 'UPSTREAM_BAD_RESPONSE' } });
    expect(failed.status.details.description).toMatch(
      /^Agent "researcher" sent more state updates than one call of it carries: .* over 64 MiB\.$/,
    );
    const states = failed.messages.filter((m) => m.type === 'state');
    expect(states.length).toBeGreaterThan(10);
    expect(states.length).toBeLessThan(64);
    // Deltas that do not apply count too: each copies the whole state before it is found not to.
    const copied = await run(await gateway(), '[bad-deltas=100]');
    expect(copied.status).toMatchObject({ code: 'Failed', details: { code: 'UPSTREAM_BAD_RESPONSE' } });
    const passed = await run(await gateway(), '[state-steps=10]');
    expect(passed.status.code).toBe('Success');
    expect(passed.messages.filter((m) => m.type === 'state')).toHaveLength(12);
  }, 60_000);

  it("ends a run whose agent's state updates pass maxRunOutputMb, with its agent call", async () => {
    const failed = await run(await gateway({ maxRunOutputMb: 16 }), '[state-steps=100]');
    expect(failed.status).toMatchObject({ code: 'Failed', details: { code: 'LIMIT_EXCEEDED' } });
    expect(failed.status.details.description).toContain('maxRunOutputMb');
    expect(failed.messages.filter((m) => m.type === 'state').length).toBeLessThanOrEqual(16);
  }, 60_000);

  it('names the agent even when an onBeforeRequest hook throws, and masks what it threw', async () => {
    const g = await gateway({
      agents: {
        researcher: agUiAgent({
          url: agentUrl,
          onBeforeRequest: () => {
            throw new Error('vault password hunter2 rejected');
          },
        }),
      },
    });
    const outcome = await run(g, 'hi');
    expect(outcome.status.details).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', description: 'Unexpected error.' });
    expect(outcome.status.details.originalError.details).toEqual({ agentName: 'researcher' });
    expect(JSON.stringify(outcome)).not.toContain('hunter2');
  });

  it('retries a 503 before the stream starts, then gives up with the upstream code', async () => {
    const g = await gateway();
    const before = agent.requests.length;
    const failing = await run(g, '[fail=503]');
    expect(failing.status.details).toMatchObject({
      code: 'UPSTREAM_UNAVAILABLE',
      description: 'Agent "researcher" failed (HTTP 503).',
    });
    // The fake refuses every attempt: the first and three retries (the default policy).
    expect(agent.requests.length - before).toBe(4);
  });
});

describe('AG-UI framings, and events that never end', () => {
  it("reads an answer in AG-UI's protobuf framing", async () => {
    const outcome = await run(await gateway(), '[proto] [tokens=3]');
    expect(outcome.status.code).toBe('Success');
    expect(textOf(outcome)).toBe('tok0 tok1 tok2 ');
  });

  it("reads SSE, CRLF line ends included, under any content type but AG-UI's protobuf one", async () => {
    // @ag-ui/client picks its protobuf parser for AG-UI's media type only; a look-alike type is SSE to it.
    const outcome = await run(await gateway(), '[crlf] [tokens=2] [content-type=application/x-protobuf]');
    expect(outcome.status.code).toBe('Success');
    expect(textOf(outcome)).toBe('tok0 tok1 ');
  });

  it('ends a run whose SSE event never ends, closes the stream and goes on serving', async () => {
    const g = await gateway();
    const aborted = agent.abortedRequests;
    const outcome = await run(g, '[huge]');
    expect(outcome.status.details.code).toBe('UPSTREAM_BAD_RESPONSE');
    // @ag-ui/client's own cap (10 MB) comes before the gateway's (16 MiB, as for every upstream).
    expect(outcome.status.details.description).toMatch(
      /^Agent "researcher" sent (a stream the AG-UI client could not read \(SSE buffer size exceeded .*10 MB\)|an event longer than 16777216 characters)/,
    );
    await eventually(() => agent.abortedRequests > aborted, 'the stream to be closed');
    expect((await run(g, 'hello')).status.code).toBe('Success');
  }, 60_000);

  it('ends a run whose protobuf frame declares more than 10 MB, closes the stream and goes on serving', async () => {
    const g = await gateway();
    const aborted = agent.abortedRequests;
    const outcome = await run(g, '[proto] [huge]');
    expect(outcome.status.details.code).toBe('UPSTREAM_BAD_RESPONSE');
    expect(outcome.status.details.description).toMatch(
      /^Agent "researcher" sent a stream the AG-UI client could not read \(Protobuf message size exceeded .*10 MB\)/,
    );
    await eventually(() => agent.abortedRequests > aborted, 'the stream to be closed');
    expect((await run(g, 'hello')).status.code).toBe('Success');
  }, 60_000);
});

describe('line ends', () => {
  const normalize = (chunks: string[]) => {
    const lines = new LineEndings();
    const out = chunks.map((chunk) => Buffer.from(lines.normalize(Buffer.from(chunk))).toString());
    const rest = lines.end();
    return out.join('') + (rest ? Buffer.from(rest).toString() : '');
  };

  it('turns CRLF and lone CR into LF, also across chunks', () => {
    expect(normalize(['data: a\r\n\r\n', 'data: b\r', '\n\r', '\ndata: c\r\r'])).toBe(
      'data: a\n\ndata: b\n\ndata: c\n\n',
    );
    expect(normalize(['no line ends'])).toBe('no line ends');
  });
});

describe('headers', () => {
  it("sends configured and hook headers, and a client's authorization only when forwarding is on", async () => {
    const g = await gateway({
      agents: {
        researcher: agUiAgent({
          url: agentUrl,
          forwardAuthorization: true,
          headers: { 'x-team': 'blue' },
          onBeforeRequest: ({ agentName, threadId }) => ({ headers: { 'x-agent': `${agentName}:${threadId}` } }),
        }),
        other: agUiAgent({ url: agentUrl }),
      },
    });
    await run(g, '[tokens=1]', {}, { authorization: 'user-token' });
    expect(agent.requests.at(-1)!.headers).toMatchObject({
      authorization: 'Bearer user-token',
      'x-team': 'blue',
      'x-agent': 'researcher:thread-agui',
    });
    expect(agent.lastInput.forwardedProps).toMatchObject({ authorization: 'user-token' });
    await stock.run(g, runInput([userMessage('[tokens=1]')], { agentSession: { agentName: 'other' } }), {
      properties: { authorization: 'user-token' },
    });
    expect(agent.requests.at(-1)!.headers.authorization).toBeUndefined();
    expect(JSON.stringify(agent.lastInput)).not.toContain('user-token');
  });
});

describe('configuration', () => {
  it('lists configured agents with their descriptions', async () => {
    const g = await gateway();
    const response = await fetch(g.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ availableAgents { agents { id name description } } }' }),
    });
    expect((await response.json()).data.availableAgents.agents).toEqual([
      { id: 'researcher', name: 'researcher', description: 'Researches things.' },
    ]);
  });

  it('says what to fix in an agent definition', async () => {
    await expect(gateway({ agents: { researcher: agUiAgent({ url: 'ftp://x' }) } })).rejects.toThrow(
      'options.agents.researcher.url must be an http(s) URL',
    );
  });

  it('answers loadAgentState for an AG-UI agent with an unknown thread', async () => {
    const g = await gateway();
    const response = await fetch(g.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: '{ loadAgentState(data: { threadId: "t1", agentName: "researcher" }) { threadExists state messages } }',
      }),
    });
    expect((await response.json()).data.loadAgentState).toEqual({ threadExists: false, state: '{}', messages: '[]' });
  });
});
