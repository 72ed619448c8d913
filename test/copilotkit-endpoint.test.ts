import { Writable } from 'node:stream';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { pino } from 'pino';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import { CopilotKitEndpoint } from '../src/agents/copilotkit-endpoint.js';
import { langGraphAgent } from '../src/agents/langgraph.js';
import { UpstreamClient } from '../src/upstream/client.js';
import { FakeCopilotKitEndpoint } from './support/fake-copilotkit-endpoint.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { eventually, gatewaysPerTest, runInput, userMessage, type RunningGateway } from './support/harness.js';
import { TRANSPORTS, textOf, type Outcome } from './support/transports.js';

// CopilotKit remote endpoints (CopilotKit's Python SDK): discovery, both JSONL dialects, remote
// actions, agent state, interrupts, retries, and endpoints that are down.

const endpoint = new FakeCopilotKitEndpoint();
const model = new FakeOpenAI();
let endpointUrl: string;
let modelUrl: string;
const { start } = gatewaysPerTest();
const stock = TRANSPORTS.find((transport) => transport.name === 'multipart')!;
const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 5 };

beforeAll(async () => {
  endpointUrl = await endpoint.start();
  modelUrl = await model.start();
});

afterAll(async () => {
  await endpoint.stop();
  await model.stop();
});

function gateway(options: Parameters<typeof start>[0] = {}) {
  return start({
    adapter: new OpenAIAdapter({ baseURL: modelUrl, apiKey: 'k', maxRetries: 0 }),
    remoteEndpoints: [{ url: endpointUrl, retry: FAST_RETRY }],
    ...options,
  });
}

const agentInput = (agentName: string, prompt: string, extra: Record<string, unknown> = {}) =>
  runInput([userMessage(prompt)], { agentSession: { agentName }, threadId: 'thread-1', ...extra });

const runAgent = (
  g: RunningGateway,
  agentName: string,
  prompt: string,
  extra: Record<string, unknown> = {},
  properties?: Record<string, unknown>,
) => stock.run(g, agentInput(agentName, prompt, extra), { properties });

async function graphql(g: RunningGateway, query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(g.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return response.json() as Promise<any>;
}

/** A logger whose lines a test can read. */
function capturingLogger() {
  const lines: any[] = [];
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  return { logger, lines };
}

describe('discovery', () => {
  it('lists the agents of the endpoint by name and description, never its URL', async () => {
    const g = await gateway();
    const body = await graphql(g, '{ availableAgents { agents { id name description } } }');
    expect(body.data.availableAgents.agents).toEqual([
      { id: 'crewAgent', name: 'crewAgent', description: 'A crew of agents.' },
      { id: 'graphAgent', name: 'graphAgent', description: 'A LangGraph agent.' },
    ]);
    expect(JSON.stringify(body)).not.toContain('127.0.0.1');
  });

  it('lists the agents of every kind together, configured ones first', async () => {
    const g = await gateway({
      agents: {
        researcher: agUiAgent({ url: 'http://127.0.0.1:9/agent', description: 'Researches.' }),
        planner: langGraphAgent({ deploymentUrl: 'http://127.0.0.1:9', graphId: 'planner', description: 'Plans.' }),
      },
    });
    const body = await graphql(g, '{ availableAgents { agents { name description } } }');
    expect(body.data.availableAgents.agents).toEqual([
      { name: 'researcher', description: 'Researches.' },
      { name: 'planner', description: 'Plans.' },
      { name: 'crewAgent', description: 'A crew of agents.' },
      { name: 'graphAgent', description: 'A LangGraph agent.' },
    ]);
  });

  it('asks /info once and serves later requests from the cache', async () => {
    const before = endpoint.calls('/info');
    const g = await gateway();
    for (let i = 0; i < 3; i++) await graphql(g, '{ availableAgents { agents { name } } }');
    expect(endpoint.calls('/info') - before).toBe(1);
    expect(endpoint.lastBody('/info')).toEqual({ properties: {} });
  });

  it('refreshes the discovery in the background once it is older than its TTL', async () => {
    const g = await gateway({ remoteEndpoints: [{ url: endpointUrl, retry: FAST_RETRY, discoveryTtlMs: 20 }] });
    const before = endpoint.calls('/info');
    await graphql(g, '{ availableAgents { agents { name } } }');
    await new Promise((resolve) => setTimeout(resolve, 40));
    await graphql(g, '{ availableAgents { agents { name } } }');
    await eventually(() => endpoint.calls('/info') - before >= 2, 'a second discovery');
  });

  it('keeps serving chat while an endpoint is dead, says why in the logs, and names the agent it cannot find', async () => {
    const closed = createTcpServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/copilotkit`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { logger, lines } = capturingLogger();
    const g = await gateway({
      logger,
      remoteEndpoints: [
        { url: deadUrl, retry: FAST_RETRY },
        { url: endpointUrl, retry: FAST_RETRY },
      ],
    });

    const chat = await stock.run(g, runInput([userMessage('[tokens=3]')]));
    expect(chat.status.code).toBe('Success');
    expect(textOf(chat)).toBe('tok0 tok1 tok2 ');

    const agents = await graphql(g, '{ availableAgents { agents { name } } }');
    expect(agents.data.availableAgents.agents.map((a: any) => a.name)).toEqual(['crewAgent', 'graphAgent']);

    const missing = await runAgent(g, 'ghostAgent', 'hi');
    expect(missing.errors?.[0]).toMatchObject({
      message:
        'Agent "ghostAgent" was not found. Available agents: "crewAgent", "graphAgent". 1 remote endpoint could not be reached, so its agents are not listed.',
      extensions: { code: 'AGENT_NOT_FOUND' },
    });
    expect(JSON.stringify(missing)).not.toContain(deadUrl);
    const failure = lines.find((line) => line.msg?.startsWith('remote endpoint discovery failed'));
    expect(failure).toMatchObject({ endpoint: 'remote endpoint 0', code: 'UPSTREAM_UNREACHABLE', url: deadUrl });
  });

  it('does not hold a chat up longer than discoveryWaitMs for an endpoint that does not answer', async () => {
    endpoint.plans.set('/info', ['hang']);
    const g = await gateway({ discoveryWaitMs: 50 });
    const chat = await stock.run(g, runInput([userMessage('[tokens=2]')]));
    expect(chat.status.code).toBe('Success');
    const agents = await graphql(g, '{ availableAgents { agents { name } } }');
    expect(agents.data.availableAgents.agents).toEqual([]);
    endpoint.plans.delete('/info');
  });

  // Every run asks whether the agents are ready: once the first discovery is over, the answer costs
  // no race and no timer.
  it('waits for the first discovery only: after it, readiness takes no timer', async () => {
    const upstream = new UpstreamClient();
    const source = new CopilotKitEndpoint(
      { url: endpointUrl, retry: FAST_RETRY },
      0,
      upstream,
      pino({ level: 'silent' }),
    );
    source.start();
    try {
      await source.ready(5_000);
      expect(source.agents().map((agent) => agent.name)).toContain('crewAgent');
      const timers = jest.spyOn(globalThis, 'setTimeout');
      try {
        await source.ready(5_000);
        await source.ready(5_000);
        expect(timers).not.toHaveBeenCalled();
      } finally {
        timers.mockRestore();
      }
    } finally {
      source.stop();
      await upstream.close();
    }
  });

  it('tries discovery again after it failed, and the agents appear', async () => {
    endpoint.plans.set('/info', [{ status: 503 }, { status: 503 }, { status: 503 }]);
    const g = await gateway({ remoteEndpoints: [{ url: endpointUrl, retry: FAST_RETRY, discoveryTtlMs: 20 }] });
    const first = await graphql(g, '{ availableAgents { agents { name } } }');
    expect(first.data.availableAgents.agents).toEqual([]);
    let names: string[] = [];
    await eventually(
      () => {
        void graphql(g, '{ availableAgents { agents { name } } }').then(
          (again) => (names = again.data.availableAgents.agents.map((a: any) => a.name)),
        );
        return names.length === 2;
      },
      'the agents to appear',
      500,
    );
  });
});

describe.each(['crewAgent', 'graphAgent'])('the %s dialect', (agentName) => {
  it('survives output split at every byte, inside lines and characters', async () => {
    const g = await gateway();
    const outcome = await runAgent(g, agentName, '[split=1] [say=Grüße aus 東京 👋 und mehr]');
    expect(outcome.status.code).toBe('Success');
    expect(textOf(outcome)).toBe('Grüße aus 東京 👋 und mehr');
  });

  it('accepts CRLF and blank lines, and reads a last line without a newline', async () => {
    const g = await gateway();
    const outcome = await runAgent(g, agentName, '[crlf] [no-final-newline] [state]');
    expect(outcome.status.code).toBe('Success');
    const states = outcome.messages.filter((m) => m.type === 'state').map((m: any) => m.state);
    // The last line is the {"step":2} snapshot, with no newline after it.
    expect(states).toEqual([{ step: 1 }, { step: 2 }]);
  });

  it('fails the run on a line that is not JSON, naming the agent and the line', async () => {
    const g = await gateway();
    const outcome = await runAgent(g, agentName, '[malformed]');
    // The bad line follows the first token: a start and a content line (crewai) or one chunk (langgraph).
    const line = agentName === 'crewAgent' ? 3 : 2;
    expect(outcome.status).toMatchObject({
      code: 'Failed',
      details: {
        code: 'UPSTREAM_BAD_RESPONSE',
        description: `Agent "${agentName}" sent line ${line}, which is not JSON.`,
      },
    });
    expect(outcome.status.details.originalError.details).toMatchObject({ agentName, line });
    expect(textOf(outcome)).toBe('tok0 ');
  });

  it('fails the run when the stream is cut, naming the agent', async () => {
    const g = await gateway();
    await graphql(g, '{ availableAgents { agents { name } } }');
    const before = endpoint.calls('/agents/execute');
    const outcome = await runAgent(g, agentName, '[cut]');
    expect(outcome.status).toMatchObject({
      code: 'Failed',
      reason: 'MESSAGE_STREAM_INTERRUPTED',
      details: { code: 'UPSTREAM_STREAM_INTERRUPTED' },
    });
    expect(outcome.status.details.description).toContain(`agent "${agentName}"`);
    // The answer had started: the agent is never called a second time.
    expect(endpoint.calls('/agents/execute') - before).toBe(1);
  });

  it('fails the run with AGENT_ERROR when the agent reports an error', async () => {
    const g = await gateway();
    const outcome = await runAgent(g, agentName, '[agent-error]');
    expect(outcome.status).toMatchObject({ code: 'Failed', details: { code: 'AGENT_ERROR' } });
    expect(outcome.status.details.description).toMatch(
      new RegExp(`^Agent "${agentName}" reported an error: (AgentError: )?The agent broke down\\.$`),
    );
    expect(textOf(outcome)).toBe('Working on it. ');
  });
});

describe("the langgraph dialect's CopilotKit events", () => {
  it('shows a message and a tool call emitted by hand', async () => {
    const outcome = await runAgent(await gateway(), 'graphAgent', '[manual]');
    expect(outcome.messages).toEqual([
      expect.objectContaining({ type: 'text', id: 'manual-1', content: 'Emitted by hand.', status: 'Success' }),
      expect.objectContaining({ type: 'action', id: 'manual-call', name: 'showAlert', args: '{"message":"hand"}' }),
    ]);
  });

  it('keeps back output the graph marks copilotkit:emit-messages or emit-tool-calls false', async () => {
    const outcome = await runAgent(await gateway(), 'graphAgent', '[hidden]');
    expect(outcome.messages).toEqual([expect.objectContaining({ type: 'text', content: 'Visible answer.' })]);
  });

  it('passes a plain on_interrupt on as a LangGraphInterruptEvent', async () => {
    const outcome = await runAgent(await gateway(), 'graphAgent', '[plain-interrupt]');
    expect(outcome.metaEvents).toEqual([{ name: 'LangGraphInterruptEvent', value: 'plain approve?' }]);
  });
});

describe('what the endpoint is sent', () => {
  it("sends the reference runtime's body: conversation, state and config, tools without the agent, interrupt answers", async () => {
    const g = await gateway({ actions: [{ name: 'localLookup', description: 'Looks up.', handler: () => 'x' }] });
    await runAgent(g, 'crewAgent', 'hello', {
      frontend: {
        actions: [
          { name: 'showAlert', description: 'Alerts.', jsonSchema: '{"type":"object","properties":{}}' },
          // A frontend action named like the agent is never offered to the agent itself.
          { name: 'crewAgent', description: 'Same name.', jsonSchema: '{"type":"object","properties":{}}' },
        ],
        url: 'http://localhost:3000/',
      },
      agentStates: [
        { agentName: 'crewAgent', state: '{"count":1}', config: '{"configurable":{"model":"x"}}' },
        { agentName: 'other', state: '{"no":1}' },
      ],
      agentSession: { agentName: 'crewAgent', nodeName: 'review' },
    });
    const body = endpoint.lastBody('/agents/execute');
    expect(body).toMatchObject({
      name: 'crewAgent',
      threadId: 'thread-1',
      nodeName: 'review',
      state: { count: 1 },
      config: { configurable: { model: 'x' } },
      properties: {},
      metaEvents: [],
    });
    expect(body.messages).toEqual([expect.objectContaining({ type: 'TextMessage', role: 'user', content: 'hello' })]);
    expect(body.actions.map((a: any) => a.name).sort()).toEqual([
      'localLookup',
      'remoteAdd',
      'remoteBool',
      'remoteFail',
      'remoteNull',
      'remoteObject',
      'remoteText',
      'showAlert',
    ]);
    expect(body.actions.find((a: any) => a.name === 'remoteAdd').parameters).toEqual({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    });
  });

  it("keeps a client's authorization to itself unless the endpoint opts in, and lets server headers win", async () => {
    const hooks: any[] = [];
    const closed = await gateway();
    await runAgent(closed, 'crewAgent', 'hi', {}, { authorization: 'user-token', tenant: 'acme' });
    let request = endpoint.requests.filter((r) => r.path === '/agents/execute').at(-1)!;
    expect(request.headers.authorization).toBeUndefined();
    expect(request.body.properties).toEqual({ tenant: 'acme' });

    const open = await gateway({
      remoteEndpoints: [
        {
          url: endpointUrl,
          forwardAuthorization: true,
          headers: { 'x-api-key': 'server-key' },
          onBeforeRequest: (context) => {
            hooks.push(context);
            return { headers: { 'x-tenant': String(context.properties.tenant), 'x-api-key': 'hook-key' } };
          },
        },
      ],
    });
    await runAgent(open, 'crewAgent', 'hi', {}, { authorization: 'user-token', tenant: 'acme' });
    request = endpoint.requests.filter((r) => r.path === '/agents/execute').at(-1)!;
    expect(request.headers).toMatchObject({
      authorization: 'Bearer user-token',
      'x-api-key': 'hook-key',
      'x-tenant': 'acme',
    });
    expect(request.body.properties).toEqual({ authorization: 'user-token', tenant: 'acme' });
    expect(hooks.at(-1)).toMatchObject({ call: 'agents/execute', agentName: 'crewAgent', threadId: 'thread-1' });

    const serverWins = await gateway({
      remoteEndpoints: [
        { url: endpointUrl, forwardAuthorization: true, headers: { authorization: 'Bearer server-token' } },
      ],
    });
    await runAgent(serverWins, 'crewAgent', 'hi', {}, { authorization: 'user-token' });
    request = endpoint.requests.filter((r) => r.path === '/agents/execute').at(-1)!;
    expect(request.headers.authorization).toBe('Bearer server-token');
  });
});

describe('retries of /agents/execute', () => {
  const executeCalls = () => endpoint.calls('/agents/execute');

  it.each([
    ['503 twice', [{ status: 503 }, { status: 503 }], 3],
    ['429 with Retry-After', [{ status: 429, headers: { 'retry-after': '0' } }], 2],
    ['a connection reset before the answer', ['reset' as const], 2],
  ])('retries %s and then streams the answer', async (_what, plan, expectedCalls) => {
    const g = await gateway();
    await graphql(g, '{ availableAgents { agents { name } } }');
    const before = executeCalls();
    endpoint.plans.set('/agents/execute', [...plan] as any);
    const outcome = await runAgent(g, 'crewAgent', '[tokens=2]');
    expect(outcome.status.code).toBe('Success');
    expect(textOf(outcome)).toBe('tok0 tok1 ');
    expect(executeCalls() - before).toBe(expectedCalls);
  });

  it('gives up after the retries and fails the run with the upstream code', async () => {
    const g = await gateway({ remoteEndpoints: [{ url: endpointUrl, retry: { ...FAST_RETRY, maxRetries: 2 } }] });
    await graphql(g, '{ availableAgents { agents { name } } }');
    const before = executeCalls();
    endpoint.plans.set('/agents/execute', [{ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 }]);
    const outcome = await runAgent(g, 'crewAgent', 'hi');
    expect(executeCalls() - before).toBe(3);
    expect(outcome.status).toMatchObject({
      code: 'Failed',
      details: { code: 'UPSTREAM_UNAVAILABLE', description: 'Agent "crewAgent" failed (HTTP 503).' },
    });
    expect(outcome.status.details.originalError.details).toMatchObject({ agentName: 'crewAgent', upstreamStatus: 503 });
    endpoint.plans.delete('/agents/execute');
  });

  it('fails the run as unreachable, naming the agent, when every attempt is cut before an answer', async () => {
    const g = await gateway({ remoteEndpoints: [{ url: endpointUrl, retry: { ...FAST_RETRY, maxRetries: 2 } }] });
    await graphql(g, '{ availableAgents { agents { name } } }');
    const before = executeCalls();
    endpoint.plans.set('/agents/execute', ['reset', 'reset', 'reset']);
    const outcome = await runAgent(g, 'crewAgent', 'hi');
    expect(executeCalls() - before).toBe(3);
    expect(outcome.status.details).toMatchObject({
      code: 'UPSTREAM_UNREACHABLE',
      description: 'Agent "crewAgent" could not be reached (connection closed).',
    });
    expect(outcome.status.details.originalError.details).toEqual({ agentName: 'crewAgent' });
  });

  it('cuts off an agent that goes silent, and names it', async () => {
    const g = await gateway({ agentIdleTimeoutMs: 200 });
    const aborted = endpoint.abortedRequests;
    const outcome = await runAgent(g, 'crewAgent', '[stall]');
    expect(outcome.status.details).toMatchObject({
      code: 'UPSTREAM_TIMEOUT',
      description: 'Agent "crewAgent" sent nothing for 200 ms between events (agentIdleTimeoutMs) and was cut off.',
    });
    expect(outcome.status.details.originalError.details).toEqual({ agentName: 'crewAgent' });
    await eventually(() => endpoint.abortedRequests > aborted, "the silent agent's request to be closed");
  });

  it('does not retry a refusal such as 400, and passes on what the agent said', async () => {
    const g = await gateway();
    await graphql(g, '{ availableAgents { agents { name } } }');
    const before = executeCalls();
    const outcome = await runAgent(g, 'crewAgent', '[fail=422]');
    expect(executeCalls() - before).toBe(1);
    expect(outcome.status.details).toMatchObject({
      code: 'UPSTREAM_REJECTED',
      description: 'Agent "crewAgent" rejected the request (HTTP 422): fake failure 422',
    });
  });
});

describe('remote actions', () => {
  const resultOf = (outcome: Outcome, name: string) =>
    (outcome.messages.find((m) => m.type === 'result' && m.actionName === name) as any)?.result;

  it.each([
    ['remoteAdd', '{"a":1,"b":2}', '3'],
    ['remoteObject', '{}', '{"ok":true,"tenant":"acme"}'],
    ['remoteNull', '{}', 'null'],
    ['remoteText', '{"text":"hi"}', 'text: hi'],
    ['remoteBool', '{}', 'true'],
  ])('executes %s for the model and turns any JSON result into the result string', async (name, args, expected) => {
    const g = await gateway();
    const outcome = await stock.run(g, runInput([userMessage(`[tool=${name}] [toolargs=${args}]`)]), {
      properties: { tenant: 'acme' },
    });
    expect(outcome.status.code).toBe('Success');
    expect(resultOf(outcome, name)).toBe(expected);
    expect(textOf(outcome)).toBe(`Tool result received: ${expected}`);
    expect(endpoint.lastBody('/actions/execute')).toMatchObject({
      name,
      arguments: JSON.parse(args),
      properties: { tenant: 'acme' },
    });
  });

  it("turns a failing remote action into an error result without the endpoint's internals", async () => {
    const g = await gateway();
    const outcome = await stock.run(g, runInput([userMessage('[tool=remoteFail]')]));
    expect(outcome.status.code).toBe('Success');
    expect(JSON.parse(resultOf(outcome, 'remoteFail'))).toEqual({
      error: { code: 'UPSTREAM_UNAVAILABLE', message: 'The remote endpoint of action "remoteFail" failed (HTTP 500).' },
      result: '',
    });
    expect(JSON.stringify(outcome)).not.toContain('Traceback');
  });
});

describe('agent runs', () => {
  it('executes a server-side action the agent calls, then lets the agent go on with its result', async () => {
    const g = await gateway({
      actions: [
        {
          name: 'lookupOrder',
          description: 'Looks up an order.',
          handler: ({ id }: { id: string }) => ({ id, status: 'shipped' }),
        },
      ],
    });
    const outcome = await runAgent(g, 'crewAgent', '[server-tool=lookupOrder] [toolargs={"id":"A1"}]');
    expect(outcome.status.code).toBe('Success');
    expect(outcome.messages.find((m) => m.type === 'result')).toMatchObject({
      actionName: 'lookupOrder',
      result: '{"id":"A1","status":"shipped"}',
    });
    expect(textOf(outcome)).toBe('Tool result received: {"id":"A1","status":"shipped"}');
    const second = endpoint.lastBody('/agents/execute');
    expect(second.messages.slice(-2)).toEqual([
      expect.objectContaining({ type: 'ActionExecutionMessage', name: 'lookupOrder', arguments: { id: 'A1' } }),
      expect.objectContaining({
        type: 'ResultMessage',
        actionName: 'lookupOrder',
        result: '{"id":"A1","status":"shipped"}',
      }),
    ]);
  });

  it('ends a call the agent left open before executing it', async () => {
    const g = await gateway({
      actions: [{ name: 'lookupOrder', description: 'Looks up an order.', handler: () => 'found' }],
    });
    const outcome = await runAgent(g, 'crewAgent', '[server-tool=lookupOrder] [open-call]');
    expect(outcome.status.code).toBe('Success');
    expect(outcome.messages.find((m) => m.type === 'action')).toMatchObject({ name: 'lookupOrder', status: 'Success' });
    expect(textOf(outcome)).toBe('Tool result received: found');
  });

  it('sends interrupt answers with the first call only, not with the calls that carry results', async () => {
    const g = await gateway({
      actions: [{ name: 'lookupOrder', description: 'Looks up an order.', handler: () => 'found' }],
    });
    const before = endpoint.calls('/agents/execute');
    await runAgent(g, 'crewAgent', '[server-tool=lookupOrder]', {
      metaEvents: [{ name: 'LangGraphInterruptEvent', value: 'approve?', response: 'yes' }],
    });
    const bodies = endpoint.requests
      .filter((r) => r.path === '/agents/execute')
      .slice(before)
      .map((r) => r.body);
    expect(bodies.map((body) => body.metaEvents)).toEqual([
      [{ name: 'LangGraphInterruptEvent', value: 'approve?', response: 'yes' }],
      [],
    ]);
  });

  it("passes on results of the agent's own tools", async () => {
    const g = await gateway();
    const outcome = await runAgent(g, 'crewAgent', '[own-tool]');
    expect(outcome.messages.filter((m) => m.type !== 'state')).toEqual([
      expect.objectContaining({ type: 'action', name: 'ownSearch', args: '{"q":"x"}' }),
      expect.objectContaining({ type: 'result', actionName: 'ownSearch', result: 'found it' }),
    ]);
  });

  it("streams an interrupt as a meta event and resumes the agent with the client's answer", async () => {
    const g = await gateway();
    const interrupted = await runAgent(g, 'graphAgent', '[interrupt]');
    expect(interrupted.status.code).toBe('Success');
    expect(interrupted.metaEvents).toEqual([
      {
        name: 'CopilotKitLangGraphInterruptEvent',
        value: 'approve?',
        messages: [{ type: 'TextMessageOutput', id: 'interrupt-msg', content: 'Please approve.' }],
      },
    ]);
    const resumed = await runAgent(g, 'graphAgent', '[interrupt]', {
      metaEvents: [{ name: 'LangGraphInterruptEvent', value: 'approve?', response: 'yes' }],
    });
    expect(textOf(resumed)).toBe('Resumed with: yes');
    expect(endpoint.lastBody('/agents/execute').metaEvents).toEqual([
      { name: 'LangGraphInterruptEvent', value: 'approve?', response: 'yes' },
    ]);
  });

  it('hands the run over to an agent the model calls by name', async () => {
    const g = await gateway();
    const outcome = await stock.run(g, runInput([userMessage('[tool=crewAgent]')]));
    expect(outcome.status.code).toBe('Success');
    expect(outcome.messages.find((m) => m.type === 'result')).toMatchObject({
      actionName: 'crewAgent',
      result: 'crewAgent agent started',
    });
    // The fake agent answers the last message it was given: the hand-over's result.
    expect(textOf(outcome)).toBe('Tool result received: crewAgent agent started');
    const tools = model.requests.at(-1).tools.map((t: any) => t.function.name);
    expect(tools).toEqual(expect.arrayContaining(['crewAgent', 'graphAgent', 'remoteAdd']));
    expect(endpoint.lastBody('/agents/execute').messages.slice(-2)).toEqual([
      expect.objectContaining({ type: 'ActionExecutionMessage', name: 'crewAgent' }),
      expect.objectContaining({ type: 'ResultMessage', result: 'crewAgent agent started' }),
    ]);
  });
});

describe('loadAgentState', () => {
  const LOAD =
    'query($data: LoadAgentStateInput!) { loadAgentState(data: $data) { threadId threadExists state messages } }';

  it('returns what the agent saved for a thread it knows, as JSON strings', async () => {
    endpoint.threads.set('thread-known', { state: { step: 3 }, messages: [{ id: 'm1', role: 'user', content: 'hi' }] });
    const g = await gateway();
    const body = await graphql(g, LOAD, { data: { threadId: 'thread-known', agentName: 'crewAgent' } });
    expect(body.data.loadAgentState).toEqual({
      threadId: 'thread-known',
      threadExists: true,
      state: '{"step":3}',
      messages: '[{"id":"m1","role":"user","content":"hi"}]',
    });
    expect(endpoint.lastBody('/agents/state')).toEqual({ properties: {}, threadId: 'thread-known', name: 'crewAgent' });
  });

  it('answers threadExists false with empty state for a thread the agent does not know', async () => {
    const g = await gateway();
    const body = await graphql(g, LOAD, { data: { threadId: 'thread-new', agentName: 'graphAgent' } });
    expect(body.data.loadAgentState).toEqual({
      threadId: 'thread-new',
      threadExists: false,
      state: '{}',
      messages: '[]',
    });
  });

  it('answers threadExists false when the endpoint does not know the thread (404)', async () => {
    const g = await gateway();
    const body = await graphql(g, LOAD, { data: { threadId: 'thread-404', agentName: 'crewAgent' } });
    expect(body.data.loadAgentState).toEqual({
      threadId: 'thread-404',
      threadExists: false,
      state: '{}',
      messages: '[]',
    });
  });

  it('says clearly when the agent does not exist', async () => {
    const g = await gateway();
    const body = await graphql(g, LOAD, { data: { threadId: 't', agentName: 'nobody' } });
    expect(body.errors[0]).toMatchObject({
      extensions: {
        code: 'AGENT_NOT_FOUND',
        details: { agentName: 'nobody', availableAgents: ['crewAgent', 'graphAgent'] },
      },
    });
  });
});
