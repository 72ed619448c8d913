import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually, userMessage } from './support/harness.js';
import { TRANSPORTS, textOf } from './support/transports.js';
import {
  agUiKind,
  anthropicKind,
  copilotKitKind,
  googleKind,
  langChainModelKind,
  langGraphKind,
  modelKind,
  openAIResponsesKind,
  type UpstreamEnvironment,
  type UpstreamKind,
} from './support/upstreams.js';

// The stream behaviours, written once and run over every transport (the stock client over
// multipart HTTP, urql over SSE, graphql-ws) for every kind of upstream.

const KINDS: UpstreamKind[] = [
  modelKind,
  openAIResponsesKind,
  anthropicKind,
  googleKind,
  langChainModelKind,
  copilotKitKind('crewai'),
  copilotKitKind('langgraph'),
  agUiKind,
  langGraphKind,
];

const SHOW_ALERT = {
  name: 'showAlert',
  description: 'Shows an alert in the page.',
  jsonSchema: JSON.stringify({ type: 'object', properties: { message: { type: 'string' } }, required: ['message'] }),
};

describe.each(KINDS)('$name', (kind) => {
  let env: UpstreamEnvironment;
  beforeAll(async () => {
    env = await kind.start({ modelIdleTimeoutMs: 5_000, agentIdleTimeoutMs: 5_000 });
  });
  afterAll(async () => {
    await env.stop();
  });

  describe.each(TRANSPORTS)('over $name', (transport) => {
    const run = (prompt: string, extra: Record<string, unknown> = {}, options = {}) =>
      transport.run(env.gateway, env.input([userMessage(prompt)], extra), options);

    it('streams text to the end, then a Success status', async () => {
      const outcome = await run('[tokens=6]');
      expect(outcome.status.code).toBe('Success');
      expect(textOf(outcome)).toBe('tok0 tok1 tok2 tok3 tok4 tok5 ');
      expect(outcome.messages.filter((m) => m.type === 'text').every((m) => m.status === 'Success')).toBe(true);
    });

    it('streams a frontend action call with its arguments and leaves it to the client', async () => {
      const outcome = await run('[tool=showAlert] [toolargs={"message":"hello there"}]', {
        frontend: { actions: [SHOW_ALERT], url: 'http://localhost:3000/' },
      });
      expect(outcome.status.code).toBe('Success');
      const calls = outcome.messages.filter((m) => m.type === 'action');
      expect(calls).toEqual([expect.objectContaining({ name: 'showAlert', status: 'Success' })]);
      expect(JSON.parse((calls[0] as { args: string }).args)).toEqual({ message: 'hello there' });
      expect(outcome.messages.some((m) => m.type === 'result')).toBe(false);
    });

    it('ends in a Failed status with a code when the upstream refuses', async () => {
      const outcome = await run('[fail=401]');
      expect(outcome.status).toMatchObject({ code: 'Failed', reason: 'UNKNOWN_ERROR' });
      expect(outcome.status.details.code).toBe('UPSTREAM_AUTHENTICATION_FAILED');
      expect(JSON.stringify(outcome.status)).not.toMatch(/127\.0\.0\.1|localhost:\d+/);
    });

    it('closes the upstream request itself when the client goes away', async () => {
      const before = env.abortedRequests();
      await run('[stall]', {}, { abortOnFirstText: true });
      // The fake sends nothing after its first token: only the gateway's abort can close it.
      await eventually(() => env.abortedRequests() > before, 'the upstream request to be closed');
      expect(env.abortedRequests()).toBe(before + 1);
    });

    // Declared for the agents alone: a model has no state, no interrupt and no agent error, so for a model these
    // are not tests to skip (45 of them once were, unexplained) but tests that do not exist.
    const agentOnly = (name: string, test: () => Promise<void>) => {
      if (kind.agent) it(name, test);
    };

    agentOnly("streams the agent's state, each snapshot whole", async () => {
      const outcome = await run('[state]');
      expect(outcome.status.code).toBe('Success');
      const states = outcome.messages.filter((m) => m.type === 'state');
      // Each kind may repeat a snapshot (on a step, at the end, with the thread's messages at the
      // end for LangGraph); the changes of the state itself are what they are.
      const changes = states
        .map(({ state: { messages: _messages, ...state } }: any) => JSON.stringify(state))
        .filter((state, i, all) => i === 0 || state !== all[i - 1]);
      expect(changes).toEqual(['{"step":1}', '{"step":2}']);
      expect(states.every((m: any) => m.agentName === env.agentName)).toBe(true);
      expect(textOf(outcome)).toBe('State updated. ');
    });

    agentOnly("streams an interrupt as a meta event, and resumes the agent with the client's answer", async () => {
      const outcome = await run('[interrupt]');
      expect(outcome.status.code).toBe('Success');
      expect(outcome.metaEvents).toHaveLength(1);
      expect(outcome.metaEvents[0].value).toBe('approve?');
      const resumed = await run('[interrupt]', {
        metaEvents: [{ name: 'LangGraphInterruptEvent', value: 'approve?', response: 'yes' }],
      });
      expect(resumed.status.code).toBe('Success');
      expect(textOf(resumed)).toBe('Resumed with: yes');
      expect(resumed.metaEvents).toEqual([]);
    });

    agentOnly('fails with AGENT_ERROR, naming the agent, when the agent reports an error', async () => {
      const outcome = await run('[agent-error]');
      expect(outcome.status).toMatchObject({ code: 'Failed', details: { code: 'AGENT_ERROR' } });
      expect(outcome.status.details.description).toContain(`Agent "${env.agentName}" reported an error`);
      expect(outcome.status.details.originalError.details.agentName).toBe(env.agentName);
    });
  });
});
