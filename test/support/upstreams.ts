import { AnthropicAdapter } from '../../src/adapters/anthropic.js';
import { EmptyAdapter } from '../../src/adapters/empty.js';
import { GoogleAdapter } from '../../src/adapters/google.js';
import { LangChainAdapter } from '../../src/adapters/langchain.js';
import { ChatOpenAI } from '../clients/langchain-openai.js';
import { OpenAIAdapter } from '../../src/adapters/openai.js';
import { agUiAgent } from '../../src/ag-ui/agent.js';
import { langGraphAgent } from '../../src/agents/langgraph.js';
import type { ModelAdapter } from '../../src/adapters/adapter.js';
import type { GatewayOptions } from '../../src/gateway.js';
import { FakeAgUiAgent } from './fake-ag-ui-agent.js';
import { FakeAnthropic } from './fake-anthropic.js';
import { FakeGemini } from './fake-gemini.js';
import { FakeCopilotKitEndpoint } from './fake-copilotkit-endpoint.js';
import { FakeLangGraph } from './fake-langgraph.js';
import { FakeOpenAI } from './fake-openai.js';
import { runInput, startGateway, type RunningGateway } from './harness.js';

/**
 * An upstream the gateway streams from (the model, or an agent of some kind), started with its fake
 * on loopback and a gateway in front of it. Every fake answers the same directives in the last user
 * message, each in its own wire format, so the behaviour suite can ask the same of all of them:
 *   [tokens=N]                  text "tok0 tok1 … tok{N-1} ", one token per chunk
 *   [tool=NAME] [toolargs=J]    a call of NAME with the JSON arguments J, in chunks
 *   [fail=STATUS]               an HTTP error before any answer
 *   [stall]                     one token, then nothing until the gateway goes away
 * and, agents only:
 *   [state]                     a state snapshot {"step":1} then {"step":2}
 *   [interrupt]                 an interrupt asking "approve?"
 *   [agent-error]               an error reported by the agent in its stream
 */
export interface UpstreamKind {
  name: string;
  agent: boolean;
  start(options?: GatewayOptions): Promise<UpstreamEnvironment>;
}

export interface UpstreamEnvironment {
  gateway: RunningGateway;
  /** The agent's name, for agents. */
  agentName?: string;
  /** A GenerateCopilotResponseInput for these messages, aimed at the upstream (agentSession for agents). */
  input(messages: unknown[], extra?: Record<string, unknown>): Record<string, unknown>;
  /** Upstream requests whose client (the gateway) closed them before they were complete. */
  abortedRequests(): number;
  stop(): Promise<void>;
}

/** A model kind: its fake server, and the adapter that points at the fake's base URL. */
function modelKindOf(name: string, fake: () => AgentFake, adapter: (baseURL: string) => ModelAdapter): UpstreamKind {
  return {
    name,
    agent: false,
    async start(options = {}) {
      const server = fake();
      const baseURL = await server.start();
      const gateway = await startGateway({ adapter: adapter(baseURL), ...options });
      return {
        gateway,
        input: (messages, extra = {}) => runInput(messages, extra),
        abortedRequests: () => server.abortedRequests,
        stop: async () => {
          await gateway.close();
          await server.stop();
        },
      };
    },
  };
}

export const modelKind = modelKindOf(
  'the model (OpenAI-compatible)',
  () => new FakeOpenAI(),
  (baseURL) => new OpenAIAdapter({ baseURL, apiKey: 'test-key', maxRetries: 0 }),
);

export const openAIResponsesKind = modelKindOf(
  'the model (OpenAI Responses API)',
  () => new FakeOpenAI(),
  (baseURL) => new OpenAIAdapter({ baseURL, apiKey: 'test-key', maxRetries: 0, apiStyle: 'responses' }),
);

export const anthropicKind = modelKindOf(
  'the model (Anthropic Messages API)',
  () => new FakeAnthropic(),
  (baseURL) => new AnthropicAdapter({ baseURL, apiKey: 'test-key', maxRetries: 0 }),
);

export const googleKind = modelKindOf(
  'the model (Google Gemini API)',
  () => new FakeGemini(),
  (baseURL) => new GoogleAdapter({ baseURL, apiKey: 'test-key', maxRetries: 0 }),
);

/** A LangChain chat model (ChatOpenAI, LangChain's own OpenAI client) against the fake OpenAI server. */
export const langChainModelKind = modelKindOf(
  'the model (a LangChain chat model)',
  () => new FakeOpenAI(),
  (baseURL) =>
    new LangChainAdapter({
      model: new ChatOpenAI({
        model: 'fake-model',
        apiKey: 'test-key',
        configuration: { baseURL },
        maxRetries: 0,
        streaming: true,
      }),
      modelName: 'fake-model',
    }),
);

/** A fake upstream server a kind (model or agent) runs against. */
interface AgentFake {
  start(): Promise<string>;
  stop(): Promise<void>;
  abortedRequests: number;
}

const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 5 };

/** An agent kind: its fake, and the gateway options that point an agent named `agentName` at it. */
function agentKind(
  name: string,
  agentName: string,
  fake: () => AgentFake,
  configure: (url: string) => GatewayOptions,
): UpstreamKind {
  return {
    name,
    agent: true,
    async start(options = {}) {
      const server = fake();
      const url = await server.start();
      const gateway = await startGateway({ adapter: new EmptyAdapter(), ...configure(url), ...options });
      return {
        gateway,
        agentName,
        input: (messages, extra = {}) => runInput(messages, { agentSession: { agentName }, ...extra }),
        abortedRequests: () => server.abortedRequests,
        stop: async () => {
          await gateway.close();
          await server.stop();
        },
      };
    },
  };
}

/** An agent of a CopilotKit remote endpoint, in one of its two JSONL dialects. */
export const copilotKitKind = (dialect: 'crewai' | 'langgraph'): UpstreamKind =>
  agentKind(
    `a CopilotKit remote endpoint agent (${dialect} JSONL)`,
    dialect === 'crewai' ? 'crewAgent' : 'graphAgent',
    () => new FakeCopilotKitEndpoint(),
    (url) => ({
      remoteEndpoints: [{ url, retry: FAST_RETRY }],
    }),
  );

/** An agent that speaks AG-UI over HTTP (events encoded with @ag-ui/encoder). */
export const agUiKind = agentKind(
  'an AG-UI agent',
  'researcher',
  () => new FakeAgUiAgent(),
  (url) => ({
    agents: { researcher: agUiAgent({ url, description: 'Researches.', retry: FAST_RETRY }) },
  }),
);

/** A graph on LangGraph Platform, driven with @langchain/langgraph-sdk. */
export const langGraphKind = agentKind(
  'a LangGraph Platform graph',
  'chat',
  () => new FakeLangGraph(),
  (deploymentUrl) => ({
    agents: { chat: langGraphAgent({ deploymentUrl, graphId: 'chat', retry: FAST_RETRY }) },
  }),
);
