import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import type { ServerAction } from '../src/actions/server-action.js';
import { RestRuntimeAgent, SingleRouteRuntimeAgent, eventLog } from './support/ag-ui-client.js';
import { FakeAgUiAgent } from './support/fake-ag-ui-agent.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, type RunningGateway } from './support/harness.js';
import { until } from './support/threads.js';

// The AG-UI runtime protocol (CopilotKit ≥1.50) served from the same engine and URL as GraphQL, driven
// by @ag-ui/client 0.0.59's HttpAgent, which checks every event it gets against AG-UI's schemas and
// lifecycle rules.

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
const sayHello: ServerAction<{ message: string }> = {
  name: 'sayHello',
  description: 'Greets someone.',
  parameters: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  handler: ({ message }) => `Hello, ${message}!`,
};

async function gateway(): Promise<RunningGateway> {
  return start({
    adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
    agents: { researcher: agUiAgent({ url: agentUrl, description: 'Researches things.' }) },
    actions: [sayHello],
  });
}

const userMessage = (content: string, id = `u-${Math.random().toString(36).slice(2)}`) => ({
  id,
  role: 'user' as const,
  content,
});
const showAlert = {
  name: 'showAlert',
  description: 'Shows an alert in the browser.',
  parameters: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
};

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

describe('/info', () => {
  it('lists the model as "default" and every agent, in both forms', async () => {
    const g = await gateway();
    const rest = await fetch(`${g.url}/info`);
    expect(rest.status).toBe(200);
    const info = await rest.json();
    expect(info).toMatchObject({
      mode: 'sse',
      agents: { default: { name: 'default' }, researcher: { name: 'researcher', description: 'Researches things.' } },
    });
    expect(info.singleRoute).toBeUndefined();
    const single = await post(g.url, { method: 'info' });
    expect(JSON.parse(single.text)).toMatchObject({
      agents: { default: {}, researcher: {} },
      singleRoute: { resourceOperations: false },
    });
    // The GraphQL endpoint is untouched.
    expect(JSON.parse((await post(g.url, { query: '{ hello }' })).text)).toEqual({ data: { hello: 'Hello World' } });
  });
});

describe.each([
  [
    'multi-route',
    (g: RunningGateway, agentId: string, threadId?: string) => new RestRuntimeAgent(g.url, agentId, { threadId }),
  ],
  [
    'single-route',
    (g: RunningGateway, agentId: string, threadId?: string) =>
      new SingleRouteRuntimeAgent(g.url, agentId, { threadId }),
  ],
] as const)('runs over the %s form', (_form, agentFor) => {
  it("streams the model's answer as AG-UI text events, one run from RUN_STARTED to RUN_FINISHED", async () => {
    const g = await gateway();
    const client = agentFor(g, 'default');
    client.messages.push(userMessage('[tokens=4]', 'm1'));
    const { events, subscriber } = eventLog();
    const result = await client.runAgent({}, subscriber);
    // Chunks the client has not read yet may be merged (the text is the same): one or more contents.
    const types = events.map((event) => event.type).join(' ');
    expect(types).toMatch(/^RUN_STARTED TEXT_MESSAGE_START( TEXT_MESSAGE_CONTENT)+ TEXT_MESSAGE_END RUN_FINISHED$/);
    expect(
      events
        .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
        .map((event) => event.delta)
        .join(''),
    ).toBe('tok0 tok1 tok2 tok3 ');
    expect(events[0]).toMatchObject({
      threadId: client.threadId,
      input: { messages: [{ id: 'm1', content: '[tokens=4]' }] },
    });
    expect(result.newMessages).toEqual([
      { id: expect.any(String), role: 'assistant', content: 'tok0 tok1 tok2 tok3 ' },
    ]);
  });

  it('offers frontend tools to the model, streams their calls without running them, and continues with the follow-up run', async () => {
    const g = await gateway();
    const client = agentFor(g, 'default');
    client.messages.push(userMessage('alert [tool=showAlert] [toolargs={"message":"hi there"}]'));
    const { events, subscriber } = eventLog();
    await client.runAgent({ tools: [showAlert] }, subscriber);
    expect(fake.requests.at(-1).tools.map((tool: any) => tool.function.name)).toContain('showAlert');
    expect(events.filter((event) => event.type.startsWith('TOOL_CALL')).map((event) => event.type)).toEqual([
      'TOOL_CALL_START',
      ...events.filter((e) => e.type === 'TOOL_CALL_ARGS').map(() => 'TOOL_CALL_ARGS'),
      'TOOL_CALL_END',
    ]);
    expect(events.some((event) => event.type === 'TOOL_CALL_RESULT')).toBe(false);
    const call = client.messages.at(-1) as any;
    expect(call).toMatchObject({
      role: 'assistant',
      toolCalls: [{ function: { name: 'showAlert', arguments: '{"message":"hi there"}' } }],
    });

    // What CopilotKit's client does next: the tool's result, then another run with the whole history.
    client.messages.push({ id: 'tool-1', role: 'tool', toolCallId: call.toolCalls[0].id, content: 'shown' } as any);
    const followUp = await client.runAgent({ tools: [showAlert] });
    expect(followUp.newMessages).toEqual([
      { id: expect.any(String), role: 'assistant', content: 'Tool result received: shown' },
    ]);
  });

  it('runs server-side actions in the run, streaming their results', async () => {
    const g = await gateway();
    const client = agentFor(g, 'default');
    client.messages.push(userMessage('greet [tool=sayHello] [toolargs={"message":"Bob"}]'));
    const { events, subscriber } = eventLog();
    await client.runAgent({}, subscriber);
    expect(events.find((event) => event.type === 'TOOL_CALL_RESULT')).toMatchObject({
      content: 'Hello, Bob!',
      role: 'tool',
    });
    expect(client.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Tool result received: Hello, Bob!' });
  });

  it('runs an agent by its id, with its state as STATE_SNAPSHOT events', async () => {
    const g = await gateway();
    const client = agentFor(g, 'researcher');
    client.messages.push(userMessage('[state]'));
    await client.runAgent({});
    expect(client.state).toEqual({ step: 2 });
    expect(client.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'State updated. ' });
  });

  it("reports an agent's interrupt in RUN_FINISHED's outcome, and hands the client's resume back to the agent", async () => {
    const g = await gateway();
    const client = agentFor(g, 'researcher');
    client.messages.push(userMessage('[ag-ui-interrupt]'));
    const { events, subscriber } = eventLog();
    await client.runAgent({}, subscriber);
    expect(events.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'interrupt', interrupts: [{ id: 'int-1', reason: 'approval', message: 'Approve the plan?' }] },
    });
    await client.runAgent({ resume: [{ interruptId: 'int-1', status: 'resolved', payload: 'yes' }] } as any);
    expect(client.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Resumed with: yes' });
    expect(agent.requests.at(-1)!.input.resume).toEqual([{ interruptId: 'int-1', status: 'resolved', payload: 'yes' }]);
  });

  it('ends a failed run with RUN_ERROR carrying a code', async () => {
    const g = await gateway();
    const client = agentFor(g, 'default');
    client.messages.push(userMessage('[fail=500]'));
    const errors: any[] = [];
    await client.runAgent({}, { onRunErrorEvent: ({ event }: any) => void errors.push(event) }).catch(() => {});
    expect(errors).toEqual([expect.objectContaining({ type: 'RUN_ERROR', code: 'UPSTREAM_UNAVAILABLE' })]);
  });

  it('replays a thread on connect (and an unknown thread is an empty stream)', async () => {
    const g = await gateway();
    const first = agentFor(g, 'default');
    first.messages.push(userMessage('[tokens=2] one', 'c1'));
    await first.runAgent({});
    first.messages.push(userMessage('[tokens=3] two', 'c2'));
    await first.runAgent({});

    // A reloaded page: same thread, no messages.
    const reloaded = agentFor(g, 'default', first.threadId);
    await reloaded.connectAgent({});
    expect(reloaded.messages.map((m: any) => [m.role, m.content])).toEqual([
      ['user', '[tokens=2] one'],
      ['assistant', 'tok0 tok1 '],
      ['user', '[tokens=3] two'],
      ['assistant', 'tok0 tok1 tok2 '],
    ]);
    const unknown = agentFor(g, 'default', 'never-seen');
    const { events, subscriber } = eventLog();
    await unknown.connectAgent({}, subscriber);
    expect(events).toEqual([]);
  });

  it('joins a run in flight on connect, and follows it to its end', async () => {
    const g = await gateway();
    const running = agentFor(g, 'default');
    running.messages.push(userMessage('[tokens=30] [delay=10]'));
    const done = running.runAgent({});
    await until(
      async () => running.messages.length,
      (n) => n > 1,
      'the run under way',
    );
    const joiner = agentFor(g, 'default', running.threadId);
    await Promise.all([done, joiner.connectAgent({})]);
    expect(joiner.messages.at(-1)).toEqual(running.messages.at(-1));
  });
});

describe('stop, errors and one run per thread', () => {
  it('stops a run on request: the model call is closed and the stream ends with RUN_FINISHED, in both forms', async () => {
    const g = await gateway();
    for (const form of ['rest', 'single'] as const) {
      const client = new RestRuntimeAgent(g.url, 'default');
      client.messages.push(userMessage('[tokens=500] [delay=20]'));
      const { events, subscriber } = eventLog();
      const aborted = fake.abortedRequests;
      const done = client.runAgent({}, subscriber);
      await until(
        async () => events.length,
        (n) => n > 2,
        'the run under way',
      );
      const answer =
        form === 'rest'
          ? await post(`${g.url}/agent/default/stop/${client.threadId}`, {})
          : await post(g.url, {
              method: 'agent/stop',
              params: { agentId: 'default', threadId: client.threadId },
              body: {},
            });
      expect(JSON.parse(answer.text)).toEqual({ stopped: true });
      await done;
      expect(events.at(-1).type).toBe('RUN_FINISHED');
      await until(
        async () => fake.abortedRequests,
        (n) => n > aborted,
        'the model request closed',
      );
      const again = await post(`${g.url}/agent/default/stop/${client.threadId}`, {});
      expect(JSON.parse(again.text)).toMatchObject({ stopped: false });
    }
  });

  it('answers JSON errors before the stream: unknown agent 404, bad body 400, busy thread 409, bad envelope 400', async () => {
    const g = await gateway();
    const input = {
      threadId: 't-errors',
      runId: 'r1',
      messages: [userMessage('[tokens=200] [delay=20]')],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    };
    const unknown = await post(`${g.url}/agent/nobody/run`, input);
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.text)).toMatchObject({ code: 'AGENT_NOT_FOUND' });
    const bad = await post(`${g.url}/agent/default/run`, { threadId: 't' });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text)).toMatchObject({ code: 'BAD_USER_INPUT' });
    expect((await post(g.url, { method: 'agent/run', params: {} })).status).toBe(400);
    // An envelope's ids are JSON strings, which may hold half of a surrogate pair: refused, as a body's are.
    const lone = await post(g.url, { method: 'agent/stop', params: { agentId: 'default', threadId: 't\ud800' } });
    expect([lone.status, JSON.parse(lone.text).message]).toEqual([400, "Missing or invalid parameter 'threadId'."]);
    const loneRun = await post(g.url, {
      method: 'agent/stop',
      params: { agentId: 'default', threadId: 't' },
      body: { runId: 'r\udc00' },
    });
    expect([loneRun.status, JSON.parse(loneRun.text).code]).toEqual([400, 'BAD_USER_INPUT']);
    const loneBody = await post(`${g.url}/agent/default/run`, { ...input, threadId: 't\ud800' });
    expect([loneBody.status, JSON.parse(loneBody.text).code]).toEqual([400, 'BAD_USER_INPUT']);
    // A control character in an id (found from outside: the Redis store joins ids with U+0000 in its stop notices,
    // and a thread "V\u0000RV" stopped another user's run RV of thread V): refused wherever an id is named.
    const nul = await post(`${g.url}/agent/default/run`, { ...input, threadId: 'V\u0000RV' });
    expect([nul.status, JSON.parse(nul.text).message]).toEqual([
      400,
      'The request body is not a RunAgentInput (a problem): threadId: must not hold control characters (U+0000 to ' +
        'U+001F, U+007F).',
    ]);
    const nulStop = await post(`${g.url}/agent/default/stop/V%00RV`, {});
    expect([nulStop.status, JSON.parse(nulStop.text).code]).toEqual([400, 'BAD_USER_INPUT']);
    const nulRead = await fetch(`${g.url}/threads/V%00RV`);
    expect([nulRead.status, ((await nulRead.json()) as { code: string }).code]).toEqual([400, 'BAD_USER_INPUT']);
    // Every problem of a body at once, not one per request.
    const several = await post(`${g.url}/agent/default/run`, { threadId: '', messages: 'none' });
    expect(several.status).toBe(400);
    expect(JSON.parse(several.text)).toMatchObject({
      error: 'BAD_USER_INPUT',
      code: 'BAD_USER_INPUT',
      message:
        'The request body is not a RunAgentInput (3 problems): runId: Invalid input: expected string, received ' +
        'undefined; messages: Invalid input: expected array, received string; threadId: must be 1 to 256 characters.',
    });
    // As CopilotKit's runtime answers it (400 invalid_request), with the table's code for a 400.
    const unsupported = await post(g.url, { method: 'agent/teleport' });
    expect(unsupported.status).toBe(400);
    expect(JSON.parse(unsupported.text)).toEqual({
      error: 'invalid_request',
      message: "Unsupported method 'agent/teleport'.",
      code: 'BAD_REQUEST',
    });
    expect((await fetch(`${g.url}/agent/default/run`)).status).toBe(405);

    const controller = new AbortController();
    const first = await fetch(`${g.url}/agent/default/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(input),
      signal: controller.signal,
    });
    expect(first.headers.get('content-type')).toBe('text/event-stream');
    const busy = await post(`${g.url}/agent/default/run`, { ...input, runId: 'r2' });
    expect(busy.status).toBe(409);
    expect(JSON.parse(busy.text)).toMatchObject({
      code: 'THREAD_BUSY',
      details: { threadId: 't-errors', runId: 'r1' },
    });
    controller.abort();
    await post(`${g.url}/agent/default/stop/t-errors`, {});
  });
});

describe('the HTTP rules AG-UI shares with GraphQL', () => {
  it('answers CORS preflights for allowed origins, and refuses a POST from a page elsewhere', async () => {
    const g = await start({ corsOrigins: ['https://app.example.com'] });
    const preflight = await fetch(`${g.url}/agent/default/run`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    const info = await fetch(`${g.url}/info`, { headers: { origin: 'https://app.example.com' } });
    expect(info.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    const forged = await fetch(`${g.url}/agent/default/stop/some-thread`, {
      method: 'POST',
      headers: { origin: 'https://evil.example.net' },
    });
    expect(forged.status).toBe(403);
    const wrongType = await fetch(`${g.url}/agent/default/stop/some-thread`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(wrongType.status).toBe(415);
  });

  it('lets a client (or a proxy) that asks for "Connection: close" have it on a streamed run', async () => {
    const g = await gateway();
    const body = JSON.stringify({
      threadId: 't-close',
      runId: 'r',
      messages: [userMessage('hi')],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    });
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const request = httpRequest(
        `${g.url}/agent/default/run`,
        { method: 'POST', headers: { 'content-type': 'application/json', connection: 'close' } },
        (response) => {
          response.resume();
          response.on('end', () => resolve(response.headers));
        },
      );
      request.on('error', reject);
      request.end(body);
    });
    expect(headers['content-type']).toBe('text/event-stream');
    expect(headers.connection).toBe('close');
  });
});

describe('AG-UI across instances on one Redis', () => {
  let redis: import('./support/redis.js').RedisServer;
  beforeAll(async () => {
    const { RedisServer } = await import('./support/redis.js');
    redis = await RedisServer.start();
  });
  afterAll(async () => {
    await redis.close();
  });

  it('connects through B to a run going on on A (replay, then live), and stops it through B', async () => {
    const options = {
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
      threads: { redisUrl: redis.url, keyPrefix: 'agui:', leaseMs: 1_000 },
    };
    const a = await start(options);
    const b = await start({
      ...options,
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
    });
    const first = new RestRuntimeAgent(a.url, 'default');
    first.messages.push(userMessage('[tokens=2] one', 'x1'));
    await first.runAgent({});

    first.messages.push(userMessage('[tokens=40] [delay=15] two', 'x2'));
    const running = first.runAgent({});
    await until(
      async () => first.messages.length,
      (n) => n > 3,
      'the second run under way on A',
    );
    const joiner = new SingleRouteRuntimeAgent(b.url, 'default', { threadId: first.threadId });
    await Promise.all([running, joiner.connectAgent({})]);
    expect(joiner.messages.map((m: any) => m.content)).toEqual(first.messages.map((m: any) => m.content));

    first.messages.push(userMessage('[tokens=500] [delay=20] three', 'x3'));
    const { events, subscriber } = eventLog();
    const long = first.runAgent({}, subscriber);
    await until(
      async () => events.length,
      (n) => n > 2,
      'the third run under way on A',
    );
    const answer = await post(`${b.url}/agent/default/stop/${first.threadId}`, {});
    expect(JSON.parse(answer.text)).toEqual({ stopped: true });
    await long;
    expect(events.at(-1).type).toBe('RUN_FINISHED');
  }, 30_000);

  it('a connect through B with the last id A sent gets exactly the events after it', async () => {
    const options = () => ({
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
      threads: { redisUrl: redis.url, keyPrefix: 'agui-resume:', leaseMs: 1_000 },
    });
    const a = await start(options());
    const b = await start(options());
    const live = runLive(a.url, 'resume-ab', 'resume-ab-1', '[tokens=40] [delay=10]');
    await until(
      async () => live.frames.filter((f) => f.event.type === 'TEXT_MESSAGE_CONTENT').length,
      (n) => n >= 5,
      'five tokens on A',
    );
    const cut = live.frames.length - 1;
    const resumed = framesOf((await connectRaw(b.url, 'resume-ab', live.frames[cut].id)).text);
    const original = await live.done;
    expect(resumed[0].event.type).not.toBe('RUN_STARTED');
    expect(joined(resumed)).toEqual(joined(original.slice(cut + 1)));
    expect(resumed.at(-1)).toEqual(original.at(-1));
    // Every id B sent names a later event of the same run than the one resumed after.
    const after = Number(live.frames[cut].id!.split(':')[1]);
    for (const frame of resumed) {
      expect(frame.id!.startsWith('resume-ab-1:')).toBe(true);
      expect(Number(frame.id!.split(':')[1])).toBeGreaterThan(after);
    }
  }, 30_000);
});

describe('the SSE on the wire', () => {
  it("is LF-framed `data:` frames, each a valid @ag-ui/core event, in AG-UI's order", async () => {
    const { EventSchemas } = await import('@ag-ui/core/schemas');
    const g = await gateway();
    const input = {
      threadId: 'wire',
      runId: 'wire-1',
      messages: [userMessage('greet [tool=sayHello] [toolargs={"message":"Ann"}]')],
      tools: [showAlert],
      context: [],
      state: {},
      forwardedProps: {},
    };
    const answer = await post(`${g.url}/agent/default/run`, input, { accept: 'text/event-stream' });
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('text/event-stream');
    expect(answer.text).not.toContain('\r');
    const frames = answer.text.split('\n\n').filter((frame) => frame !== '' && !frame.startsWith(':'));
    const events = frames.map((frame) => {
      // Each event: its SSE id (`<runId>:<sequence>`, for a reconnect's Last-Event-ID), then its data.
      expect(frame).toMatch(/^id: wire-1:\d+\ndata: [^\n]+$/);
      return EventSchemas.parse(JSON.parse(frame.slice(frame.indexOf('data: ') + 'data: '.length)));
    });
    expect(events[0]).toMatchObject({ type: 'RUN_STARTED', threadId: 'wire', runId: 'wire-1' });
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', threadId: 'wire', runId: 'wire-1' });
    expect(events.filter((event) => event.type === 'RUN_STARTED' || event.type === 'RUN_FINISHED')).toHaveLength(2);
    // Every start ended before the run's end.
    const open = new Set<string>();
    for (const event of events as any[]) {
      if (event.type === 'TEXT_MESSAGE_START') open.add(event.messageId);
      if (event.type === 'TEXT_MESSAGE_END') open.delete(event.messageId);
      if (event.type === 'TOOL_CALL_START') open.add(event.toolCallId);
      if (event.type === 'TOOL_CALL_END') open.delete(event.toolCallId);
    }
    expect(open.size).toBe(0);
    expect(events.map((event) => event.type)).toContain('TOOL_CALL_RESULT');
  });
});

describe('AG-UI details', () => {
  it('restores on connect what the thread had before its oldest kept run', async () => {
    const g = await start({
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0 }),
      threads: { maxRunsPerThread: 2 },
    });
    const client = new RestRuntimeAgent(g.url, 'default');
    for (const [i, n] of [
      [1, 1],
      [2, 2],
      [3, 3],
    ]) {
      client.messages.push(userMessage(`[tokens=${n}] turn ${i}`, `turn-${i}`));
      await client.runAgent({});
    }
    const reloaded = new RestRuntimeAgent(g.url, 'default', { threadId: client.threadId });
    await reloaded.connectAgent({});
    expect(reloaded.messages.map((m: any) => m.content)).toEqual(client.messages.map((m: any) => m.content));
    expect(reloaded.messages).toHaveLength(6);
  });

  it('hands a cancelled interrupt back to the agent as cancelled', async () => {
    const g = await gateway();
    const client = new RestRuntimeAgent(g.url, 'researcher');
    client.messages.push(userMessage('[ag-ui-interrupt]'));
    await client.runAgent({});
    await client.runAgent({ resume: [{ interruptId: 'int-1', status: 'cancelled' }] } as any);
    expect(agent.requests.at(-1)!.input.resume).toEqual([{ interruptId: 'int-1', status: 'cancelled' }]);
  });
});

// --- resuming by SSE id -------------------------------------------------------------------------------------------

interface Frame {
  id: string | undefined;
  event: any;
}

/** An AG-UI SSE body as frames: the id line (if any) and the parsed data; keep-alive comments left out. */
function framesOf(text: string): Frame[] {
  return text
    .split('\n\n')
    .filter((frame) => frame !== '' && !frame.startsWith(':'))
    .map((frame) => {
      const lines = frame.split('\n');
      const id = lines.find((line) => line.startsWith('id: '))?.slice('id: '.length);
      const data = lines.find((line) => line.startsWith('data: '))!.slice('data: '.length);
      return { id, event: JSON.parse(data) };
    });
}

/** Events with adjacent text chunks of one message joined, ids left out: what two streams must agree on. */
function joined(frames: Frame[]): any[] {
  const out: any[] = [];
  for (const { event } of frames) {
    const last = out.at(-1);
    if (
      event.type === 'TEXT_MESSAGE_CONTENT' &&
      last?.type === 'TEXT_MESSAGE_CONTENT' &&
      last.messageId === event.messageId
    ) {
      out[out.length - 1] = { ...last, delta: last.delta + event.delta };
    } else out.push(event);
  }
  return out;
}

async function connectRaw(url: string, threadId: string, lastEventId?: string) {
  const input = { threadId, runId: 'c', messages: [], tools: [], context: [], state: {}, forwardedProps: {} };
  return post(`${url}/agent/default/connect`, input, lastEventId === undefined ? {} : { 'last-event-id': lastEventId });
}

/** Posts a run and reads its SSE as it comes: `frames` grows; `done` is the whole body's frames. */
function runLive(url: string, threadId: string, runId: string, content: string, extra: Record<string, unknown> = {}) {
  const frames: Frame[] = [];
  const input = {
    threadId,
    runId,
    messages: [userMessage(content)],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
    ...extra,
  };
  const done = (async () => {
    const response = await fetch(`${url}/agent/default/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(input),
    });
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      const end = buffered.lastIndexOf('\n\n');
      if (end === -1) continue;
      frames.push(...framesOf(buffered.slice(0, end + 2)));
      buffered = buffered.slice(end + 2);
    }
    return frames;
  })();
  return { frames, done };
}

describe('resuming by SSE id (Last-Event-ID)', () => {
  it('says so in /info, in both forms', async () => {
    const g = await gateway();
    const info = await (await fetch(`${g.url}/info`)).json();
    expect(info.agents.default.capabilities).toEqual({ transport: { streaming: true, resumable: true } });
    expect(info.agents.researcher.capabilities.transport.resumable).toBe(true);
    const single = JSON.parse((await post(g.url, { method: 'info' })).text);
    expect(single.agents.default.capabilities.transport.resumable).toBe(true);
  });

  it('a connect with Last-Event-ID gets exactly the replay after that event, across runs', async () => {
    const g = await gateway();
    const client = new RestRuntimeAgent(g.url, 'default');
    client.messages.push(userMessage('[tokens=3] one'));
    await client.runAgent({});
    client.messages.push(userMessage('[tokens=4] two'));
    await client.runAgent({});

    const full = framesOf((await connectRaw(g.url, client.threadId)).text);
    expect(full.filter((f) => f.event.type === 'RUN_STARTED')).toHaveLength(2);
    // Every stored event carries `<runId>:<sequence>`, the sequence rising within a run.
    for (const frame of full) expect(frame.id).toMatch(/^[^:\n]+:\d+$/);
    for (const runId of new Set(full.map((f) => f.id!.split(':')[0]))) {
      const numbers = full.filter((f) => f.id!.split(':')[0] === runId).map((f) => Number(f.id!.split(':')[1]));
      expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
      expect(new Set(numbers).size).toBe(numbers.length);
    }

    // From every event on: the rest of the replay, byte for byte the same events with the same ids.
    for (let k = 0; k < full.length; k++) {
      const answer = await connectRaw(g.url, client.threadId, full[k].id);
      expect(answer.status).toBe(200);
      expect(framesOf(answer.text)).toEqual(full.slice(k + 1));
    }

    // An id of a run the thread does not keep: the whole thread, as without the header.
    expect(framesOf((await connectRaw(g.url, client.threadId, 'gone-run:3')).text)).toEqual(full);
    // Not an id this gateway makes: refused, naming the header.
    const bad = await connectRaw(g.url, client.threadId, 'no sequence here');
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Last-Event-ID');
  });

  it('keeps what the client already had of the resumed run: its interrupt still ends it', async () => {
    const g = await gateway();
    const client = new RestRuntimeAgent(g.url, 'researcher');
    // An agent with state: the gateway records its interrupt, then its last state, then the run's end.
    client.messages.push(userMessage('[ag-ui-interrupt] [with-state]'));
    await client.runAgent({});
    const full = framesOf((await connectRaw(g.url, client.threadId)).text);
    expect(full.at(-1)!.event.outcome).toMatchObject({ type: 'interrupt' });
    // The interrupt is an event with no AG-UI event of its own: a gap in the ids. Resumed after the frame past
    // that gap, the client has the interrupt already, and RUN_FINISHED must still carry it.
    const seq = (frame: Frame) => Number(frame.id!.split(':')[1]);
    const gap = full.findIndex((frame, i) => i > 0 && seq(frame) - seq(full[i - 1]) > 1);
    expect(gap).toBeGreaterThan(0);
    expect(gap).toBeLessThan(full.length - 1);
    const rest = framesOf((await connectRaw(g.url, client.threadId, full[gap].id)).text);
    expect(rest).toEqual(full.slice(gap + 1));
  });

  it('an id past the end of a run sends nothing more of it, and does not wait past the run', async () => {
    const g = await gateway();
    const live = runLive(g.url, 'past-end', 'past-end-1', '[tokens=20] [delay=10]');
    await until(
      async () => live.frames.length,
      (n) => n > 1,
      'the run under way',
    );
    const answer = await connectRaw(g.url, 'past-end', 'past-end-1:999999');
    await live.done;
    expect(answer.status).toBe(200);
    expect(framesOf(answer.text)).toEqual([]);
  });

  it('refuses a run id that is not well-formed text (it could not be written as an SSE id)', async () => {
    const g = await gateway();
    const input = {
      threadId: 'lone',
      runId: 'r-\ud800',
      messages: [],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    };
    const answer = await post(`${g.url}/agent/default/run`, input);
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('runId');
  });

  it('resumes a live run after the event a client last had, with ids that never repeat', async () => {
    const g = await gateway();
    const live = runLive(g.url, 'resume-live', 'resume-live-1', '[tokens=30] [delay=10]');
    await until(
      async () => live.frames.filter((f) => f.event.type === 'TEXT_MESSAGE_CONTENT').length,
      (n) => n >= 5,
      'five tokens of the live run',
    );
    const cut = live.frames.length - 1;
    const lastSeen = live.frames[cut].id!;
    const resumed = framesOf((await connectRaw(g.url, 'resume-live', lastSeen)).text);
    const original = await live.done;
    expect(resumed[0].event.type).not.toBe('RUN_STARTED');
    expect(joined(resumed)).toEqual(joined(original.slice(cut + 1)));
    expect(resumed.at(-1)!.id).toBe(original.at(-1)!.id);
    const ids = original.map((f) => f.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('suggestions (CopilotKit ≥1.50 asks what the user could say next)', () => {
  // What @copilotkit/core 1.74's suggestion engine sends: its SUGGEST_TOOL, forced by forwardedProps.toolChoice.
  const suggestTool = {
    name: 'copilotkitSuggest',
    description: 'Suggest what the user could say next',
    parameters: {
      type: 'object',
      properties: { suggestions: { type: 'array', items: { type: 'object' } } },
      required: ['suggestions'],
    },
  };
  const suggestion = (threadId: string) => ({
    threadId,
    runId: `${threadId}-run`,
    messages: [userMessage('[tool=copilotkitSuggest] [toolargs={"title":"Hi"}] Suggest what the user could say next.')],
    tools: [suggestTool],
    context: [],
    state: {},
    forwardedProps: { toolChoice: { type: 'function', function: { name: 'copilotkitSuggest' } } },
  });

  async function expectNoThread(g: RunningGateway, threadId: string) {
    const replay = await connectRaw(g.url, threadId);
    expect(replay.status).toBe(200);
    expect(framesOf(replay.text)).toEqual([]);
    // Nor a lock: a run on that thread id goes ahead at once, and is the thread's only run.
    const client = new RestRuntimeAgent(g.url, 'default', { threadId });
    client.messages.push(userMessage('[tokens=1] after'));
    await client.runAgent({});
    const runs = framesOf((await connectRaw(g.url, threadId)).text).filter((f) => f.event.type === 'RUN_STARTED');
    expect(runs).toHaveLength(1);
  }

  it('/info offers them', async () => {
    const g = await gateway();
    expect((await (await fetch(`${g.url}/info`)).json()).suggestions).toBe(true);
  });

  it('runs the model with the tool forced and streams its call, recording nothing (multi-route /suggest)', async () => {
    const g = await gateway();
    const answer = await post(`${g.url}/agent/default/suggest`, suggestion('sugg-rest'), {
      accept: 'text/event-stream',
    });
    expect(answer.status).toBe(200);
    const events = framesOf(answer.text).map((f) => f.event);
    expect(events[0].type).toBe('RUN_STARTED');
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'TOOL_CALL_START', toolCallName: 'copilotkitSuggest' }),
    );
    expect(events.at(-1).type).toBe('RUN_FINISHED');
    expect(fake.requests.at(-1).tool_choice).toEqual({ type: 'function', function: { name: 'copilotkitSuggest' } });
    await expectNoThread(g, 'sugg-rest');
  });

  it('records nothing when asked through the envelope, or as a plain run (the single-route fallback)', async () => {
    const g = await gateway();
    const enveloped = await post(g.url, {
      method: 'agent/suggest',
      params: { agentId: 'default' },
      body: suggestion('sugg-envelope'),
    });
    expect(framesOf(enveloped.text).at(-1)!.event.type).toBe('RUN_FINISHED');
    await expectNoThread(g, 'sugg-envelope');

    const plain = await post(g.url, {
      method: 'agent/run',
      params: { agentId: 'default' },
      body: suggestion('sugg-plain'),
    });
    expect(framesOf(plain.text).map((f) => f.event.type)).toContain('TOOL_CALL_START');
    await expectNoThread(g, 'sugg-plain');
  });

  it("runs on a thread of its own: an agent never sees the client's thread id, and the stream has no SSE ids", async () => {
    const g = await gateway();
    const owner = new RestRuntimeAgent(g.url, 'researcher', { threadId: 'someone-elses' });
    owner.messages.push(userMessage('research [state]'));
    await owner.runAgent({});
    const before = framesOf((await connectRaw(g.url, 'someone-elses')).text);
    const answer = await post(`${g.url}/agent/researcher/suggest`, suggestion('someone-elses'));
    expect(answer.status).toBe(200);
    expect(agent.lastInput.threadId).not.toBe('someone-elses');
    expect(agent.lastInput.threadId).toMatch(/^unrecorded-/);
    // The client still sees its own ids in the events, and none of them carries an SSE id.
    const frames = framesOf(answer.text);
    expect(frames[0].event).toMatchObject({ type: 'RUN_STARTED', threadId: 'someone-elses' });
    expect(frames.every((f) => f.id === undefined)).toBe(true);
    // The owner's thread is as it was.
    expect(framesOf((await connectRaw(g.url, 'someone-elses')).text)).toEqual(before);
  });

  it('a run that offers the tool without forcing it is an ordinary, recorded run', async () => {
    const g = await gateway();
    const input = { ...suggestion('sugg-not'), forwardedProps: {} };
    await post(`${g.url}/agent/default/run`, input);
    const replay = framesOf((await connectRaw(g.url, 'sugg-not')).text);
    expect(replay.filter((f) => f.event.type === 'RUN_STARTED')).toHaveLength(1);
  });
});

describe('AG-UI 1.0 clients (protocolVersion "1.0")', () => {
  it("a stopped run's RUN_FINISHED carries the cancelled outcome for them, and only for them", async () => {
    const { EventSchemas } = await import('@ag-ui/core/schemas');
    const g = await gateway();
    const stopped = async (threadId: string, extra: Record<string, unknown>) => {
      const live = runLive(g.url, threadId, `${threadId}-1`, '[tokens=500] [delay=10]', extra);
      await until(
        async () => live.frames.length,
        (n) => n > 2,
        'the run under way',
      );
      await post(`${g.url}/agent/default/stop/${threadId}`, {});
      return (await live.done).at(-1)!.event;
    };
    const modern = await stopped('cancel-10', { protocolVersion: '1.0' });
    expect(modern).toEqual({
      type: 'RUN_FINISHED',
      threadId: 'cancel-10',
      runId: 'cancel-10-1',
      outcome: { type: 'cancelled' },
    });
    expect(EventSchemas.parse(modern)).toMatchObject({ outcome: { type: 'cancelled' } });
    // A version before 1.0 declared gets none either.
    expect(await stopped('cancel-0059', { protocolVersion: '0.0.59' })).toEqual({
      type: 'RUN_FINISHED',
      threadId: 'cancel-0059',
      runId: 'cancel-0059-1',
    });
    // A 0.0.x client (no protocolVersion) gets RUN_FINISHED as before: its schema knows no `cancelled`.
    expect(await stopped('cancel-00', {})).toEqual({
      type: 'RUN_FINISHED',
      threadId: 'cancel-00',
      runId: 'cancel-00-1',
    });
  });
});
