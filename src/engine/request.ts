import {
  messagesBytes,
  type ContextEntry,
  type ForwardedParameters,
  type Message,
  type MetaEventInput,
  type ToolDefinition,
} from '../core/messages.js';
import { approximateBytes } from '../core/values.js';
import type { GuardrailsRules } from './guardrails.js';
import type { Principal } from '../core/principal.js';

/** An agent's state and config as a request carries them (GenerateCopilotResponseInput.agentStates). */
export interface AgentStateInput {
  agentName: string;
  state: Record<string, unknown>;
  config: Record<string, unknown>;
}

/** What one run is asked to do, already checked and converted from the protocol that asked for it. */
export interface RunRequest {
  threadId: string;
  runId: string;
  messages: Message[];
  /** Frontend actions (already filtered: no disabled or remote-only ones). */
  frontendTools: ToolDefinition[];
  /** Readable context from the frontend. */
  context: ContextEntry[];
  forwardedParameters: ForwardedParameters;
  /** The request's `properties` argument, for actions and agents. */
  properties: Record<string, unknown>;
  /** Set when the client asks for an agent rather than the model. */
  agentSession: { agentName: string; nodeName: string | null } | null;
  agentStates: AgentStateInput[];
  /** Interrupt answers for the agent. */
  metaEvents: MetaEventInput[];
  /** The frontend's URL (`frontend.url`), for hooks. */
  url?: string;
  /** Who asked, when authentication is on (set by the launcher from the caller, never from input). */
  principal?: Principal;
  /** Copilot Cloud input guardrails (`cloud.guardrails.inputValidationRules`), when the request sets them. */
  guardrails?: GuardrailsRules;
  /**
   * A run that leaves nothing in the thread store: no thread, no lock, no history (a suggestion: CopilotKit
   * asks what the user could say next, and that run is no part of the conversation).
   */
  unrecorded?: boolean;
}

/** About what a run's input keeps in memory (for InputBudget): its messages, and the rest of what it was sent. */
export function requestBytes(request: RunRequest): number {
  return (
    messagesBytes(request.messages) +
    approximateBytes([
      request.frontendTools,
      request.context,
      request.forwardedParameters,
      request.properties,
      request.agentStates,
      request.metaEvents,
    ])
  );
}
