import type { Logger } from 'pino';
import type { ContextEntry, ForwardedParameters, Message, MetaEventInput, ToolDefinition } from '../core/messages.js';
import type { RunWriter } from '../core/writer.js';
import type { Principal } from '../core/principal.js';

/** The kinds of agents the gateway reaches: its own, or one an AgentDefinition of yours names (for logs). */
export type AgentKind = 'copilotkit' | 'ag-ui' | 'langgraph' | (string & {});

/** One call of an agent: the conversation, the tools it may call, and its state. */
export interface AgentRequest {
  agentName: string;
  threadId: string;
  /** This call's run id (a continuation after server-side actions gets a new one). */
  runId: string;
  /** The node to continue from, when the client names one (agentSession.nodeName). */
  nodeName: string | null;
  messages: readonly Message[];
  /** Frontend actions plus the gateway's server-side and remote actions; never the agent itself. */
  tools: readonly ToolDefinition[];
  /** The agent's state and config from the request's agentStates (`{}` when absent). */
  state: Record<string, unknown>;
  config: Record<string, unknown>;
  /** Interrupt answers the client sends back, so the agent resumes. */
  metaEvents: readonly MetaEventInput[];
  context: readonly ContextEntry[];
  /** The request's `properties` argument. */
  properties: Record<string, unknown>;
  forwardedParameters: ForwardedParameters;
  /** Who asked for the run, when authentication is on (an agent client may pass it on). */
  principal?: Principal;
  logger: Logger;
}

/** What `loadAgentState` answers for one thread. */
export interface AgentThreadState {
  threadExists: boolean;
  state: Record<string, unknown>;
  /** The thread's messages in the agent's (CopilotKit's JSON) form. */
  messages: unknown[];
}

/**
 * A client for one kind of agent. `run` streams the agent's answer into `out` and resolves when
 * the agent has finished; it rejects with a GatewayError naming the agent when the agent fails,
 * and must stop promptly once `signal` aborts (the run stops waiting for it at once either way).
 */
export interface AgentClient {
  run(request: AgentRequest, out: RunWriter, signal: AbortSignal): Promise<void>;
  loadState(request: LoadStateRequest, signal: AbortSignal): Promise<AgentThreadState>;
}

export interface LoadStateRequest {
  agentName: string;
  threadId: string;
  properties: Record<string, unknown>;
  logger: Logger;
  /** Who asked, when authentication is on. */
  principal?: Principal;
}

/** An agent the gateway can run: what clients see of it, and the client that reaches it. */
export interface AgentEntry {
  name: string;
  description: string;
  kind: AgentKind;
  client: AgentClient;
}

/** Something that offers agents: a configured AG-UI or LangGraph agent, a CopilotKit remote endpoint. */
export interface AgentSource {
  /** The agents known now (a remote endpoint: from its cached discovery); never waits or throws. */
  agents(): readonly AgentEntry[];
  /**
   * Resolves when the source has answered its first discovery, or failed to, or `timeoutMs` has
   * passed, whichever is first. Static sources are always ready.
   */
  ready(timeoutMs: number): Promise<void>;
  /** Whether the source could not be asked (its discovery has never succeeded and failed last). */
  readonly unreachable: boolean;
}

/** A source of agents that never changes (agents configured by name). */
export class StaticAgentSource implements AgentSource {
  readonly unreachable = false;
  constructor(private readonly entries: readonly AgentEntry[]) {}
  agents(): readonly AgentEntry[] {
    return this.entries;
  }
  async ready(): Promise<void> {}
}
