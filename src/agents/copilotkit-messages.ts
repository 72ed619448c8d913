import type { Message, MetaEventInput } from '../core/messages.js';
import { UnreachableCaseError } from '../core/errors.js';

/**
 * CopilotKit's JSON message forms: what a remote endpoint's `/agents/execute` receives (the
 * runtime's message objects), and what agents send back with interrupts and saved state (the
 * forms CopilotKit's Python SDK writes).
 */

/** The conversation as CopilotKit's runtime serialises it for `/agents/execute`. */
export function toRuntimeMessages(messages: readonly Message[]): Record<string, unknown>[] {
  const createdAt = new Date().toISOString();
  return messages.map((message) => {
    switch (message.kind) {
      case 'text':
        return withParent(
          { id: message.id, createdAt, type: 'TextMessage', content: message.content, role: message.role },
          message.parentMessageId,
        );
      case 'actionExecution':
        return withParent(
          {
            id: message.id,
            createdAt,
            type: 'ActionExecutionMessage',
            name: message.name,
            arguments: parseObject(message.arguments),
          },
          message.parentMessageId,
        );
      case 'result':
        return {
          id: message.id,
          createdAt,
          type: 'ResultMessage',
          actionExecutionId: message.actionExecutionId,
          actionName: message.actionName,
          result: message.result,
        };
      case 'image':
        return withParent(
          {
            id: message.id,
            createdAt,
            type: 'ImageMessage',
            format: message.format,
            bytes: message.bytes,
            role: message.role,
          },
          message.parentMessageId,
        );
      case 'agentState':
        return {
          id: message.id,
          createdAt,
          type: 'AgentStateMessage',
          threadId: message.threadId,
          agentName: message.agentName,
          nodeName: message.nodeName,
          runId: message.runId,
          active: message.active,
          role: message.role,
          state: parseObject(message.state),
          running: message.running,
        };
      default:
        // Every kind of message has its case: a new one does not compile until it has.
        throw new UnreachableCaseError(message);
    }
  });
}

/** A client's interrupt answers, as `/agents/execute` receives them. */
export function toRuntimeMetaEvents(events: readonly MetaEventInput[]): Record<string, unknown>[] {
  return events.map((event) => ({
    name: event.name,
    value: event.value,
    ...(event.response != null ? { response: event.response } : {}),
    ...(event.messages ? { messages: toRuntimeMessages(event.messages) } : {}),
  }));
}

/**
 * Messages an agent sends in CopilotKit's JSON form (`{role, content, id}`, `{id, name, arguments}`,
 * `{actionExecutionId, actionName, result, id}`, or the runtime's typed objects) as the gateway's.
 * Entries that are none of these are skipped.
 */
export function messagesFromCopilotKitJson(list: unknown): Message[] {
  if (!Array.isArray(list)) return [];
  const messages: Message[] = [];
  list.forEach((entry, index) => {
    if (entry === null || typeof entry !== 'object') return;
    const m = entry as Record<string, unknown>;
    const id = typeof m.id === 'string' ? m.id : `message-${index}`;
    const parentMessageId = typeof m.parentMessageId === 'string' ? m.parentMessageId : null;
    if (typeof m.actionExecutionId === 'string') {
      messages.push({
        kind: 'result',
        id,
        actionExecutionId: m.actionExecutionId,
        actionName: String(m.actionName ?? ''),
        result: asText(m.result),
      });
    } else if ('arguments' in m && typeof m.name === 'string') {
      messages.push({ kind: 'actionExecution', id, name: m.name, arguments: asText(m.arguments), parentMessageId });
    } else if (
      'content' in m &&
      typeof m.role === 'string' &&
      ['user', 'assistant', 'system', 'tool', 'developer'].includes(m.role)
    ) {
      messages.push({ kind: 'text', id, role: m.role as 'user', content: asText(m.content), parentMessageId });
    }
  });
  return messages;
}

function withParent(
  value: Record<string, unknown>,
  parentMessageId: string | null | undefined,
): Record<string, unknown> {
  return parentMessageId ? { ...value, parentMessageId } : value;
}

function parseObject(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return {};
  }
}

/** A string as it is, anything else as JSON. */
export function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  return JSON.stringify(value) ?? '';
}

/**
 * The gateway's messages in CopilotKit's JSON form, as `loadAgentState` returns them (the inverse of
 * messagesFromCopilotKitJson): texts (not system ones), action calls with their arguments as an
 * object, results. Images and agent state messages are left out.
 */
export function messagesToCopilotKitJson(messages: readonly Message[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const message of messages) {
    switch (message.kind) {
      case 'text':
        if (message.role === 'system' || message.role === 'developer') break;
        out.push(withParent({ id: message.id, role: message.role, content: message.content }, message.parentMessageId));
        break;
      case 'actionExecution':
        out.push(
          withParent(
            { id: message.id, name: message.name, arguments: parseObject(message.arguments) },
            message.parentMessageId,
          ),
        );
        break;
      case 'result':
        out.push({
          id: message.id,
          actionExecutionId: message.actionExecutionId,
          actionName: message.actionName,
          result: message.result,
        });
        break;
      case 'image':
      case 'agentState':
        break;
      default:
        // Every kind of message has its case: a new one does not compile until it has.
        throw new UnreachableCaseError(message);
    }
  }
  return out;
}
