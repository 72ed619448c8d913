import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionContentPart,
  ChatCompletionMessageParam,
  ChatCompletionTool,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import { UnreachableCaseError } from '../core/errors.js';
import type { Message, ToolDefinition } from '../core/messages.js';
import type { ForwardedParameters } from './adapter.js';

/**
 * Converts the conversation to Chat Completions messages.
 * - Text keeps its role (`system` stays `system`, which every OpenAI-compatible server accepts).
 * - Action executions become assistant `tool_calls`, merged into the assistant message they belong to.
 * - Results become `tool` messages, placed right after their call, verbatim.
 * - Calls without a result and results without a call are dropped: the API rejects either.
 * - Images become `image_url` parts with a data URL; agent state messages are not for the model.
 */
export function toChatMessages(messages: readonly Message[]): ChatCompletionMessageParam[] {
  const results = new Map<string, string>();
  for (const message of messages) {
    if (message.kind === 'result') results.set(message.actionExecutionId, message.result);
  }

  const out: ChatCompletionMessageParam[] = [];
  let lastAssistant: { param: ChatCompletionAssistantMessageParam; id: string } | undefined;
  let pendingResults: ChatCompletionMessageParam[] = [];
  const flushResults = () => {
    if (pendingResults.length) out.push(...pendingResults);
    pendingResults = [];
  };

  for (const message of messages) {
    switch (message.kind) {
      case 'text': {
        flushResults();
        const role = message.role === 'tool' ? 'user' : message.role;
        if (role === 'assistant') {
          const param: ChatCompletionAssistantMessageParam = { role: 'assistant', content: message.content };
          out.push(param);
          lastAssistant = { param, id: message.id };
        } else {
          out.push({ role, content: message.content });
          lastAssistant = undefined;
        }
        break;
      }
      case 'actionExecution': {
        const result = results.get(message.id);
        if (result === undefined) break;
        const call = {
          id: message.id,
          type: 'function' as const,
          function: { name: message.name, arguments: message.arguments },
        };
        if (lastAssistant && (message.parentMessageId == null || message.parentMessageId === lastAssistant.id)) {
          (lastAssistant.param.tool_calls ??= []).push(call);
        } else {
          flushResults();
          const param: ChatCompletionAssistantMessageParam = { role: 'assistant', content: null, tool_calls: [call] };
          out.push(param);
          lastAssistant = { param, id: message.parentMessageId ?? message.id };
        }
        pendingResults.push({ role: 'tool', tool_call_id: message.id, content: result });
        results.delete(message.id);
        break;
      }
      case 'image': {
        flushResults();
        const part: ChatCompletionContentPart = {
          type: 'image_url',
          image_url: { url: `data:image/${message.format};base64,${message.bytes}` },
        };
        out.push({ role: 'user', content: [part] });
        lastAssistant = undefined;
        break;
      }
      case 'result':
      case 'agentState':
        break;
      default:
        // Every kind of message has its case: a new one does not compile until it has.
        throw new UnreachableCaseError(message);
    }
  }
  flushResults();
  return out;
}

export function toChatTools(tools: readonly ToolDefinition[]): ChatCompletionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

export function toToolChoice(parameters: ForwardedParameters): ChatCompletionToolChoiceOption | undefined {
  switch (parameters.toolChoice) {
    case 'auto':
    case 'none':
    case 'required':
      return parameters.toolChoice;
    case 'function':
      return parameters.toolChoiceFunctionName
        ? { type: 'function', function: { name: parameters.toolChoiceFunctionName } }
        : undefined;
    default:
      return undefined;
  }
}
