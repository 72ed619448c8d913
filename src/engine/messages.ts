import { BadUserInputError } from '../errors.js';

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

/** A tool the model may call: a frontend action or a server-side action. */
export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the parameters. */
  parameters: Record<string, unknown>;
}

/** The shape of GraphQL's MessageInput (kept structural so this module does not depend on generated types). */
export interface MessageInputLike {
  id: string;
  createdAt?: unknown;
  textMessage?: { content: string; role: Role; parentMessageId?: string | null } | null;
  actionExecutionMessage?: { name: string; arguments: string; parentMessageId?: string | null } | null;
  resultMessage?: { actionExecutionId: string; actionName: string; result: string } | null;
  agentStateMessage?: {
    threadId: string;
    agentName: string;
    nodeName: string;
    runId: string;
    active: boolean;
    running: boolean;
    role: Role;
    state: string;
  } | null;
  imageMessage?: { format: string; bytes: string; role: Role; parentMessageId?: string | null } | null;
}

const MESSAGE_FIELDS = [
  'textMessage',
  'actionExecutionMessage',
  'resultMessage',
  'agentStateMessage',
  'imageMessage',
] as const;

/** Converts the client's messages, rejecting any that set none or several of the message fields. */
export function messagesFromInput(inputs: readonly MessageInputLike[]): Message[] {
  return inputs.map((input, index) => {
    const set = MESSAGE_FIELDS.filter((field) => input[field] != null);
    if (set.length !== 1) {
      throw new BadUserInputError(
        `messages[${index}] (id "${input.id}") must set exactly one of ${MESSAGE_FIELDS.join(', ')}; it sets ${
          set.length === 0 ? 'none' : set.join(' and ')
        }.`,
        { field: `messages[${index}]` },
      );
    }
    if (input.textMessage) {
      const m = input.textMessage;
      return { kind: 'text', id: input.id, role: m.role, content: m.content, parentMessageId: m.parentMessageId };
    }
    if (input.actionExecutionMessage) {
      const m = input.actionExecutionMessage;
      return { kind: 'actionExecution', id: input.id, name: m.name, arguments: m.arguments, parentMessageId: m.parentMessageId };
    }
    if (input.resultMessage) {
      const m = input.resultMessage;
      return { kind: 'result', id: input.id, actionExecutionId: m.actionExecutionId, actionName: m.actionName, result: m.result };
    }
    if (input.imageMessage) {
      const m = input.imageMessage;
      return { kind: 'image', id: input.id, role: m.role, format: m.format, bytes: m.bytes, parentMessageId: m.parentMessageId };
    }
    const m = input.agentStateMessage!;
    return { kind: 'agentState', id: input.id, ...m };
  });
}

/** Parses a frontend action's `jsonSchema`, which must be a JSON object. */
export function parseJsonSchema(jsonSchema: string, where: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(jsonSchema);
  } catch {
    throw new BadUserInputError(`${where}.jsonSchema is not valid JSON.`, { field: `${where}.jsonSchema` });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new BadUserInputError(`${where}.jsonSchema must be a JSON object (a JSON Schema).`, {
      field: `${where}.jsonSchema`,
    });
  }
  return parsed as Record<string, unknown>;
}

/**
 * Puts the frontend's readable context (GenerateCopilotResponseInput.context) in front of the model
 * as one system message, after the conversation's leading system messages.
 */
export function withContext(messages: Message[], context: readonly { description: string; value: string }[]): Message[] {
  if (context.length === 0) return messages;
  const content = `Context from the application:\n${context.map((entry) => `- ${entry.description}: ${entry.value}`).join('\n')}`;
  const firstNonSystem = messages.findIndex((m) => !(m.kind === 'text' && (m.role === 'system' || m.role === 'developer')));
  const at = firstNonSystem === -1 ? messages.length : firstNonSystem;
  return [...messages.slice(0, at), { kind: 'text', id: 'gateway-context', role: 'system', content }, ...messages.slice(at)];
}
