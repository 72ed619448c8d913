import type { AssistantMessage, Message as AgUiMessage, ResumeEntry, ToolCall } from '@ag-ui/core';
import type { Message, MetaEventInput } from '../core/messages.js';
import { UnreachableCaseError } from '../core/errors.js';

/**
 * The conversation as AG-UI messages: text keeps its role; action calls become the `toolCalls` of
 * the assistant message they belong to; results become `tool` messages; images become user messages
 * with an image part; agent state messages are not part of an AG-UI conversation.
 */
export function toAgUiMessages(messages: readonly Message[]): AgUiMessage[] {
  const out: AgUiMessage[] = [];
  const assistants = new Map<string, AssistantMessage>();
  for (const message of messages) {
    switch (message.kind) {
      case 'text': {
        if (message.role === 'tool') break;
        const converted = { id: message.id, role: message.role, content: message.content } as AgUiMessage;
        out.push(converted);
        if (message.role === 'assistant') assistants.set(message.id, converted as AssistantMessage);
        break;
      }
      case 'actionExecution': {
        const call: ToolCall = {
          id: message.id,
          type: 'function',
          function: { name: message.name, arguments: message.arguments },
        };
        const parentId = message.parentMessageId ?? message.id;
        const parent = assistants.get(parentId);
        if (parent) (parent.toolCalls ??= []).push(call);
        else {
          const assistant: AssistantMessage = { id: parentId, role: 'assistant', toolCalls: [call] };
          assistants.set(parentId, assistant);
          out.push(assistant);
        }
        break;
      }
      case 'result':
        out.push({ id: message.id, role: 'tool', toolCallId: message.actionExecutionId, content: message.result });
        break;
      case 'image':
        out.push({
          id: message.id,
          role: 'user',
          content: [
            { type: 'image', source: { type: 'data', value: message.bytes, mimeType: `image/${message.format}` } },
          ],
        });
        break;
      case 'agentState':
        break;
      default:
        // Every kind of message has its case: a new one does not compile until it has.
        throw new UnreachableCaseError(message);
    }
  }
  return out;
}

/**
 * A client's interrupt answers in both of AG-UI's forms: the `command.resume` LangGraph-based
 * agents read from `forwardedProps` (the first answer, as CopilotKit's runtime sends it), and AG-UI's
 * `resume` entries, for interrupts whose value carries the `id` of an AG-UI interrupt.
 */
export function resumeOf(events: readonly MetaEventInput[]): { command?: { resume: unknown }; resume?: ResumeEntry[] } {
  const answered = events.filter((event) => event.response != null);
  if (answered.length === 0) return {};
  const resume: ResumeEntry[] = [];
  for (const event of answered) {
    const interrupt = parse(event.value);
    if (interrupt && typeof interrupt === 'object' && typeof (interrupt as { id?: unknown }).id === 'string') {
      // A cancelled interrupt (the client's answer says so) carries no payload.
      const cancelled = (interrupt as { status?: unknown }).status === 'cancelled';
      resume.push(
        cancelled
          ? { interruptId: (interrupt as { id: string }).id, status: 'cancelled' }
          : {
              interruptId: (interrupt as { id: string }).id,
              status: 'resolved',
              payload: parse(event.response!) ?? event.response,
            },
      );
    }
  }
  // As CopilotKit's runtime sends it: the answer as the client wrote it (a string).
  return { command: { resume: answered[0].response }, ...(resume.length ? { resume } : {}) };
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
