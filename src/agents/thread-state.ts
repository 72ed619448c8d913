import { isObject } from '../core/values.js';
import type { Message } from '../core/messages.js';
import type { AgentThreadState } from './agent.js';
import { messagesToCopilotKitJson } from './copilotkit-messages.js';

/**
 * A thread's state as `loadAgentState` answers it, from what the thread store keeps: its transcript
 * and, when the store has the agent's state, that state (JSON). The messages take the form every agent
 * client answers with (CopilotKit's JSON, AgentThreadState's), so the answer is the same whichever kind
 * of agent owns the thread, and no agent is asked (or looked up) for it.
 */
export function storedThreadState(messages: readonly Message[], stateJson?: string): AgentThreadState {
  return {
    threadExists: true,
    state: stateJson === undefined ? {} : parseState(stateJson),
    messages: messagesToCopilotKitJson(messages),
  };
}

/** A stored state as an object: `{}` when it is not a JSON object. */
function parseState(json: string): Record<string, unknown> {
  try {
    const state = JSON.parse(json) as unknown;
    return isObject(state) ? state : {};
  } catch {
    return {};
  }
}
