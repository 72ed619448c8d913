import type {
  ContentBlockParam,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolChoice,
  ToolResultBlockParam,
  ToolUseBlockParam,
} from '@anthropic-ai/sdk/resources/messages/messages';
import { UnreachableCaseError } from '../core/errors.js';
import type { Message, ToolDefinition } from '../core/messages.js';
import type { ForwardedParameters } from './adapter.js';
import { callArgsObject, imageMimeType } from './conversion.js';

/**
 * Converts the conversation (already checked: every call has one result, right after it) to the
 * Messages API's shape.
 * - System and developer messages become the `system` prompt, joined in order (the API takes no
 *   system turns); the frontend's context is one of them.
 * - Text keeps its role; consecutive messages of one role share a turn (the API alternates roles).
 * - Action executions become `tool_use` blocks of an assistant turn, calls of one assistant message
 *   (same parent) in the same turn; their results become `tool_result` blocks, first in the next
 *   user turn, as the API requires.
 * - Images become base64 `image` blocks of a user turn; agent state messages are not for the model.
 * - Empty text is left out: the API refuses empty text blocks.
 */
export function toAnthropicMessages(messages: readonly Message[]): {
  system: string | undefined;
  messages: MessageParam[];
} {
  const system: string[] = [];
  const turns: { role: 'user' | 'assistant'; content: ContentBlockParam[] }[] = [];
  const last = () => turns[turns.length - 1];
  const push = (role: 'user' | 'assistant', block: ContentBlockParam) => {
    const turn = last();
    if (turn?.role === role) turn.content.push(block);
    else turns.push({ role, content: [block] });
  };
  // The assistant turn holding the calls of one assistant message, and the user turn of their results.
  let calls:
    | {
        parent: string | null | undefined;
        callTurn: (typeof turns)[number];
        resultTurn: (typeof turns)[number] | undefined;
      }
    | undefined;

  for (const message of messages) {
    switch (message.kind) {
      case 'text': {
        if (message.role === 'system' || message.role === 'developer') {
          if (message.content) system.push(message.content);
          break;
        }
        calls = undefined;
        // The API refuses text blocks that are empty or only whitespace.
        if (!message.content.trim()) break;
        const text: TextBlockParam = { type: 'text', text: message.content };
        push(message.role === 'assistant' ? 'assistant' : 'user', text);
        break;
      }
      case 'image':
        calls = undefined;
        push('user', {
          type: 'image',
          source: { type: 'base64', media_type: imageMimeType(message.format) as MediaType, data: message.bytes },
        });
        break;
      case 'actionExecution': {
        const block: ToolUseBlockParam = {
          type: 'tool_use',
          id: message.id,
          name: message.name,
          input: callArgsObject(message.arguments),
        };
        const sameMessage =
          calls &&
          message.parentMessageId != null &&
          message.parentMessageId === calls.parent &&
          calls.resultTurn === last();
        if (sameMessage && calls) {
          calls.callTurn.content.push(block);
        } else {
          push('assistant', block);
          calls = { parent: message.parentMessageId, callTurn: last(), resultTurn: undefined };
        }
        break;
      }
      case 'result': {
        const block: ToolResultBlockParam = {
          type: 'tool_result',
          tool_use_id: message.actionExecutionId,
          content: message.result,
        };
        if (calls?.resultTurn) {
          // Results first in their turn: before any text a user message added after them.
          const firstText = calls.resultTurn.content.findIndex((b) => b.type !== 'tool_result');
          if (firstText === -1) calls.resultTurn.content.push(block);
          else calls.resultTurn.content.splice(firstText, 0, block);
        } else {
          turns.push({ role: 'user', content: [block] });
          if (calls) calls.resultTurn = last();
        }
        break;
      }
      case 'agentState':
        break;
      default:
        // Every kind of message has its case: a new one does not compile until it has.
        throw new UnreachableCaseError(message);
    }
  }
  return { system: system.length ? system.join('\n\n') : undefined, messages: turns };
}

export function toAnthropicTools(tools: readonly ToolDefinition[]): Tool[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: { type: 'object', ...tool.parameters } as Tool['input_schema'],
  }));
}

export function toAnthropicToolChoice(parameters: ForwardedParameters): ToolChoice | undefined {
  switch (parameters.toolChoice) {
    case 'auto':
      return { type: 'auto' };
    case 'none':
      return { type: 'none' };
    case 'required':
      return { type: 'any' };
    case 'function':
      return parameters.toolChoiceFunctionName ? { type: 'tool', name: parameters.toolChoiceFunctionName } : undefined;
    default:
      return undefined;
  }
}

type MediaType = 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp';
