import type { Content, FunctionCallingConfigMode, FunctionDeclaration, Part, ToolConfig } from '@google/genai';
import { UnreachableCaseError } from '../core/errors.js';
import type { Message, ToolDefinition } from '../core/messages.js';
import type { ForwardedParameters } from './adapter.js';
import { callArgsObject, imageMimeType } from './conversion.js';

/**
 * Converts the conversation (already checked: every call has one result, right after it) to Gemini's
 * `contents`.
 * - System and developer messages become the `systemInstruction`, joined in order.
 * - Text keeps its role (`assistant` is `model`); consecutive messages of one role share a content.
 * - Action executions become `functionCall` parts of a model content, the calls of one assistant
 *   message together, each with the thought signature Gemini gave it when this gateway saw it
 *   (`signatures`); results become `functionResponse` parts (`{response: {result}}`) of the next user
 *   content, in the same order.
 * - Images become `inlineData` parts; agent state messages are not for the model; empty text is left out.
 */
const SKIP_SIGNATURE = 'skip_thought_signature_validator';

export function toGeminiContents(
  messages: readonly Message[],
  signatures?: ReadonlyMap<string, string>,
): { systemInstruction: string | undefined; contents: Content[] } {
  const system: string[] = [];
  const contents: (Content & { parts: Part[] })[] = [];
  const names = new Map<string, string>();
  const last = () => contents[contents.length - 1];
  const push = (role: 'user' | 'model', part: Part) => {
    const content = last();
    if (content?.role === role) content.parts.push(part);
    else contents.push({ role, parts: [part] });
  };
  let calls:
    | {
        parent: string | null | undefined;
        callContent: Content & { parts: Part[] };
        resultContent: (Content & { parts: Part[] }) | undefined;
      }
    | undefined;

  for (const message of messages) {
    switch (message.kind) {
      case 'text':
        if (message.role === 'system' || message.role === 'developer') {
          if (message.content) system.push(message.content);
          break;
        }
        calls = undefined;
        if (message.content) push(message.role === 'assistant' ? 'model' : 'user', { text: message.content });
        break;
      case 'image':
        calls = undefined;
        push('user', { inlineData: { mimeType: imageMimeType(message.format), data: message.bytes } });
        break;
      case 'actionExecution': {
        names.set(message.id, message.name);
        // A call this process did not see Gemini make (another replica, a restart, another model) has no
        // signature: Gemini's documented placeholder tells it to skip the check rather than refuse.
        const signature = signatures?.get(message.id) ?? SKIP_SIGNATURE;
        const part: Part = {
          functionCall: { id: message.id, name: message.name, args: callArgsObject(message.arguments) },
          thoughtSignature: signature,
        };
        if (
          calls &&
          message.parentMessageId != null &&
          message.parentMessageId === calls.parent &&
          calls.resultContent === last()
        ) {
          calls.callContent.parts.push(part);
        } else {
          push('model', part);
          calls = { parent: message.parentMessageId, callContent: last(), resultContent: undefined };
        }
        break;
      }
      case 'result': {
        const part: Part = {
          functionResponse: {
            id: message.actionExecutionId,
            name: names.get(message.actionExecutionId) ?? message.actionName,
            response: { result: message.result },
          },
        };
        if (calls?.resultContent) calls.resultContent.parts.push(part);
        else {
          contents.push({ role: 'user', parts: [part] });
          if (calls) calls.resultContent = last();
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
  return { systemInstruction: system.length ? system.join('\n\n') : undefined, contents };
}

export function toGeminiFunctions(tools: readonly ToolDefinition[]): FunctionDeclaration[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    parametersJsonSchema: { type: 'object', ...tool.parameters },
  }));
}

// The SDK's enum values, as strings: importing the enum would load the SDK with this module.
export function toGeminiToolConfig(parameters: ForwardedParameters): ToolConfig | undefined {
  switch (parameters.toolChoice) {
    case 'auto':
      return { functionCallingConfig: { mode: 'AUTO' as FunctionCallingConfigMode } };
    case 'none':
      return { functionCallingConfig: { mode: 'NONE' as FunctionCallingConfigMode } };
    case 'required':
      return { functionCallingConfig: { mode: 'ANY' as FunctionCallingConfigMode } };
    case 'function':
      return parameters.toolChoiceFunctionName
        ? {
            functionCallingConfig: {
              mode: 'ANY' as FunctionCallingConfigMode,
              allowedFunctionNames: [parameters.toolChoiceFunctionName],
            },
          }
        : undefined;
    default:
      return undefined;
  }
}
