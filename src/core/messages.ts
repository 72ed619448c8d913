import { UnreachableCaseError } from './errors.js';
import { textBytes } from './values.js';

export type Role = 'user' | 'assistant' | 'system' | 'tool' | 'developer';

/** The gateway's own model of a conversation message, independent of GraphQL and of any provider. */
export type Message =
  | { kind: 'text'; id: string; role: Role; content: string; parentMessageId?: string | null }
  | { kind: 'actionExecution'; id: string; name: string; arguments: string; parentMessageId?: string | null }
  | { kind: 'result'; id: string; actionExecutionId: string; actionName: string; result: string }
  | { kind: 'image'; id: string; role: Role; format: string; bytes: string; parentMessageId?: string | null }
  | {
      kind: 'agentState';
      id: string;
      threadId: string;
      agentName: string;
      nodeName: string;
      runId: string;
      active: boolean;
      running: boolean;
      role: Role;
      state: string;
    };

/** Bytes counted per message besides its texts: its object and short fields (ids, names, role). */
const MESSAGE_OVERHEAD = 160;

/**
 * About what a message keeps in memory (its text, as textBytes, plus its object), for budgets of what an answer still
 * has to write.
 */
function messageBytes(message: Message): number {
  switch (message.kind) {
    case 'text':
      return MESSAGE_OVERHEAD + textBytes(message.content);
    case 'actionExecution':
      return MESSAGE_OVERHEAD + textBytes(message.arguments);
    case 'result':
      return MESSAGE_OVERHEAD + textBytes(message.result);
    case 'image':
      return MESSAGE_OVERHEAD + textBytes(message.bytes);
    case 'agentState':
      return MESSAGE_OVERHEAD + textBytes(message.state);
    default:
      // Every kind of message has its case: a new one does not compile until it has.
      throw new UnreachableCaseError(message);
  }
}

/** What `messages` keep in memory, about (messageBytes). */
export function messagesBytes(messages: readonly Message[]): number {
  let bytes = 0;
  for (const message of messages) bytes += messageBytes(message);
  return bytes;
}

/** A tool the model or an agent may call: a frontend action, a server-side or remote action, or an agent. */
export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the parameters. */
  parameters: Record<string, unknown>;
}

/** Model parameters a client may set per request (GraphQL's ForwardedParametersInput). */
export interface ForwardedParameters {
  model?: string | null;
  maxTokens?: number | null;
  stop?: string[] | null;
  temperature?: number | null;
  toolChoice?: string | null;
  toolChoiceFunctionName?: string | null;
}

/** A meta event a client sends with a request: the answer to an agent's interrupt. */
export interface MetaEventInput {
  name: 'LangGraphInterruptEvent' | 'CopilotKitLangGraphInterruptEvent';
  value: string;
  response?: string | null;
  messages?: Message[];
}

/** A piece of readable context from the frontend. */
export interface ContextEntry {
  description: string;
  value: string;
}
