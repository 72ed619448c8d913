import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EventSchemas as Schemas1 } from '@ag-ui/core/schemas';
import { OpenAIAdapter } from '../src/adapters/openai.js';
import type { ServerAction } from '../src/actions/server-action.js';
import { agUiAgent } from '../src/ag-ui/agent.js';
import { EventSchemas as Schemas0059 } from './clients/ag-ui-core-0059.js';
import { FakeAgUiAgent } from './support/fake-ag-ui-agent.js';
import { FakeOpenAI } from './support/fake-openai.js';
import { gatewaysPerTest, type RunningGateway } from './support/harness.js';

// Every event of every AG-UI route (run, suggest, connect, connect resumed by Last-Event-ID, both endpoint forms,
// the inspector's /threads/:id/events), over runs that exercise every kind of event the gateway sends (text, tool
// calls, server-side results, reasoning, agent state and interrupts, a stop, a failure), checked against the schemas
// of the AG-UI generation the client declared: @ag-ui/core 1.0's for protocolVersion 1.0, 0.0.59's (what CopilotKit
// 1.74's pinned client checks) for a client that declares none.

const fake = new FakeOpenAI();
const agent = new FakeAgUiAgent();
let baseURL: string;
let agentUrl: string;
beforeAll(async () => {
  [baseURL, agentUrl] = await Promise.all([fake.start(), agent.start()]);
});
afterAll(() => Promise.all([fake.stop(), agent.stop()]));

const { start } = gatewaysPerTest();
const sayHello: ServerAction<{ name: string }> = {
  name: 'sayHello',
  description: 'Greets someone.',
  parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  handler: ({ name }) => `Hello, ${name}!`,
};
const showAlert = {
  name: 'showAlert',
  description: 'Shows an alert.',
  parameters: { type: 'object', properties: { message: { type: 'string' } } },
};

/** A body's SSE frames as [id, event]. */
function frames(text: string): [string | undefined, any][] {
  return text
    .split('\n\n')
    .filter((frame) => frame.includes('data: '))
    .map((frame) => [/^id: (.*)$/m.exec(frame)?.[1], JSON.parse(frame.slice(frame.indexOf('data: ') + 6))]);
}

const GENERATIONS = [
  { name: 'AG-UI 1.0', protocolVersion: '1.0.0', schemas: Schemas1 },
  { name: 'AG-UI 0.0.x', protocolVersion: undefined, schemas: Schemas0059 },
] as const;

const RUNS: [agentId: string, prompt: string][] = [
  ['default', 'hello'],
  ['default', '[think] [text-then-tool] [tools=showAlert,sayHello]'],
  ['default', '[fail=500]'],
  ['researcher', '[thinking] and [steps]'],
  ['researcher', '[thinking-0.0]'],
  ['researcher', '[usage] [delta]'],
  ['researcher', '[ag-ui-interrupt] [with-state]'],
  ['researcher', '[own-tool]'],
];

describe.each(GENERATIONS)('every AG-UI route, for a client of $name', ({ protocolVersion, schemas }) => {
  let g: RunningGateway;
  let checked = 0;
  const body = (threadId: string, runId: string, content: string) => ({
    threadId,
    runId,
    messages: content ? [{ id: `u-${runId}`, role: 'user', content }] : [],
    tools: [showAlert],
    context: [],
    state: {},
    forwardedProps: {},
    ...(protocolVersion ? { protocolVersion } : {}),
  });
  const post = async (path: string, payload: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${g.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(payload),
    });
    expect(response.status).toBe(200);
    return frames(await response.text());
  };
  const check = (got: [string | undefined, any][]) => {
    for (const [, event] of got) {
      const parsed = schemas.safeParse(event);
      if (!parsed.success) throw new Error(`${JSON.stringify(event)} is not valid: ${parsed.error.message}`);
      checked++;
    }
    return got;
  };

  it('runs, suggestions, connects and resumes send only events its schemas take', async () => {
    g = await start({
      adapter: new OpenAIAdapter({ baseURL, apiKey: 'k', model: 'fake-model', maxRetries: 0, streamUsage: true }),
      agents: { researcher: agUiAgent({ url: agentUrl }) },
      actions: [sayHello],
      threads: { listAnonymous: true },
    });
    const version = protocolVersion ?? 'old';
    for (const [index, [agentId, prompt]] of RUNS.entries()) {
      const threadId = `every-${version}-${index}`;
      const multi = check(await post(`/agent/${agentId}/run`, body(threadId, `r-${index}`, prompt)));
      expect(multi.at(-1)![1].type).toMatch(/^RUN_(FINISHED|ERROR)$/);
      // The single route, on a thread of its own.
      check(
        await post('', {
          method: 'agent/run',
          params: { agentId },
          body: body(`${threadId}-single`, `s-${index}`, prompt),
        }),
      );
      // A reload: the thread replayed; then resumed after each of its events in turn.
      const connect = check(await post(`/agent/${agentId}/connect`, body(threadId, `c-${index}`, '')));
      for (const [id] of connect) {
        if (id === undefined) continue;
        check(await post(`/agent/${agentId}/connect`, body(threadId, `c-${index}`, ''), { 'last-event-id': id }));
      }
      const inspected = await (await fetch(`${g.url}/threads/${threadId}/events`)).json();
      // The inspector is CopilotKit ≥1.50's, AG-UI 1.0.
      for (const event of inspected.events) Schemas1.parse(event);
    }
    check(await post('/agent/default/suggest', body('suggest', 'sg', 'what next?')));
    check(
      await post('', { method: 'agent/suggest', params: { agentId: 'default' }, body: body('sg2', 'sg2', 'more?') }),
    );

    // A stop while the run streams, and its connect.
    const stalled = post('/agent/default/run', body(`stop-${version}`, 'stop-1', '[stall]'));
    for (let i = 0; i < 200; i++) {
      const stop = await fetch(`${g.url}/agent/default/stop/stop-${version}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      if ((await stop.json()).stopped) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const stopped = check(await stalled);
    expect(stopped.at(-1)![1]).toMatchObject({ type: 'RUN_FINISHED' });
    check(await post('/agent/default/connect', body(`stop-${version}`, 'c-stop', '')));
    expect(checked).toBeGreaterThan(200);
  }, 60_000);
});
